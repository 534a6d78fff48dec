"""Result files: a JSON list of per-task records, rewritten atomically after every task.

A rerun loads the file, skips the ids it already holds and adds the others; records are kept in
the order of the tasks file, so a run gives the same bytes however its tasks interleave. A hidden
lock file next to the output (``.<name>.lock``) keeps two runs from writing the same file. A shard's part
file (rollout.shards) is the object ``{"part": <the settings that made it>, "records": [...]}``.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path

from filelock import FileLock, Timeout

from engine.contract import InputError, atomic_write_text, dumps_json, read_json
from engine.contract.settings import Shard
from rollout.shards import check_part, part_records


def dumps_record(record: Mapping[str, object]) -> str:
    """The text of one record inside a result file (strict JSON)."""
    return dumps_json(record, indent=1)


def list_text(texts: list[str]) -> str:
    """The text of a result file of these record texts, in order."""
    body = ",\n".join(texts)
    return f"[\n{body}\n]\n" if body else "[]\n"


class ResultFile:
    """A resumable result file: a JSON list of records with string ids (predictions, verdicts, ...); with
    `part` (the settings of a shard's part file, and its `shard`), the part file ``{"part", "records"}``, which
    an earlier file made with other settings is refused."""

    def __init__(self, path: str | Path, order: dict[str, int], part: Mapping[str, object] | None = None,
                 shard: Shard | None = None) -> None:
        self.path = Path(path)
        self._order = order
        self._part = part
        self._shard = shard
        self._texts: dict[str, str] = {}
        self._records: dict[str, Mapping[str, object]] = {}
        self._lock = FileLock(str(self.path.with_name(f".{self.path.name}.lock")))
        self._write_lock = threading.Lock()

    def __enter__(self) -> ResultFile:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            raise InputError(self.path, "another run is writing this file (its .lock is held)") from None
        try:
            self._load()
        except BaseException:
            self._lock.release()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    def _load(self) -> None:
        if not self.path.exists():
            return
        data = read_json(self.path, "result file")
        if self._part is not None:
            if not isinstance(data, dict) or not isinstance(data.get("records"), list):
                raise InputError(self.path, "an existing part file must be an object with a records list (move it "
                                 "away)", field="records")
            check_part(self.path, data.get("part"), self._part, self._shard or Shard(0, 1))
            part_records(self.path, self._shard or Shard(0, 1), data["records"])  # each id once
            data = data["records"]
        if not isinstance(data, list):
            raise InputError(self.path, "an existing result file must be a JSON list (move it away "
                             "or choose another output path)")
        for pos, record in enumerate(data):
            if not isinstance(record, dict) or not isinstance(record.get("id"), str):
                raise InputError(self.path, f"entry {pos} has no string id", field="id")
            self._records[record["id"]] = record
            self._texts[record["id"]] = dumps_record(record)

    @property
    def done(self) -> set[str]:
        """Ids already in the file."""
        return set(self._records)

    def get(self, task_id: str) -> Mapping[str, object] | None:
        """The record of an id, if the file has one."""
        return self._records.get(task_id)

    def records(self) -> list[Mapping[str, object]]:
        """Every record, in file order."""
        return [self._records[i] for i in self._ordered_ids()]

    def _ordered_ids(self) -> list[str]:
        unknown = len(self._order)
        return sorted(self._records, key=lambda i: (self._order.get(i, unknown), i))

    def add(self, record: Mapping[str, object]) -> None:
        """Add (or replace) a record (its ``id`` a string) and rewrite the file atomically (safe to call from
        threads)."""
        task_id = record["id"]
        if not isinstance(task_id, str):
            raise ValueError(f"a record's id must be a string, got {task_id!r}")
        text = dumps_record(record)
        with self._write_lock:
            self._records[task_id] = record
            self._texts[task_id] = text
            self._write()

    def save(self) -> None:
        """Write the file as it is (a part file with no record yet included)."""
        with self._write_lock:
            self._write()

    def _write(self) -> None:
        text = list_text([self._texts[i] for i in self._ordered_ids()])
        if self._part is not None:
            text = f'{{"part": {dumps_json(self._part)},\n"records": {text.rstrip()}}}\n'
        atomic_write_text(self.path, text)
