"""Workspace images as a request sends them: base64, scaled down to a maximum side, memoised."""

from __future__ import annotations

import base64
import io
import mimetypes
import threading
from collections import OrderedDict
from pathlib import Path


class ImageEncoder:
    """Base64 encodings of image files, downscaled to a maximum side, memoised by file state."""

    def __init__(self, max_side: int | None, capacity: int = 64) -> None:
        self.max_side = max_side or None
        self._memo: OrderedDict[tuple[str, int, int], tuple[str, str]] = OrderedDict()
        self._capacity = capacity
        self._lock = threading.Lock()

    def encode(self, path: Path) -> tuple[str, str]:
        """(mime type, base64 data) of an image file (thread-safe)."""
        stat = path.stat()
        key = (str(path), stat.st_mtime_ns, stat.st_size)
        with self._lock:
            if key in self._memo:
                self._memo.move_to_end(key)
                return self._memo[key]
        data = path.read_bytes()
        mime = mimetypes.guess_type(path.name)[0] or "image/png"
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
