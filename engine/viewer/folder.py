"""Where a site may be written: a new or empty folder, or an earlier site of the viewer's holding only
files the viewer wrote.

The site replaces its folder as a unit, so the folder must hold nothing else. The viewer writes a marker
file (`MARKER`) into every site, listing every file it wrote with its size and SHA-256; a rebuild replaces
a folder only when each of its entries is one of those files, unchanged (or a folder on the way to one):
a file a user added or edited there, or any file beside a marker copied into another folder, makes it
refuse the folder in one line naming those files, so no file of the user's is ever removed. The marker of
an earlier build lists no files; such a site, and a site built before the marker existed (known by the
run's manifest, which lists the site among its outputs), is replaced only when every file has a name of
the site's layout (`SITE_LAYOUT`). Refused as well: any other folder with entries, the run folder itself,
any folder holding it, a link, and a folder that holds a run's results (even with a marker). The staging
folders older viewers' killed builds left beside the site are removed (`remove_old_stages`).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath
from typing import TypedDict

from engine.contract import ConfigError, JsonObject, JsonValue, file_digest, shown
from engine.contract.staged import MANIFEST, SITE_MARKER, listed_outputs, old_site_stage

MARKER = SITE_MARKER
"""The file every site holds: {"site": "m3bench-viewer", "run": the run folder it shows, "files": {relative
path: {"size": bytes, "sha256": hex}} of every other file the viewer wrote into it}."""
SITE_LAYOUT = ("index.html", "dom.js", "core.js", "blocks.js", "transcript.js", "task.js", "trials.js", "viewer.js",
               "viewer.css", MARKER, "data/gt.js", "data/m/*.js", "data/x/*/*.js", "plots/*.png", "img/*.jpg",
               "media/*.png", "media/*.jpg")
"""The names of the files a site holds (the patterns match one path segment each): what an earlier site
whose marker lists no files may hold to be replaced."""
_RESULTS = "results_eval.json"


def _walk(folder: Path) -> Iterator[tuple[str, Path, bool]]:
    """(relative path, path, whether it is a folder one may look into) of every entry under a folder,
    links not followed (a link is an entry of its own, never a folder)."""
    for root, dirs, files in os.walk(folder):
        for name in sorted(dirs + files):
            path = Path(root) / name
            yield path.relative_to(folder).as_posix(), path, name in dirs and not path.is_symlink()


class SiteFile(TypedDict):
    """A file the viewer wrote into a site, as its marker records it."""

    size: int
    sha256: str


class Marker(TypedDict):
    """The marker file's content (`MARKER`)."""

    site: str
    run: str
    files: dict[str, SiteFile]


def site_files(site: Path) -> dict[str, SiteFile]:
    """{relative path: {size, sha256}} of every file of a site being built, its marker left out."""
    return {rel: {"size": path.stat().st_size, "sha256": file_digest(path)}
            for rel, path, is_dir in _walk(site) if not is_dir and rel != MARKER}


def marker(run_dir: Path, files: dict[str, SiteFile]) -> Marker:
    """The marker file's content for a site of this run holding `files` (`site_files`)."""
    return {"site": "m3bench-viewer", "run": str(Path(run_dir).resolve()), "files": files}


def _in_layout(rel: str, is_dir: bool) -> bool:
    parts = PurePosixPath(rel).parts
    for pattern in SITE_LAYOUT:
        wanted = PurePosixPath(pattern).parts
        if is_dir and len(parts) < len(wanted) and parts == wanted[:len(parts)]:
            return True
        if not is_dir and len(parts) == len(wanted) and all(map(fnmatchcase, parts, wanted)):
            return True
    return False


def _same(path: Path, recorded: JsonValue) -> bool:
    """Whether a file is the one the marker records (a plain file of that size and SHA-256)."""
    if not isinstance(recorded, dict) or path.is_symlink() or not path.is_file():
        return False
    try:
        return path.stat().st_size == recorded.get("size") and file_digest(path) == recorded.get("sha256")
    except OSError:
        return False


def not_written(folder: Path, files: JsonObject | None) -> list[str]:
    """The entries of a site folder the viewer did not write: with the marker's `files`, every file not
    listed or changed since, and every folder that holds no listed file; without (`files` None: an
    earlier build's site), every entry outside the site's layout, and every link."""
    folders = {str(PurePosixPath(rel).parent) for rel in files or {}}
    ancestors = {str(p) for rel in folders for p in (PurePosixPath(rel), *PurePosixPath(rel).parents)}
    out = []
    for rel, path, is_dir in _walk(folder):
        if files is None:
            mine = not path.is_symlink() and _in_layout(rel, is_dir)
        elif is_dir:
            mine = rel in ancestors
        else:
            mine = rel == MARKER or _same(path, files.get(rel))
        if not mine:
            out.append(rel)
    return out


def _holds_run(folder: Path) -> bool:
    """Whether a folder holds a scoring run's outputs (its manifest, or results up to two levels down)."""
    return ((folder / MANIFEST).exists() or (folder / _RESULTS).exists()
            or any(folder.glob(f"*/{_RESULTS}")) or any(folder.glob(f"*/*/{_RESULTS}")))


def _own_marker(folder: Path) -> JsonObject | None:
    """The folder's marker when it is the viewer's; None otherwise (read as untrusted JSON: a copied or edited
    marker gives no right to the folder)."""
    try:
        found: JsonValue = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) and found.get("site") == "m3bench-viewer" else None


def _earlier_site(run: Path, target: Path) -> bool:
    """Whether `target` is a site of this run from before the marker file: a folder of the run that
    the run's manifest lists among its outputs (a model's folder of results is refused before this)."""
    return target.parent == run and target.name in listed_outputs(run)


def remove_old_stages(out: Path) -> list[Path]:
    """Remove the staging folders older viewers' killed builds of this site left beside it
    (``.<site>.building-<pid>``, their process gone; engine.contract.staged.old_site_stage) unless one holds a
    run's outputs; the folders removed."""
    parent, name = Path(out).resolve().parent, Path(out).name
    if not parent.is_dir():
        return []
    gone = [p for p in parent.iterdir() if old_site_stage(p, name) and not _holds_run(p)]
    for stage in gone:
        shutil.rmtree(stage)
    return gone


def check_site_folder(run_dir: Path, out: Path) -> None:
    """ConfigError (one line naming the folder) unless the site of run_dir may replace `out`."""
    run, where = Path(run_dir).resolve(), f"--out {shown(str(out))}"
    if out.is_symlink():
        raise ConfigError(f"{where}: is a link; give a folder of the site's own")
    target = out.resolve()
    if target == run or target in run.parents:
        raise ConfigError(f"{where}: holds the run folder {shown(str(run))}; the site replaces its folder as a "
                          "unit, so give a folder of its own (default: RUN_DIR/viewer)")
    if not target.exists():
        return
    if not target.is_dir():
        raise ConfigError(f"{where}: is not a folder")
    if _holds_run(target):
        raise ConfigError(f"{where}: holds a scoring run's outputs; the site replaces its folder as a unit, so "
                          "give a folder of its own")
    entries = sorted(os.listdir(target))
    if not entries:
        return
    own = _own_marker(target)
    if own is None and not _earlier_site(run, target):
        listed = ", ".join(shown(e) for e in entries[:3]) + (", ..." if len(entries) > 3 else "")
        raise ConfigError(f"{where}: holds {len(entries)} entr{'y' if len(entries) == 1 else 'ies'} the viewer did "
                          f"not write ({listed}) and no {MARKER}; the site replaces its folder as a unit, so give "
                          "a new or empty folder, or an earlier site")
    files = own.get("files") if own is not None else None
    foreign = not_written(target, files if isinstance(files, dict) else None)
    if foreign:
        listed = ", ".join(shown(e) for e in foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        raise ConfigError(f"{where}: holds {len(foreign)} entr{'y' if len(foreign) == 1 else 'ies'} the viewer did "
                          f"not write or that changed since ({listed}); the site replaces its folder as a unit and "
                          "removes nothing of yours, so move them out, or give a new or empty folder")
