"""The bridge from the evaluator protocol (engine.evaluators.protocol) to the older ``base.Evaluator`` the apps
still read: `legacy(x)` is the protocol's evaluator `x` as a ``base.Evaluator`` whose ``Judge`` forwards every
call to `x` (its options made once per config entry with `options_of`, the run's files taken out of the entry
into a `RunFiles`). It goes when the apps read the protocol.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Generic, cast

from engine.contract import JsonMapping, JsonObject
from engine.evaluators.base import Evaluator, Judge, JudgeContext, TaskInputs, Verdict, Verdicts
from engine.evaluators.protocol import EntryT, OptionsT, Plain, ReadSettings, RunFiles, ScriptedAnswer, options_of
from engine.evaluators.protocol import JudgeContext as TypedContext

FILE_OPTIONS = ("predictions_file", "reference_file", "tasks_file")
"""The run's files, which the judge app adds to an evaluator's config entry."""


def run_files(options: Mapping[str, object]) -> RunFiles:
    """The run's files of a config entry the judge app completed (FILE_OPTIONS)."""
    def path(key: str) -> Path | None:
        value = options.get(key)
        return Path(str(value)) if value is not None else None
    return RunFiles(path("predictions_file") or Path("predictions"), path("reference_file"), path("tasks_file"))


class Bridged(Judge, Generic[EntryT, OptionsT]):
    """The ``Judge`` of a protocol evaluator: each call forwarded, its card's declarations as attributes."""

    def __init__(self, x: Plain[EntryT, OptionsT]) -> None:
        self.x = x
        card = x.card
        self.uses_pool, self.asks_always, self.partial = card.uses_pool, card.asks_always, card.partial
        self.rubrics, self.asked, self.task_files = card.rubrics, card.asked, card.task_files
        self.read_tasks = x.read_tasks
        self.made: dict[str, OptionsT] = {}

    def options(self, options: Mapping[str, object]) -> OptionsT:
        """The typed options of a config entry (made once per entry)."""
        entry = {k: v for k, v in options.items() if k not in FILE_OPTIONS}
        key = json.dumps(entry, sort_keys=True, default=str)
        if key not in self.made:
            self.made[key] = options_of(self.x, entry)
        return self.made[key]

    async def verdict(self, context: JudgeContext, task: TaskInputs) -> Verdict:
        typed = TypedContext(pool=context.pool, attempts=context.attempts, options=self.options(context.options),
                             files=run_files(context.options), max_result_chars=context.max_result_chars,
                             catalogue=context.catalogue)
        found = await self.x.verdict(typed, task)
        return Verdict(found.task_id, found.entry or {}, found.explanation, found.error)

    def export(self, entries: dict[str, dict[str, object]], meta: dict[str, object]) -> JsonObject:
        return self.x.export(cast(Mapping[str, EntryT], entries), cast(JsonMapping, meta))

    def load(self, path: Path) -> dict[str, dict[str, object]]:
        return cast(dict[str, dict[str, object]], self.x.load(path))

    def complete(self, entry: Mapping[str, object], names: Sequence[str]) -> bool:
        return self.x.complete(cast(EntryT, entry), names)

    def stale(self, earlier: JsonMapping, now: JsonMapping) -> str | None:
        return self.x.stale(earlier, now)

    def one_judge(self, options: Mapping[str, object], judges: JsonMapping
                  ) -> tuple[str, JsonMapping] | None:
        return self.x.one_judge(self.options(options), judges)

    def task_count(self, reference: Path) -> int | None:
        return self.x.task_count(reference)

    def check_task(self, options: Mapping[str, object], task_id: str, task: JsonMapping | None
                   ) -> None:
        self.x.check_task(self.options(options), run_files(options), task_id, task)

    def input_files(self, options: Mapping[str, object], task: TaskInputs) -> dict[str, Path]:
        return self.x.input_files(self.options(options), run_files(options), task)


def legacy(x: Plain[EntryT, OptionsT]) -> Evaluator:
    """The protocol's evaluator `x` as a ``base.Evaluator``."""
    card = x.card

    def overrides(name: str) -> bool:
        return getattr(type(x), name) is not getattr(Plain, name)

    def read(path: Path, profile: str | None = None) -> Verdicts:
        return x.read(path, ReadSettings(profile))

    def aggregate(values: Verdicts, ids: Sequence[str]) -> JsonObject:
        return x.aggregate(values, ids) or {}

    scripted: dict[str, ScriptedAnswer] = {}
    for rubric in (*card.rubrics, *card.asked):
        answer = x.scripted_answer(rubric.purpose)
        if answer is not None:
            scripted[rubric.purpose] = answer
    return Evaluator(name=card.name, reads=frozenset(card.reads), metrics=card.metrics, suffix=card.suffix,
                     judge=Bridged(x) if card.suffix is not None else None,
                     read=read if card.suffix is not None else None,
                     compute=x.compute if card.suffix is None else None,
                     aggregate=aggregate if overrides("aggregate") else None, option=card.option_name,
                     position=card.position, scripted=scripted, all_tasks=card.all_tasks, columns=card.columns,
                     display=x.display if overrides("display") else None)
