"""The images a judge is shown: those its payload names (``file=/abs/path`` in any of its texts, as
the published judges read them) and those its question carries (the task's input image), attached to
the request's user message as image parts, which every driver sends in its provider's own form.

An image that is not a file is left out with a warning naming it (once per path and run).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from engine.contract import json_strings

log = logging.getLogger("judge")

# An absolute path after "file=", up to white space or a character that closes a JSON or prose context.
_FILE_REFERENCE = re.compile(r"file=(/[^\s\"'<>|,;)\]}]+)")


def named_images(payload: Any) -> list[str]:
    """The absolute image paths a payload names as ``file=/abs/path``, in order, each once."""
    seen: dict[str, None] = {}
    for text in json_strings(payload):
        for path in _FILE_REFERENCE.findall(text):
            seen.setdefault(path.rstrip(".:"), None)
    return list(seen)


class ImageAttacher:
    """Adds a question's images to its request; warns once about each image that is not a file."""

    def __init__(self) -> None:
        self._warned: set[str] = set()

    def present(self, paths: list[str]) -> list[str]:
        """The paths that are files; a warning names each missing one (the first time it is met)."""
        out = []
        for path in paths:
            if Path(path).is_file():
                out.append(path)
            elif path not in self._warned:
                self._warned.add(path)
                log.warning("image %s is not a file; the judges are asked without it", path)
        return out

    def attach(self, messages: list[dict[str, Any]], paths: list[str]) -> list[dict[str, Any]]:
        """The messages with the images that exist appended to the last user message as image parts."""
        found = self.present(paths)
        if not found:
            return messages
        out = [dict(m) for m in messages]
        last = max(i for i, m in enumerate(out) if m["role"] == "user")
        content = out[last]["content"]
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        out[last]["content"] = parts + [{"type": "image", "path": path} for path in found]
        return out
