"""The task images of the site: small JPEG thumbnails of the files the reference's tasks name.

A task's ``image`` is looked up in one folder: ``--images`` when given, else the folder of the
(first) reference file. Only a file inside that folder is used: an ``image`` that is an absolute
path, or that leads outside with ``..`` or a link, is neither copied nor named in the site (one
warning per reference names the first such task), since the reference is data and may come from
anyone.
"""

from __future__ import annotations

import logging
from pathlib import Path

from engine.contract import shown
from engine.viewer.data import Run, scored_ids

log = logging.getLogger(__name__)

THUMBNAIL = 480  # longest side of a task image in the site, in pixels


def _inside(base: Path, name: str) -> bool:
    """Whether `name` names a path inside `base` (after following links), not an absolute one."""
    if Path(name).is_absolute():
        return False
    try:
        return (base / name).resolve().is_relative_to(base.resolve())
    except (OSError, ValueError):
        return False


def _thumbnail(source: Path, target: Path) -> bool:
    """Write the thumbnail of an image file; False when it is no image or cannot be read."""
    from PIL import Image, UnidentifiedImageError

    try:
        if not source.is_file():
            return False
        with Image.open(source) as im:
            im.thumbnail((THUMBNAIL, THUMBNAIL))
            target.parent.mkdir(exist_ok=True)
            im.convert("RGB").save(target, "JPEG", quality=80)
    except (OSError, UnidentifiedImageError, ValueError):
        return False
    return True


def task_images(run: Run, images_dir: Path | None, out: Path) -> dict[str, str | None]:
    """Per scored task whose image the site may show: its thumbnail's path in the site (written under
    out/img/), or None when the file is absent or no image. Tasks without an image, or whose image
    lies outside its folder, have no entry."""
    scored = scored_ids(run)
    shown_images: dict[str, str | None] = {}
    for reference_files, tasks in run.gt.items():
        base = images_dir or reference_files[0].parent
        outside = []
        for tid, t in tasks.items():
            image = t.raw.get("image")
            if tid not in scored or tid in shown_images or not isinstance(image, str) or not image:
                continue
            if not _inside(base, image):
                outside.append(tid)
                continue
            target = out / "img" / f"{len(shown_images)}.jpg"
            shown_images[tid] = f"img/{target.name}" if _thumbnail(base / image, target) else None
        if outside:
            log.warning("%s: id %s: field 'image' %s is not a file inside %s (an absolute path, or one leading "
                        "outside); %d task image(s) like it are left out of the site", reference_files[0],
                        shown(outside[0]), shown(str(tasks[outside[0]].raw["image"])), base, len(outside))
    return shown_images
