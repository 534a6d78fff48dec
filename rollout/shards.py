"""Shards of a run: ``shard=i/n`` runs the i-th of n disjoint parts of the tasks, each writing its own part
file; merging the n parts gives the file one run of every task writes.

A task belongs to part ``int(sha256(id)) mod n``: the split depends on the id alone (not on the order of the
tasks file, nor on the other tasks), every task is in exactly one part, and all trials of a task are in the
same one. A part file records the settings that made it (``part``: the shard, and what the app counts as
its identity: model, tasks file, servers config, trials, ...); a merge refuses, in one line naming it, a
part that is missing, lacks some of its tasks, or was made with other settings.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from engine.contract import InputError, JsonObject, atomic_write_text, file_digest
from engine.contract.settings import Shard, shard_of

MERGE_WAIT_S = 120.0
"""How long a merge waits for the merged file's lock (another job merging, a run writing it)."""


class PartPending(InputError):
    """A part is missing or lacks some of its tasks (`lacking` of them): the merge waits for its shard."""

    lacking = 0


def part_path(parts_dir: Path, output: Path, shard: Shard) -> Path:
    """The part file of `output` written by `shard`: <parts_dir>/<output stem>.shard<i>of<n>.json."""
    return Path(parts_dir) / f"{output.stem}.{shard.label}{output.suffix or '.json'}"


def file_sha256(path: str | Path | None) -> str | None:
    """The SHA-256 of a file's bytes (of the sorted names and bytes of a folder's files); None when absent."""
    if not path:
        return None
    path = Path(path)
    if path.is_file():
        return file_digest(path)
    if path.is_dir():
        h = hashlib.sha256()
        for file in sorted(p for p in path.rglob("*") if p.is_file()):
            h.update(str(file.relative_to(path)).encode() + b"\0" + file.read_bytes() + b"\0")
        return h.hexdigest()
    return None


def check_part(path: Path, found: object, expected: Mapping[str, object], shard: Shard) -> None:
    """Refuse a part whose recorded settings (`found`) are not `expected`: InputError naming the part and the
    first setting that differs."""
    if not isinstance(found, Mapping):
        raise InputError(path, f"part {shard} has no 'part' settings: not a part file", field="part")
    key, was, now = _first_difference(found, expected, "")
    if key:
        raise InputError(path, f"part {shard} was made with other settings ({key} {was!r}, this run {now!r}): "
                         f"rerun shard={shard} with these settings, or merge with the settings that made it",
                         field=f"part.{key}")


def _first_difference(found: Mapping[str, object], expected: Mapping[str, object],
                      prefix: str) -> tuple[str, object, object]:
    """The first key (dotted, nested mappings entered) whose values differ, with both values; ("", ...) if none."""
    for key in sorted({*found, *expected}):
        was, now = found.get(key), expected.get(key)
        if was != now:
            if isinstance(was, Mapping) and isinstance(now, Mapping):
                return _first_difference(was, now, f"{prefix}{key}.")
            return f"{prefix}{key}", was, now
    return "", None, None


def part_records(path: Path, shard: Shard, records: Iterable[object]) -> dict[str, JsonObject]:
    """id -> record of a part's records; InputError naming the part and the id for a record without a string
    id, or an id held twice (a merge would keep one of them silently)."""
    by_id: dict[str, JsonObject] = {}
    at: dict[str, int] = {}
    for k, record in enumerate(records):
        tid = record.get("id") if isinstance(record, dict) else None
        if not isinstance(record, dict) or not isinstance(tid, str):
            raise InputError(path, f"part {shard}: record {k} is not an object with a string id", field=f"records[{k}]")
        if tid in by_id:
            raise InputError(path, f"part {shard} holds this task twice (records {at[tid]} and {k}): a part holds each "
                             f"of its tasks once; remove one, or run shard={shard} again into a fresh part",
                             task_id=tid, field="id")
        by_id[tid], at[tid] = record, k
    return by_id


def stray_task(task_id: str, shard: Shard, known: Iterable[str]) -> str:
    """What a part that does not own task_id holds it as: a task of another part of the split (named), or one
    the run's tasks do not have (a part of other tasks)."""
    if task_id in set(known):
        owner = Shard(shard_of(task_id, shard.count), shard.count)
        if owner != shard:
            return f"a task of part {owner}, not its own (each part holds only the tasks of its shard)"
        return "a task this run leaves out (the oracle exposure runs only the tasks with reference tools)"
    return "a task the run's tasks do not have (a part of other tasks?)"


def missing_ids(path: Path, shard: Shard, have: Iterable[str], wanted: Iterable[str]) -> None:
    """PartPending naming the part when it lacks some of the ids `wanted`."""
    lacking = sorted(set(wanted) - set(have))
    if lacking:
        pending = PartPending(path, f"part {shard} lacks {len(lacking)} of its tasks (e.g. {lacking[0]}): run "
                              f"shard={shard} again to finish it", field="records")
        pending.lacking = len(lacking)
        raise pending


def part_lock(path: Path) -> Path:
    """The lock a run holds while it writes a part (rollout.output.ResultFile, hold_part): .<name>.lock beside it."""
    return Path(path).with_name(f".{Path(path).name}.lock")


def part_running(path: Path) -> bool:
    """Whether a run is writing this part now (it holds the part's lock)."""
    lock = part_lock(path)
    if not lock.is_file():
        return False
    try:
        with FileLock(str(lock), timeout=0):
            return False
    except Timeout:
        return True


@contextmanager
def hold_part(path: Path) -> Iterator[None]:
    """Hold a part's lock while writing it, so that a merge tells it is running; InputError when another run
    holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(part_lock(path)))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise InputError(path, "another run is writing this part (its .lock is held)") from None
    try:
        yield
    finally:
        lock.release()


def write_merged(output: Path, text: str) -> None:
    """Write a merged file atomically, under the lock a run writing it holds (so two jobs finishing together
    write it one after the other); InputError naming the lock when it stays held for MERGE_WAIT_S."""
    output.parent.mkdir(parents=True, exist_ok=True)
    lock = output.with_name(f".{output.name}.lock")
    try:
        with FileLock(str(lock), timeout=MERGE_WAIT_S):
            atomic_write_text(output, text)
    except Timeout:
        raise InputError(lock, f"held by another process for {MERGE_WAIT_S:g} s (another job merging, or a run "
                         f"writing {output.name}): not merged; merge again once it has ended") from None
