"""Writing the viewer: a static site in the run folder that opens from the file system.

``index.html`` carries the leaderboard and the task index inline; the reference steps
(``data/gt.js``) and each model's tasks (``data/m/<slug>.js``) are loaded with a ``<script>`` tag when
a view needs them (``fetch`` of ``file://`` is blocked in browsers). The page's script and styles are
``viewer.js`` and ``viewer.css`` of this package; the report plots are copied beside them, and the
task images as small JPEG thumbnails. The site is built in a folder beside its target and renamed
into place, so an interrupted build leaves the previous site whole.
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from engine.contract import atomic_write_json, atomic_write_text
from engine.contract.staged import MANIFEST, swap_in
from engine.viewer.data import Run, board, model_data, read_run, reference_data, slug, task_index

SITE_DIR = "viewer"
STATIC = Path(__file__).with_name("static")
THUMBNAIL = 480  # longest side of a task image in the site, in pixels


def js_literal(value: Any) -> str:
    """Compact JSON that is safe inside a <script> element."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("</", "<\\/").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _data_script(kind: str, key: str, value: Any) -> str:
    return f"M3V.put({js_literal(kind)},{js_literal(key)},{js_literal(value)});\n"


def _thumbnails(run: Run, images_dir: Path | None, out: Path) -> dict[str, str]:
    """Thumbnails of the task images found (beside the reference file, or in images_dir): id -> site path."""
    from PIL import Image, UnidentifiedImageError

    found: dict[str, str] = {}
    for reference_files, tasks in run.gt.items():
        base = images_dir or reference_files[0].parent
        for tid, t in tasks.items():
            image = t.raw.get("image")
            if tid in found or not isinstance(image, str) or not (base / image).is_file():
                continue
            target = out / "img" / f"{len(found)}.jpg"
            target.parent.mkdir(exist_ok=True)
            try:
                with Image.open(base / image) as im:
                    im.thumbnail((THUMBNAIL, THUMBNAIL))
                    im.convert("RGB").save(target, "JPEG", quality=80)
            except (OSError, UnidentifiedImageError, ValueError):
                continue
            found[tid] = f"img/{target.name}"
    return found


def _note_in_manifest(run_dir: Path, site: Path) -> None:
    """List the site among a scoring run's outputs, so that scoring into the folder again replaces it."""
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
    run = read_run(run_dir)
    slugs = {r.name: slug(i, r.name) for i, r in enumerate(run.results)}
    stage = out.with_name(f".{out.name}.building-{os.getpid()}")
    shutil.rmtree(stage, ignore_errors=True)
    (stage / "data" / "m").mkdir(parents=True)
    try:
        images = _thumbnails(run, images_dir, stage)
        atomic_write_text(stage / "data" / "gt.js", _data_script("gt", "", reference_data(run, images)))
        for result in run.results:
            atomic_write_text(stage / "data" / "m" / f"{slugs[result.name]}.js",
                              _data_script("model", slugs[result.name], model_data(run, result)))
        plots = []
        for png in sorted(run_dir.glob("*.png")):
            (stage / "plots").mkdir(exist_ok=True)
            shutil.copyfile(png, stage / "plots" / png.name)
            plots.append(f"plots/{png.name}")
        for name in ("viewer.js", "viewer.css"):
            shutil.copyfile(STATIC / name, stage / name)
        site = {"title": run_dir.resolve().name, "built": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                "board": board(run, slugs), "index": task_index(run, slugs), "plots": plots,
                "models": {slugs[r.name]: r.name for r in run.results}}
        env = Environment(loader=PackageLoader("engine.viewer", "templates"), autoescape=select_autoescape())
        env.filters["js"] = js_literal
        html = env.get_template("index.html.j2").render(site=site)
        atomic_write_text(stage / "index.html", html)
        swap_in(stage, out)  # the previous site, if any, ends up at stage's path, removed below
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    _note_in_manifest(run_dir, out)
    return out / "index.html"
