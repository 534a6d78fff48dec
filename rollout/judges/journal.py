"""The journal of a verdict file: ``<file>.journal`` beside it, one JSON line per verdict judged since the file
was last written whole, so that judging n tasks writes O(n) bytes and a killed run loses no finished verdict.

Its first line is the header, what the file written whole would hold besides its entries: ``{"journal": 1,
"meta": the run's meta, "part": a shard's part inputs or null}``; each further line is one verdict, ``{"id",
"entry" | "error", "key"?, "usage"?}`` (its input key, and the judges' usage totals as the verdict was kept).
Each line is appended with one write of an O_APPEND descriptor and synced to the disk before the next verdict
is judged; a line cut short by a killed writer (the last one) is skipped when the journal is read back.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from engine.contract import JsonObject, JsonValue, WriteFailed

VERSION = 1


def journal_path(path: Path) -> Path:
    """The journal beside a verdict file: ``<file>.journal``."""
    return path.with_name(path.name + ".journal")


def append_synced(path: Path, line: JsonObject) -> int:
    """Append one compact JSON line to `path` with one write and sync it to the disk; the bytes written.
    WriteFailed naming the file when the system refuses."""
    data = (json.dumps(line, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise WriteFailed(exc.errno, exc.strerror or str(exc), str(path)) from None
    return len(data)


@dataclass
class Journal:
    """A journal read back: the header's meta and part inputs, and the verdicts in the order they were kept
    (entries and their input keys, failures, the last usage totals recorded)."""

    meta: JsonObject
    part: JsonObject | None
    entries: dict[str, JsonObject] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    usage: JsonObject | None = None


def _lines(path: Path) -> list[JsonObject]:
    out: list[JsonObject] = []
    with path.open(encoding="utf-8", errors="replace") as fh:
        for text in fh:
            try:
                line = json.loads(text)
            except json.JSONDecodeError:
                continue  # the last line, cut short by a killed writer
            if isinstance(line, dict):
                out.append(line)
    return out


def read_journal(path: Path) -> Journal | None:
    """The journal at `path` (None when there is none, or when its header was cut short: then no verdict
    followed it)."""
    if not path.is_file():
        return None
    lines = _lines(path)
    header = lines[0] if lines else {}
    meta, part = header.get("meta"), header.get("part")
    if header.get("journal") != VERSION or not isinstance(meta, dict) or not isinstance(part, dict | None):
        return None
    journal = Journal(meta, part)
    for line in lines[1:]:
        tid, entry, error, key, usage = (line.get(k) for k in ("id", "entry", "error", "key", "usage"))
        if not isinstance(tid, str):
            continue
        if isinstance(entry, dict):
            journal.entries[tid] = entry
            if isinstance(key, str):
                journal.keys[tid] = key
        elif isinstance(error, str):
            journal.failed[tid] = error
        if isinstance(usage, dict):
            journal.usage = usage
    return journal


def verdict_line(task_id: str, entry: JsonObject | None, error: str | None, key: str,
                 usage: JsonObject | None) -> JsonObject:
    """One verdict's line: its entry and input key, or its error; the usage totals when the run has judges."""
    line: dict[str, JsonValue] = {"id": task_id}
    if entry is not None:
        line.update(entry=entry, key=key)
    else:
        line["error"] = error
    if usage is not None:
        line["usage"] = usage
    return line
