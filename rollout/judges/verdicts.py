"""The verdict store: the one owner of every evaluator's file ``<predictions stem>_<suffix>.json``.

It reads an earlier file back (its ``meta.format`` checked: a newer build's file is never resumed and
rewritten as this build's), decides what a rerun still has to judge (entries the evaluator finds
incomplete, all of them when it finds the file stale, those whose input key changed), records each
`Verdict` as it comes (a failed one named in meta ``failed``), and writes the file atomically in the
shape the evaluator's ``export`` gives, with the format record, the input keys, the failures, the
incomplete ids and the judges' usage added to the earlier runs'. Evaluators write no file themselves.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from engine.contract import InputError, JsonMapping, JsonObject, JsonValue, atomic_write_json, read_json
from engine.evaluators.base import file_meta, format_record, format_version
from engine.evaluators.protocol import EntryT, Evaluator, OptionsT, Verdict
from rollout.judges.journal import VERSION, append_synced, journal_path, read_journal, verdict_line
from rollout.judges.pool import USAGE_COUNTS

log = logging.getLogger("judge")

INPUT_KEYS = "input_keys"
"""The meta key of an evaluator file's input keys: task id -> `input_key` of what its verdict judged."""


def check_judged(evaluator: Evaluator[EntryT, OptionsT]) -> None:
    """InputError naming its config entry for an evaluator with no file (nothing to judge)."""
    if evaluator.card.suffix is None:
        raise InputError("config", f"evaluator {evaluator.card.name} has nothing to judge (no file); the score app "
                         "computes its values", field=f"evaluators.{evaluator.card.name}")


def export(evaluator: Evaluator[Any, Any], entries: dict[str, JsonObject], meta: JsonObject) -> JsonObject:
    """The file of an evaluator's entries: its ``export``, its ``meta`` led by the format record."""
    document = evaluator.export(entries, meta)
    before = document.get("meta")
    document["meta"] = {"format": format_record(str(evaluator.card.suffix)),
                        **(before if isinstance(before, dict) else {})}
    return document


def earlier_entries(evaluator: Evaluator[Any, Any], path: Path) -> dict[str, JsonObject]:
    """The entries of an earlier file of the evaluator, its format checked; empty when there is none."""
    if not path.is_file():
        return {}
    format_version(path, read_json(path, "evaluator file"), str(evaluator.card.suffix))
    return evaluator.load(path)


def previous_meta(output: Path, name: str) -> JsonObject:
    """The ``meta`` object of an earlier run's output of format `name` (its evaluator's suffix); empty when
    there is none. InputError for a file of another format or of a version this build does not read."""
    if not output.is_file():
        return {}
    root = read_json(output, "evaluator file")
    format_version(output, root, name)
    return file_meta(root)


def previous_usage(meta: JsonMapping, output: Path) -> JsonObject:
    """The judges' usage an earlier run's output records in its `meta`, its counts checked; empty when
    there is none."""
    usage = meta.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    for name, block in usage.items():
        for key, value in (block.items() if isinstance(block, dict) else ()):
            if key in USAGE_COUNTS and not (isinstance(value, int) and not isinstance(value, bool)
                                             and 0 <= value < 2 ** 53):
                raise InputError(output, f"must be a count (an integer >= 0 below 2**53), got {str(value)[:40]!r}",
                                 field=f"meta.usage.{name}.{key}")
    return usage


def previous_keys(meta: JsonMapping, output: Path) -> dict[str, str]:
    """The input keys an earlier run's output records in its `meta` (task id -> key), checked; empty for
    a file of a build that recorded none."""
    keys = meta.get(INPUT_KEYS)
    if keys is None:
        return {}
    if not isinstance(keys, dict) or not all(isinstance(k, str) for k in keys.values()):
        raise InputError(output, "must be an object of task id -> input key (a string)", field=f"meta.{INPUT_KEYS}")
    return {i: k for i, k in keys.items() if isinstance(k, str)}


def _listed(ids: Sequence[str]) -> str:
    return ", ".join(ids[:10]) + (" ..." if len(ids) > 10 else "")


Usage = Callable[[JsonMapping], JsonObject]
"""The judges' usage totals of the run added to an earlier run's (JudgePool.usage_totals)."""
COMPACT_AT = 64
"""The verdicts a journal holds at least before its file is written whole again (then as many as the file holds)."""


def part_document(document: JsonObject, inputs: JsonMapping, meta: JsonMapping,
                  extra: JsonMapping, entries: JsonMapping) -> JsonObject:
    """An evaluator's document as a shard's part file: with ``part`` (inputs, meta, extra, entries)."""
    return {**document, "part": {**inputs, "meta": dict(meta), "extra": dict(extra), "entries": dict(entries)}}


class VerdictFile:
    """One evaluator's file for one run: the entries kept and judged, their input keys, the failures.

    `path`: the file (a shard's part file for a shard); `meta`: the run's meta; `names`: the models of the
    judges asked (what the evaluator's `complete` checks an entry against); `order`: the tasks of the run, in order;
    `part`: a shard's part inputs (rollout.judges.shards.part_inputs), None for the file of a whole run.

    Each verdict is appended to the file's journal (rollout.judges.journal) as it is kept; the file is written
    whole (atomically, and the journal removed) when the journal holds as many verdicts as the file (at least
    COMPACT_AT), and at the end, so judging n tasks writes O(n) bytes. A journal left by a killed run is
    replayed onto its file before anything else reads it."""

    def __init__(self, evaluator: Evaluator[Any, Any], path: Path, meta: JsonObject, names: Sequence[str],
                 order: Sequence[str], part: JsonMapping | None = None) -> None:
        self.evaluator, self.name = evaluator, evaluator.card.name
        self.path, self.meta, self.names, self.order = path, meta, list(names), list(order)
        self.part = dict(part) if part is not None else None
        self.journal = journal_path(path)
        self.entries: dict[str, JsonObject] = {}
        self.keys: dict[str, str] = {}
        self.failed: dict[str, str] = {}
        self.usage_before: JsonObject = {}
        self.recover()
        self.earlier = previous_meta(path, str(evaluator.card.suffix))
        self.usage_before = previous_usage(self.earlier, path)
        self.synced = False
        """Whether the file holds the entries and keys kept (a journal may then be started on it)."""
        self.pending = 0
        """Verdicts in the journal since the file was last written whole."""
        self.compacted = 0
        """Entries the file held when it was last written whole."""

    def recover(self) -> None:
        """Replay the journal a killed run left onto its file and write the file whole (as that run would
        have written it at its end), then remove the journal."""
        journal = read_journal(self.journal)
        if journal is None or not (journal.entries or journal.failed):
            self.journal.unlink(missing_ok=True)
            return
        log.warning("%s: %d verdict(s) of a run that was stopped are taken from %s", self.name,
                    len(journal.entries) + len(journal.failed), self.journal)
        earlier = previous_meta(self.path, str(self.evaluator.card.suffix))
        self.entries = earlier_entries(self.evaluator, self.path)
        self.keys = {i: k for i, k in previous_keys(earlier, self.path).items() if i in self.entries}
        self.entries.update(journal.entries)
        self.keys.update(journal.keys)
        self.failed = dict(journal.failed)
        usage = journal.usage if journal.usage is not None else earlier.get("usage")
        self._write(journal.meta, journal.part, (lambda before: dict(usage)) if isinstance(usage, dict) else None)
        self.entries, self.keys, self.failed = {}, {}, {}

    def resume(self, keys: Mapping[str, str]) -> list[str]:
        """Keep the earlier file's entries that still stand (complete, not stale, their input key
        unchanged: `keys`, task id -> this run's key), saying why others are judged again; the ids of
        the order still to judge."""
        name, on_disk = self.name, earlier_entries(self.evaluator, self.path)
        previous, stored = on_disk, previous_keys(self.earlier, self.path)
        why = self.evaluator.stale(self.earlier, self.meta) if previous else None
        if why:
            log.warning("%s: every task is judged again, as %s was not made as this run asks: %s", name, self.path, why)
            previous = {}
        self.entries = {i: e for i, e in previous.items() if self.evaluator.complete(e, self.names)}
        again = [i for i in self.order if i in previous and i not in self.entries]
        if again:
            log.warning("%s: %d task(s) were judged by other models or in part; they are judged again by %s",
                        name, len(again), ", ".join(self.names))
        self.keys = {i: k for i, k in stored.items() if i in self.entries}
        changed = [i for i in self.order if i in self.keys and self.keys[i] != keys[i]]
        for i in changed:
            del self.entries[i], self.keys[i]
        if changed:
            log.warning("%s: %d task(s) changed since %s judged them (their task, a file it names or imports, their "
                        "reference, prediction, workspace or this run's settings); they are judged again: %s", name,
                        len(changed), self.path, _listed(changed))
        if any(i in self.entries and i not in self.keys for i in self.order):
            log.warning("%s: %d task(s) of %s were judged by an earlier build that recorded no input keys; their "
                        "verdicts are kept, as nothing shows their input changed (remove the file to judge them "
                        "again)", name, sum(1 for i in self.order if i in self.entries and i not in self.keys),
                        self.path)
        self.synced = list(self.entries) == list(on_disk) and self.keys == stored
        self.compacted = len(self.entries)
        return [i for i in self.order if i not in self.entries]

    def record(self, verdict: Verdict[Any], key: str, usage: Usage | None = None) -> None:
        """Keep one task's verdict and its input key, or its error among the failures, in the journal (the
        file written whole first when it does not hold what is kept, and again on the schedule)."""
        if verdict.error is not None:
            self.failed[verdict.task_id] = verdict.error
            log.warning("%s: task %s not judged: %s", self.name, verdict.task_id, verdict.error)
            entry = None
        else:
            entry = self.entries[verdict.task_id] = verdict.file_entry()
            self.keys[verdict.task_id] = key
        if not self.synced:
            self.compact(usage)
            return
        if self.pending == 0:
            append_synced(self.journal, {"journal": VERSION, "meta": self.meta, "part": self.part})
        append_synced(self.journal, verdict_line(verdict.task_id, entry, verdict.error, key,
                                                 usage(self.usage_before) if usage is not None else None))
        self.pending += 1
        if self.pending >= max(COMPACT_AT, self.compacted):
            self.compact(usage)

    def incomplete(self) -> list[str]:
        """The ids of the order whose entry lacks some judge's answer."""
        return [i for i in self.order
                if i in self.entries and not self.evaluator.complete(self.entries[i], self.names)]

    def done(self) -> int:
        """How many tasks of the order have a complete entry."""
        return sum(1 for i in self.order if i in self.entries) - len(self.incomplete())

    def ordered(self) -> dict[str, JsonObject]:
        """The entries in the run's order, those of other tasks (an earlier run's) after them."""
        out = {i: self.entries[i] for i in self.order if i in self.entries}
        out.update((i, e) for i, e in self.entries.items() if i not in out)
        return out

    def extra(self, usage: Usage | None) -> JsonObject:
        """What this run adds to the meta: failures, input keys, incomplete ids, usage (`usage(before)`)."""
        ordered = self.ordered()
        out: JsonObject = {"failed": dict(self.failed), INPUT_KEYS: {i: self.keys[i] for i in ordered
                                                                          if i in self.keys}}
        if self.evaluator.card.partial:
            incomplete: list[JsonValue] = list(self.incomplete())
            out["incomplete"] = incomplete
        if usage is not None:
            out["usage"] = usage(self.usage_before)
        return out

    def _write(self, meta: JsonMapping, part: JsonMapping | None, usage: Usage | None) -> None:
        extra, ordered = self.extra(usage), self.ordered()
        document = export(self.evaluator, ordered, {**meta, **extra})
        atomic_write_json(self.path, part_document(document, part, meta, extra, ordered)
                          if part is not None else document)

    def compact(self, usage: Usage | None = None) -> None:
        """Write the file whole, atomically (a shard's part file for a shard), and remove the journal."""
        self._write(self.meta, self.part, usage)
        self.journal.unlink(missing_ok=True)
        self.synced, self.pending, self.compacted = True, 0, len(self.entries)
