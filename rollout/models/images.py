"""Images as a request sends them: read once beneath their folder (no link followed, checked by their
content), then base64, scaled down to a maximum side, memoised."""

from __future__ import annotations

import base64
import hashlib
import io
import threading
from collections import OrderedDict
from pathlib import Path

from engine.contract.beneath import Refused, image_type, read_beneath

IMAGE_LIMIT = 32 * 2 ** 20
"""The largest image file read for a request, in bytes: 32 MiB, more than any provider takes as it is (20 MB)
and room for one that is scaled down first; a larger file is refused unread."""


def read_image(root: str | Path, path: str | Path, limit: int = IMAGE_LIMIT) -> tuple[str, bytes]:
    """(MIME type, bytes) of the image `path` names beneath the folder `root` (relative, or absolute under
    it): opened with no link followed, only a regular file of at most `limit` bytes, read once, and an
    image by its content (engine.contract.beneath); Refused with the reason otherwise."""
    data = read_beneath(root, path, limit)
    mime = image_type(data)
    if mime is None:
        raise Refused("not an image")
    return mime, data


class ImageEncoder:
    """Base64 encodings of image bytes, downscaled to a maximum side, memoised by their digest."""

    def __init__(self, max_side: int | None, capacity: int = 64) -> None:
        self.max_side = max_side or None
        self._memo: OrderedDict[tuple[bytes, str], tuple[str, str]] = OrderedDict()
        self._capacity = capacity
        self._lock = threading.Lock()

    def encode(self, data: bytes, mime: str) -> tuple[str, str]:
        """(mime type, base64 data) of an image's bytes of type `mime`, scaled down to the maximum side
        (thread-safe)."""
        key = (hashlib.sha256(data).digest(), mime)
        with self._lock:
            if key in self._memo:
                self._memo.move_to_end(key)
                return self._memo[key]
        if self.max_side:
            from PIL import Image

            with Image.open(io.BytesIO(data)) as img:
                if max(img.size) > self.max_side:
                    img.thumbnail((self.max_side, self.max_side))
                    out = io.BytesIO()
                    fmt = "JPEG" if mime == "image/jpeg" else "PNG"
                    (img.convert("RGB") if fmt == "JPEG" else img).save(out, fmt)
                    data, mime = out.getvalue(), f"image/{fmt.lower()}"
        value = (mime, base64.b64encode(data).decode("ascii"))
        with self._lock:
            self._memo[key] = value
            if len(self._memo) > self._capacity:
                self._memo.popitem(last=False)
        return value
