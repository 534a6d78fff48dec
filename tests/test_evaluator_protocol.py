"""The evaluator shape (engine.evaluators.protocol) and the pool an evaluator asks (engine.judging.Pool): a
small evaluator written on `Plain` satisfies `Evaluator`, judges a task into a typed verdict, and its file
goes out and comes back through the defaults; docs/judges.md's evaluator written on `Plain` (under 60 lines)
gives the entries the verdict store writes today for the page's `Judge`, and reads that file back; its options
come from its config entry, refused in one line naming the setting; a card and a verdict refuse what they
cannot be; the judge app's pool satisfies `Pool`, signature by signature."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import pytest

from engine.contract import ConfigError, Trajectory, TrajectoryFile, digest, read_trajectories
from engine.contract.settings import Judges, ModelConfig, SettingError, record
from engine.evaluators.base import Metric, TaskInputs
from engine.evaluators.protocol import (
    Card,
    Evaluator,
    EvaluatorOptions,
    JudgeContext,
    Plain,
    ReadSettings,
    RunFiles,
    Verdict,
    options_of,
)
from engine.judging import COMPLETION, JudgeSpec, Pool, Question, first_answer, parse_score
from rollout.judges.cache import ReplyCache, reply_key
from rollout.judges.images import TaskImages
from rollout.judges.pool import JudgePool, TaskJudges
from rollout.judges.verdicts import VerdictFile

ROOT = Path(__file__).resolve().parents[1]


class ShortEntry(TypedDict):
    short: float


@dataclass
class ShortOptions(EvaluatorOptions):
    max_words: int = 50

    def __post_init__(self) -> None:
        if self.max_words < 1:
            raise SettingError("max_words", self.max_words, "must be an integer >= 1")


METRICS = (Metric("short", "Short", "short", ("reference", "paper"), "mean", False, False, 0.0, 1.0),)


class Short(Plain[ShortEntry, ShortOptions]):
    """1 when the final answer has at most max_words words."""

    card = Card(name="short", reads=frozenset({"final_answer"}), metrics=METRICS, suffix="short", uses_pool=False)
    options_type = ShortOptions

    async def verdict(self, ctx: JudgeContext[ShortOptions], task: TaskInputs) -> Verdict[ShortEntry]:
        if task.final_answer is None:
            return Verdict(task.task_id, error="no final answer")
        words = len(task.final_answer.split())
        return Verdict(task.task_id, {"short": float(words <= ctx.options.max_words)}, explanation=f"{words} words")


def _page_module() -> types.ModuleType:
    """docs/judges.md's evaluator module ("A new evaluator: one module and one config entry"), as the page
    gives it, loaded as a module."""
    text = (ROOT / "docs" / "judges.md").read_text(encoding="utf-8")
    section = text[text.index("### A new evaluator: one module and one config entry"):]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found is not None
    module = types.ModuleType("concise_page")
    sys.modules[module.__name__] = module
    exec(compile(found.group(1), "docs/judges.md", "exec"), module.__dict__)
    return module


PAGE = _page_module()
Concise, ConciseOptions, ConciseEntry = PAGE.Concise, PAGE.ConciseOptions, PAGE.ConciseEntry


def _task(task_id: str, answer: str | None) -> TaskInputs:
    raw = {"id": task_id, "final_answer": answer} if answer is not None else {"id": task_id}
    return TaskInputs(task_id, prediction=Trajectory(task_id, None, (), raw))


def test_an_evaluator_on_plain_is_an_evaluator_and_judges(tmp_path: Path) -> None:
    short: Evaluator[ShortEntry, ShortOptions] = Short()  # mypy checks the shape, isinstance its members
    assert isinstance(short, Evaluator) and not isinstance(object(), Evaluator)
    ctx = JudgeContext(pool=None, attempts=1, options=ShortOptions(max_words=2), files=RunFiles(tmp_path / "p.json"))
    found = [asyncio.run(short.verdict(ctx, _task(t, a))) for t, a in (("a", "two words"), ("b", "three words here"),
                                                                      ("c", None))]
    assert [(v.entry, v.explanation, v.error) for v in found] == [
        ({"short": 1.0}, "2 words", None), ({"short": 0.0}, "3 words", None), (None, "", "no final answer")]


def test_the_defaults_write_a_file_and_read_it_back(tmp_path: Path) -> None:
    short = Short()
    entries: dict[str, ShortEntry] = {"a": {"short": 1.0}, "b": {"short": 0.0}}
    document = short.export(entries, {"evaluator": "short"})
    assert document == {"per_id": entries, "meta": {"evaluator": "short"}}
    path = tmp_path / "m_short.json"
    path.write_text(json.dumps(document))
    assert short.load(path) == entries
    read = short.read(path, ReadSettings())
    assert read.per_id == entries and read.meta == {"evaluator": "short"}
    assert short.complete(entries["a"], ["j1"]) and short.stale({}, {"x": 1}) is None
    assert short.one_judge(ShortOptions(), Judges(pool={"j": ModelConfig(provider="scripted")})) is None
    assert (short.task_count(path), short.input_files(ShortOptions(), RunFiles(path), _task("a", "x")),
            short.aggregate(read, ["a"]), short.display(None, {}),
            short.scripted_answer("short")) == (None, {}, None, [], None)
    with pytest.raises(NotImplementedError, match="short reads its file"):
        short.compute(TrajectoryFile(path, {}, ()))


def test_plain_reads_the_tasks_file_as_the_judge_app_does(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps([{"id": "t1", "question": "q"}]))
    assert Short().read_tasks(tasks) == {"t1": {"id": "t1", "question": "q"}}


def test_a_computed_evaluator_judges_nothing_and_has_no_file(tmp_path: Path) -> None:
    class Counted(Plain[dict[str, float], EvaluatorOptions]):
        card = Card(name="counted", reads=frozenset({"prediction"}), metrics=())
        options_type = EvaluatorOptions

    counted = Counted()
    assert isinstance(counted, Evaluator) and counted.card.option_name == "counted"
    ctx = JudgeContext(pool=None, attempts=1, options=EvaluatorOptions(), files=RunFiles(tmp_path / "p.json"))
    with pytest.raises(NotImplementedError, match="counted judges no task"):
        asyncio.run(counted.verdict(ctx, _task("a", "x")))
    with pytest.raises(NotImplementedError, match="counted has no file"):
        counted.read(tmp_path / "x.json", ReadSettings())


def test_a_card_and_a_verdict_refuse_what_they_cannot_be() -> None:
    with pytest.raises(ValueError, match=r"unknown input\(s\) \['answer'\]"):
        Card(name="x", reads=frozenset({"answer"}), metrics=())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"metric\(s\) \['short'\] must have source 'x'"):
        Card(name="x", reads=frozenset(), metrics=METRICS)
    assert Card(name="x", reads=frozenset(), metrics=(), option="calls").option_name == "calls"
    with pytest.raises(ValueError, match="exactly one of its entry and its error"):
        Verdict("t")
    with pytest.raises(ValueError, match="exactly one of its entry and its error"):
        Verdict("t", {"short": 1.0}, error="both")
    with pytest.raises(SettingError, match="^max_words=0: must be an integer >= 1$"):
        ShortOptions(max_words=0)
    with pytest.raises(TypeError):  # a context is given by keywords only
        JudgeContext(None, 1, ShortOptions(), RunFiles(Path("p")))  # type: ignore[call-arg]


def _parameters(function: object) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]  # type: ignore[arg-type]


@pytest.mark.parametrize("pool_type", [JudgePool, TaskJudges])
def test_the_judge_apps_pool_satisfies_the_pool_protocol(pool_type: type, tmp_path: Path) -> None:
    """The members Pool declares, each with the protocol's parameters (kinds and defaults); a pool may take
    more keywords with defaults (JudgePool.ask's task images)."""
    spec = JudgeSpec("j", {"provider": "scripted", "name": "j"}, {"provider": "scripted", "model": "j"})
    pool = JudgePool([spec], ReplyCache(tmp_path / "cache"))
    made = pool if pool_type is JudgePool else TaskJudges(pool, TaskImages())
    assert isinstance(made, Pool) and list(made.specs) == [spec] and made.rubric(COMPLETION) == COMPLETION
    for name in ("ask", "rubric"):
        wanted, given = _parameters(getattr(Pool, name)), _parameters(getattr(pool_type, name))
        assert given[:len(wanted)] == wanted, name
        assert all(p[1] is inspect.Parameter.KEYWORD_ONLY and p[2] is not inspect.Parameter.empty
                   for p in given[len(wanted):]), name
        assert inspect.iscoroutinefunction(getattr(pool_type, name)) == inspect.iscoroutinefunction(getattr(Pool, name))


def test_first_answer_asks_a_pool_through_the_protocol(tmp_path: Path) -> None:
    """A reply cached for the judge's identity, rubric, payload and attempt is the first answer, no driver built."""
    spec = JudgeSpec("j", {"provider": "scripted", "name": "j"}, {"provider": "scripted", "model": "j"})
    cache = ReplyCache(tmp_path / "cache")
    question = Question(COMPLETION, {"question": "q"})
    cache.put({"key": reply_key(spec.identity, COMPLETION, question.payload_digest, 1), "judge": "j", "model": "j",
               "purpose": COMPLETION.purpose, "version": COMPLETION.version, "attempt": 1, "reply": "\\boxed{7}",
               "usage": {}})
    pool: Pool = JudgePool([spec], cache)
    assert asyncio.run(first_answer(pool, spec, question, 1, lambda r: parse_score(r, 0, 10))) == 7.0
    assert digest(question.payload) == question.payload_digest


def test_the_pages_evaluator_is_judged_into_the_store_and_read_back(tmp_path: Path) -> None:
    """The page's evaluator judged into the verdict store as the judge app does: its entries, explanation last,
    in the plain file shape, which it loads and reads back (the judge app's run of it:
    tests/rollout/test_judge_doc_example.py)."""
    predictions = tmp_path / "m_test_mcp_fuzzy.json"
    preds = json.loads((ROOT / "rollout" / "demo" / "reference.json").read_text())
    preds[0]["final_reply"] = "word " * 60
    predictions.write_text(json.dumps(preds))
    tasks = read_trajectories(predictions).tasks
    ids = list(tasks)
    concise: Evaluator[ConciseEntry, ConciseOptions] = PAGE.EVALUATOR
    assert isinstance(concise, Evaluator) and isinstance(concise, Plain)
    options = options_of(concise, {"max_words": 50})
    ctx = JudgeContext(pool=None, attempts=1, options=options, files=RunFiles(predictions))
    path = tmp_path / "m_test_mcp_fuzzy_concise.json"
    store = VerdictFile(concise, path, {"max_words": 50}, [], ids)
    assert store.resume({i: "key" for i in ids}) == ids
    for i in ids:
        store.record(asyncio.run(concise.verdict(ctx, TaskInputs(i, prediction=tasks[i]))), "key")
    store.compact()
    written = json.loads(path.read_text())
    assert list(written) == ["per_id", "meta"] and list(written["per_id"]) == ids
    assert json.dumps(written["per_id"][ids[0]]) == '{"concise": 0.0, "explanation": "60 word(s) of 50"}'
    assert written["meta"]["max_words"] == 50 and written["meta"]["format"] == {"name": "m3bench.concise",
                                                                                 "version": 1}
    assert concise.load(path) == written["per_id"] and all(concise.complete(e, []) for e in written["per_id"].values())
    assert concise.read(path, ReadSettings()).per_id == {i: {"concise": e["concise"]}
                                                         for i, e in written["per_id"].items()}


def test_options_come_from_the_config_entry_refused_in_one_line() -> None:
    concise = Concise()
    assert options_of(concise, {}) == ConciseOptions() and options_of(concise, {"max_words": 7}).max_words == 7
    assert record(options_of(concise, {"max_words": 7})) == {"max_words": 7}
    for entry, message in (({"max_words": 0}, "evaluators.concise.max_words=0: must be an integer >= 1"),
                           ({"max_word": 7}, "evaluators.concise.max_word: Key 'max_word' not in 'ConciseOptions'"),
                           ({"max_words": "many"}, "evaluators.concise.max_words: Value 'many' of type 'str' could "
                                                   "not be converted to Integer")):
        with pytest.raises(ConfigError) as refused:
            options_of(concise, entry)
        assert str(refused.value) == message


def test_a_verdicts_file_entry_is_its_entry_then_its_explanation() -> None:
    assert json.dumps(Verdict("t", {"concise": 1.0}, explanation="3 word(s) of 5").file_entry()) == \
        '{"concise": 1.0, "explanation": "3 word(s) of 5"}'
    assert Verdict("t", {"concise": 1.0}).file_entry() == {"concise": 1.0}
    with pytest.raises(ValueError, match="task t: not judged \\(no answer\\)"):
        Verdict[ConciseEntry]("t", error="no answer").file_entry()
