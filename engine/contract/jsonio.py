"""JSON in and out: reading with one-line errors, canonical texts, strict output."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from engine.contract.errors import InputError


def canonical_json(value: Any) -> str:
    """JSON with keys sorted, non-ASCII kept, and ',' / ':' separators without spaces."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def dumps_json(value: Any, indent: int | None = 2) -> str:
    """Strict JSON text (UTF-8 friendly: non-ASCII kept); NaN and infinities are refused."""
    return json.dumps(value, ensure_ascii=False, indent=indent, allow_nan=False)


def read_json(path: str | Path, what: str = "file", error: type[InputError] = InputError) -> Any:
    """Parse a JSON file; any failure becomes an `error` (an InputError) naming the file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(path, f"{what} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(path, f"cannot read {what} ({exc})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(path, f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise error(path, "not valid input: JSON nested too deeply") from None


def read_keyed_lines(path: str | Path) -> dict[str, dict[str, Any]]:
    """The entries of a JSON-lines log by their "key" (a later line wins); a line cut short by a
    killed writer, or one that is not such an entry, is skipped."""
    path = Path(path)
    entries: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return entries
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(entry, dict) and isinstance(entry.get("key"), str):
                entries[entry["key"]] = entry
    return entries


def append_line(path: str | Path, entry: Any) -> None:
    """Append one compact JSON line with one write of an O_APPEND descriptor, so concurrent
    writers never interleave inside a line."""
    data = memoryview((json.dumps(entry, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
                       + "\n").encode("utf-8"))
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)
