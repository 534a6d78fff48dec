"""Where a site may be written: a new or empty folder, or an earlier site of the viewer's.

The site replaces its folder as a unit, so the folder must hold nothing else: the viewer writes a
marker file (`MARKER`) into every site and replaces only a folder holding it; any other folder with
entries is refused, as is the run folder itself, any folder holding it, a link, and a folder that
holds a run's results (even with a marker), so no file of the user's is ever removed. A site built
before the marker existed is known by the run's manifest, which lists the site among its outputs. The
staging folders older viewers' killed builds left beside the site are removed (`remove_old_stages`).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from engine.contract import ConfigError, shown
from engine.contract.staged import MANIFEST, listed_outputs, old_site_stage

MARKER = ".m3bench-viewer.json"
"""The file every site holds: {"site": "m3bench-viewer", "run": the run folder it shows}."""
_RESULTS = "results_eval.json"


def marker(run_dir: Path) -> dict[str, str]:
    """The marker file's content for a site of this run."""
    return {"site": "m3bench-viewer", "run": str(Path(run_dir).resolve())}


def _holds_run(folder: Path) -> bool:
    """Whether a folder holds a scoring run's outputs (its manifest, or results up to two levels down)."""
    return ((folder / MANIFEST).exists() or (folder / _RESULTS).exists()
            or any(folder.glob(f"*/{_RESULTS}")) or any(folder.glob(f"*/*/{_RESULTS}")))


def _is_own_site(folder: Path) -> bool:
    try:
        return json.loads((folder / MARKER).read_text(encoding="utf-8")).get("site") == "m3bench-viewer"
    except (OSError, ValueError, AttributeError):
        return False


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
    if entries and not _is_own_site(target) and not _earlier_site(run, target):
        listed = ", ".join(shown(e) for e in entries[:3]) + (", ..." if len(entries) > 3 else "")
        raise ConfigError(f"{where}: holds {len(entries)} entr{'y' if len(entries) == 1 else 'ies'} the viewer did "
                          f"not write ({listed}) and no {MARKER}; the site replaces its folder as a unit, so give "
                          "a new or empty folder, or an earlier site")
