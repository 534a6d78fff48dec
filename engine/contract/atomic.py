"""Atomic file writes: a temporary file in the same folder, fsync, then a rename.

Readers see the old file or the new one, never half of it, so an interrupted run loses
nothing already written.
"""

from __future__ import annotations

import csv
import io
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from engine.contract.errors import WriteFailed
from engine.contract.jsonio import dumps_json


def default_file_mode() -> int:
    """The mode a plainly created file gets: 0o666 less the process umask."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write bytes to path through a temporary file in the same folder and a rename; WriteFailed naming
    path when the system refuses (nothing is left of the temporary file then).

    The file gets the usual permissions (not the owner-only mode of temporary files).
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise WriteFailed(exc.errno, exc.strerror or str(exc), str(path)) from None
    try:
        os.fchmod(fd, default_file_mode())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError) and not isinstance(exc, WriteFailed):
            raise WriteFailed(exc.errno, exc.strerror or str(exc), str(path)) from None
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """UTF-8 text written atomically (see atomic_write_bytes)."""
    atomic_write_bytes(path, text.encode("utf-8"))


def csv_text(columns: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """CSV text: a header row, then the rows (None cells empty), newline-terminated lines."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
    return buf.getvalue()


def atomic_write_csv(path: Path, columns: Sequence[str], records: Iterable[Mapping[str, object]]) -> None:
    """A CSV of the records' values for these columns (missing ones empty), written atomically."""
    atomic_write_text(path, csv_text(columns, ([r.get(c) for c in columns] for r in records)))


def atomic_write_json(path: Path, obj: object) -> None:
    """Strict JSON (UTF-8, non-ASCII kept, indented) written atomically."""
    atomic_write_text(path, dumps_json(obj) + "\n")
