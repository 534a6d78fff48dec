"""Writing the viewer: a static site in the run folder that opens from the file system.

``index.html`` carries the leaderboard and the task index inline; the reference steps
(``data/gt.js``) and each model's tasks (``data/m/<slug>.js``) are loaded with a ``<script>`` tag when
a view needs them (``fetch`` of ``file://`` is blocked in browsers). The page's script and styles are
``dom.js``, ``core.js``, ``blocks.js``, ``task.js``, ``trials.js``, ``viewer.js`` and ``viewer.css`` of this package
(`SCRIPTS`, loaded in that order); a repeated run's trials summary (`engine.viewer.trials`)
is inline too; the report plots are copied beside them, and the
task images as small JPEG thumbnails (`engine.viewer.images`); no other file is copied. Every text
is escaped by the rule of `engine.viewer.text`. The site is built in a staging folder beside its
target and swapped into place, so an interrupted build leaves the previous site whole; the target
must be new, empty or an earlier site holding only the files the viewer wrote, which its marker lists
(`engine.viewer.folder`).
"""

from __future__ import annotations

import json
import logging
import shutil
from datetime import datetime, timezone
from pathlib import Path

from jinja2 import Environment, PackageLoader

from engine.contract import atomic_write_json, atomic_write_text
from engine.contract.staged import MANIFEST, staging, swap_in
from engine.viewer.board import board
from engine.viewer.data import ModelData, Run, model_data, read_run, reference_data, slug, task_index
from engine.viewer.folder import MARKER, check_site_folder, marker, remove_old_stages, site_files
from engine.viewer.images import task_images
from engine.viewer.media import SiteMedia
from engine.viewer.text import js_literal
from engine.viewer.transcript import model_transcripts
from engine.viewer.trials import model_counts, trial_of, trials_data

SITE_DIR = "viewer"
STATIC = Path(__file__).with_name("static")
SCRIPTS = ("dom.js", "core.js", "blocks.js", "transcript.js", "task.js", "trials.js", "viewer.js")
"""The page's scripts, in the order the page loads them (each uses what the ones before define)."""
CHUNK = 256_000
"""Characters of transcripts per data file (a site of thousands of small ones keeps few files)."""

log = logging.getLogger(__name__)


def _data_script(kind: str, key: str, value: object) -> str:
    return f"M3V.put({js_literal(kind)},{js_literal(key)},{js_literal(value)});\n"


def _write_transcripts(folder: Path, key: str, data: ModelData, transcripts: dict[str, dict[str, object]]) -> None:
    """The model's transcripts, in its tasks' order, as data/x/<model>/<n>.js files of about CHUNK characters
    each (a long one alone; loaded when a task's page opens); each task's ``x`` says where its own is:
    [n, its place in the file]."""
    chunk: list[str] = []
    size, n = 0, 0

    def flush() -> None:
        nonlocal chunk, size, n
        if chunk:
            folder.mkdir(parents=True, exist_ok=True)
            text = f"M3V.put({js_literal('x')},{js_literal(f'{key}/{n}')},[{','.join(chunk)}]);\n"
            (folder / f"{n}.js").write_text(text, encoding="utf-8")
            chunk, size, n = [], 0, n + 1

    for tid in data["order"]:
        if tid in transcripts:
            text = js_literal(transcripts[tid])
            if chunk and size + len(text) > CHUNK:
                flush()
            data["tasks"][tid]["x"] = [n, len(chunk)]
            chunk.append(text)
            size += len(text)
    flush()


def _plots(run: Run, stage: Path) -> list[str]:
    """Copy the run's report plots (PNG files of the run folder itself) into the site; their names."""
    names = []
    folder = run.folder.resolve()
    for png in sorted(run.folder.glob("*.png")):
        if not png.is_file() or png.resolve().parent != folder:
            continue  # a link to a file elsewhere is not the run's
        (stage / "plots").mkdir(exist_ok=True)
        shutil.copyfile(png, stage / "plots" / png.name)
        names.append(png.name)
    return names


def _note_in_manifest(run_dir: Path, site: Path) -> None:
    """List the site among a scoring run's outputs (a site without its marker is then known as the run's);
    scoring into the folder again keeps a site as it is (engine.contract.staged)."""
    manifest = run_dir / MANIFEST
    if site.parent.resolve() != run_dir.resolve() or not manifest.is_file():
        return
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    outputs = data.get("outputs") if isinstance(data, dict) else None
    if isinstance(outputs, list) and site.name not in outputs:
        atomic_write_json(manifest, {**data, "outputs": sorted([*outputs, site.name])})


def build_site(run_dir: Path, out: Path | None = None, images_dir: Path | None = None) -> Path:
    """Build the viewer of a finished run into `out` (default RUN_DIR/viewer); returns its index.html."""
    run_dir = Path(run_dir)
    out = Path(out) if out is not None else run_dir / SITE_DIR
    check_site_folder(run_dir, out)
    run = read_run(run_dir)
    slugs = {r.name: slug(i, r.name) for i, r in enumerate(run.results)}
    remove_old_stages(out)
    with staging(out) as stage:
        (stage / "data" / "m").mkdir(parents=True)
        images = task_images(run, images_dir, stage)
        atomic_write_text(stage / "data" / "gt.js", _data_script("gt", "", reference_data(run, images)))
        media = SiteMedia(stage)
        for result in run.results:
            key, data = slugs[result.name], model_data(run, result)
            _write_transcripts(stage / "data" / "x" / key, key, data,
                               model_transcripts(run, result, media, images_dir))
            atomic_write_text(stage / "data" / "m" / f"{key}.js", _data_script("model", key, data))
        if media.refused_line():
            log.warning("%s", media.refused_line())
        for name in (*SCRIPTS, "viewer.css"):
            shutil.copyfile(STATIC / name, stage / name)
        leaderboard = board(run, slugs)
        trials = trials_data(run_dir, slugs, leaderboard)
        site = {"title": run_dir.resolve().name, "scripts": SCRIPTS, "counts": model_counts(run, trials),
                "built": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                "board": leaderboard, "index": task_index(run, slugs), "plots": _plots(run, stage),
                "models": {slugs[r.name]: r.name for r in run.results}, "trials": trials, "trial_of": trial_of(trials)}
        env = Environment(loader=PackageLoader("engine.viewer", "templates"), autoescape=True)
        env.filters["js"] = js_literal
        atomic_write_text(stage / "index.html", env.get_template("index.html.j2").render(site=site))
        atomic_write_json(stage / MARKER, marker(run_dir, site_files(stage)))
        check_site_folder(run_dir, out)  # still new, empty or an earlier site
        swap_in(stage, out)  # the previous site, if any, ends up at stage's path and is removed with it
    _note_in_manifest(run_dir, out)
    return out / "index.html"
