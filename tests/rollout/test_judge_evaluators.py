"""The judge app's generic path: an evaluator with a `judge` function, asked about every task with what
it reads, its file written after every task and resumed by a rerun; the configured evaluators."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, replace

import pytest
from rollout_helpers import ROOT, compose_judge

from engine.contract import ConfigError, InputError, read_trajectories
from engine.evaluators.base import Metric, TaskInputs
from engine.evaluators.protocol import Card, EvaluatorOptions, JudgeContext, Plain, ReadSettings, Verdict
from engine.judging import COMPLETION, Question, completion_payload, first_answer, parse_score
from rollout.judges.run import configured, evaluator_stage
from rollout.judges.verdicts import check_judged

SEEN: list[tuple[str, bool, bool, str | None]] = []


@dataclass
class ProbeOptions(EvaluatorOptions):
    scale: int | None = None


class Probe(Plain[dict, ProbeOptions]):
    card = Card(name="probe", reads=frozenset({"prediction", "final_answer", "reference", "task"}),
                metrics=(Metric("probe_score", "Probe", "probe", ("reference", "paper"), "judged_mean", False,
                                False, 0.0, 1.0),), suffix="probe")
    options_type = ProbeOptions

    async def verdict(self, ctx: JudgeContext[ProbeOptions], task: TaskInputs) -> Verdict[dict]:
        SEEN.append((task.task_id, task.reference is not None, task.task is not None, task.final_answer))
        question = Question(COMPLETION, completion_payload(task.task["question"], task.prediction.raw))
        spec = ctx.pool.specs[0]
        score = await first_answer(ctx.pool, spec, question, ctx.attempts, lambda r: parse_score(r, 0.0, 10.0))
        return Verdict(task.task_id, {"probe_score": score / 10.0, "scale": ctx.options.scale})


PROBE = Probe()


def test_an_evaluator_judges_every_task_and_resumes(tmp_path):
    reference = ROOT / "rollout" / "demo" / "reference.json"
    cfg = compose_judge("judges=scripted", "data=rollout_demo", f"predictions={reference}",
                        f"cache_dir={tmp_path / 'cache'}", f"results_dir={tmp_path}", "+evaluators.probe.scale=2")
    preds = read_trajectories(reference)
    out = tmp_path / "probe.json"
    SEEN.clear()
    assert asyncio.run(evaluator_stage(cfg, PROBE, preds, preds, out)) == 0
    written = json.loads(out.read_text())
    assert list(written["per_id"]) == list(preds.tasks)
    assert all(0.0 <= e["probe_score"] <= 1.0 and e["scale"] == 2 for e in written["per_id"].values())
    assert written["meta"]["format"] == {"name": "m3bench.probe", "version": 1}
    assert PROBE.read(out, ReadSettings()).per_id == {i: {"probe_score": e["probe_score"]}
                                                      for i, e in written["per_id"].items()}
    assert sorted(s[0] for s in SEEN) == sorted(preds.tasks) and all(s[1] and s[2] and s[3] for s in SEEN)
    assert sum(u["requests"] for u in written["meta"]["usage"].values()) == len(preds.tasks)
    SEEN.clear()
    assert asyncio.run(evaluator_stage(cfg, PROBE, preds, preds, out)) == 0  # resumed: nothing left to ask
    assert SEEN == [] and json.loads(out.read_text())["per_id"] == written["per_id"]


def test_the_configured_evaluators():
    cfg = compose_judge("judges=scripted", "data=rollout_demo")
    assert [e.card.name for e in configured(cfg)] == ["m3_judges", "call_outcomes"]
    assert [e.card.name for e in configured(replace(cfg, stage="calls"))] == ["call_outcomes"]
    assert [e.card.name for e in configured(compose_judge("evaluators=[call_outcomes]"))] == ["call_outcomes"]
    with pytest.raises(ConfigError, match="^stage=nope: must be one of both, judge, calls, m3_judges, call_outcomes "):
        compose_judge("judges=scripted", "data=rollout_demo", "stage=nope")
    assert [e.card.name for e in configured(replace(cfg, stage="judge"))] == ["m3_judges"]
    with pytest.raises(InputError, match="field 'evaluators.nope': unknown evaluator 'nope'"):
        configured(replace(cfg, evaluators={"nope": {}}))


class Half(Plain[dict, EvaluatorOptions]):
    card = Card(name="half", reads=frozenset({"prediction"}), suffix="half", uses_pool=False,
                metrics=(Metric("half", "Half", "half", ("reference", "paper"), "judged_mean", False, False,
                                0.0, 1.0),))
    options_type = EvaluatorOptions

    async def verdict(self, ctx: JudgeContext[EvaluatorOptions], task: TaskInputs) -> Verdict[dict]:
        if task.task_id.endswith(("1", "3", "5", "7", "9")):
            return Verdict(task.task_id, error="no verdict for odd ids")
        return Verdict(task.task_id, {"half": 1.0})


HALF = Half()


def test_a_verdict_with_an_error_is_a_failure_the_rerun_asks_again(tmp_path):
    reference = ROOT / "rollout" / "demo" / "reference.json"
    cfg = compose_judge("judges=scripted", "data=rollout_demo", f"predictions={reference}", f"results_dir={tmp_path}")
    preds = read_trajectories(reference)
    odd = [i for i in preds.tasks if i.endswith(("1", "3", "5", "7", "9"))]
    assert odd and len(odd) < len(preds.tasks)
    out = tmp_path / "half.json"
    assert asyncio.run(evaluator_stage(cfg, HALF, preds, None, out)) == 1
    written = json.loads(out.read_text())
    assert written["meta"]["failed"] == {i: "no verdict for odd ids" for i in odd}
    assert set(written["per_id"]) == set(preds.tasks) - set(odd)
    assert set(written["meta"]["input_keys"]) == set(written["per_id"])
    class Fileless(Half):
        card = Card(name="half", reads=frozenset(), metrics=())

    with pytest.raises(InputError, match="half has nothing to judge"):
        check_judged(Fileless())
