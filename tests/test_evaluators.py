"""The evaluator registry, the metric table built from it, and the score side's evaluator files."""

from __future__ import annotations

import json

import pytest

import engine.judge_results as joining
from engine.contract import JsonObject, TrajectoryFile, read_trajectories
from engine.evaluators import evaluator, evaluators, names
from engine.evaluators.base import Metric, Verdicts
from engine.evaluators.protocol import Card, EvaluatorOptions, Plain
from engine.judge_results import Joined, joined_files, load_joined
from engine.metricspec import BY_KEY, EVALUATOR_KEYS, METRICS, evaluator_columns, metric_value


def test_the_registry_loads_evaluators_by_module_name():
    assert {"m3_judges", "call_outcomes"} <= set(names())
    assert [e.card.name for e in evaluators()][:2] == ["m3_judges", "call_outcomes"]
    judges = evaluator("m3_judges").card
    assert judges.suffix == "taskcompletion" and judges.option_name == "judge"
    calls = evaluator("call_outcomes").card
    assert calls.suffix == "callanalysis" and calls.option_name == "calls"
    with pytest.raises(ValueError, match="unknown evaluator 'nope'; expected one of .*m3_judges"):
        evaluator("nope")


def test_the_metric_table_is_the_core_then_the_evaluators():
    keys = [m.key for m in METRICS]
    assert keys[:8] == ["recall", "precision", "avg_sim_all_cov", "avg_sim_strong_cov", "arg_sim",
                        "step_coherence_cov", "order_consistency_cov", "merge_purity_cov"]
    assert keys[-2:] == ["avg_Rounds", "avg_tool_calls"]
    assert EVALUATOR_KEYS[:7] == ("task_completion", "information_grounding", "illegal_calling", "unknown_tool",
                                  "invalid_arguments", "resource_not_found", "success")
    assert BY_KEY["task_completion"].source == "m3_judges" and BY_KEY["success"].source == "call_outcomes"
    assert [c.label for c in evaluator_columns()] == ["Task Completion", "Information Grounding",
                                                      "Average Rubric Score", "Average Pass Rate"]


def test_the_registry_holds_every_evaluator_in_table_order():
    cards = [e.card for e in evaluators()]
    assert [c.name for c in cards] == ["m3_judges", "call_outcomes", "vtb_rubrics", "tool_use",
                                       "answer_equivalence", "verifiers"]
    assert evaluator("vtb_rubrics").card.option_name == "rubrics" and evaluator("tool_use").card.suffix is None
    assert [c.name for c in cards if c.all_tasks] == ["answer_equivalence", "verifiers"]
    assert [c.name for c in cards if c.suffix is not None and not c.uses_pool] == ["verifiers"]


def test_a_dotted_key_names_a_nested_value():
    block = {"tool_use": {"proactivity": 0.5, "volume": 2.0}, "recall": 1.0}
    assert metric_value(block, "tool_use.proactivity") == 0.5 and metric_value(block, "recall") == 1.0
    assert metric_value(block, "tool_use.success_rate") is None and metric_value(block, "recall.x") is None


def test_an_evaluator_declares_consistently():
    row = Metric("x", "X", "other", ("reference",), "sum", False, False)
    with pytest.raises(ValueError, match="must have source 'mine'"):
        Card(name="mine", reads=frozenset({"prediction"}), metrics=(row,))
    with pytest.raises(ValueError, match="unknown input"):
        Card(name="mine", reads=frozenset({"mood"}), metrics=())  # type: ignore[arg-type]


def test_files_are_found_by_suffix_or_named_by_option(tmp_path):
    preds = tmp_path / "m_test_mcp_fuzzy.json"
    judged = tmp_path / "m_test_mcp_fuzzy_taskcompletion.json"
    judged.write_text(json.dumps({"pre_id": {"a": {"final": 0.5, "judges": []}}}))
    found = joined_files(preds)
    assert dict(found.files) == {"m3_judges": judged} and found.meta() == {"judge": str(judged)}
    calls = tmp_path / "elsewhere.json"
    calls.write_text(json.dumps({"illegal_calling": 1, "unknown_tool": 0, "invalid_arguments": 0,
                                 "resource_not_found": 0, "success": 3}))
    named = joined_files(preds, {"calls": str(calls)})
    assert named.meta() == {"judge": str(judged), "calls": str(calls)}
    joined = load_joined(named)
    assert isinstance(joined, Joined)
    assert joined.per_id == {"a": {"task_completion": 0.5}} and joined.totals["success"] == 3
    assert joined.expected == [(str(judged), ("task_completion", "information_grounding"))]
    assert load_joined(joined_files(tmp_path / "other.json")) is None


class Probe(Plain[dict, EvaluatorOptions]):
    """Calls per task, computed from the predictions, with a nested aggregate of its own."""

    card = Card(name="probe", reads=frozenset({"prediction"}),
                metrics=(Metric("probe.calls", "Probe Calls", "probe", ("reference", "paper"), "evaluator", False,
                                False, 0.0),))
    options_type = EvaluatorOptions

    def compute(self, predictions: TrajectoryFile) -> Verdicts:
        return Verdicts(per_id={tid: {"probe": {"calls": sum(len(s.calls) for s in t.steps)}}
                                for tid, t in predictions.tasks.items()})

    def aggregate(self, verdicts: Verdicts, ids) -> JsonObject:
        calls = [verdicts.per_id[i]["probe"]["calls"] for i in ids if i in verdicts.per_id]
        return {"probe": {"calls": sum(calls), "tasks": len(calls)}}


PROBE = Probe()


def test_a_computed_evaluator_joins_with_its_own_nested_aggregate(tmp_path, monkeypatch):
    monkeypatch.setattr(joining, "evaluators", lambda: (*evaluators(), PROBE))
    preds = tmp_path / "p.json"
    preds.write_text(json.dumps([{"id": "a", "steps": [{"step": 1, "calls": [{"name": "s/t", "arguments": {}}] * 2}]},
                                 {"id": "b", "steps": []}]))
    joined = load_joined(joined_files(preds), read_trajectories(preds))
    assert joined is not None and joined.expected == [] and joined.keys() == []
    assert joining.joined_aggregate(joined, ["a", "b"])["probe"] == {"calls": 2, "tasks": 2}
    assert joining.joined_aggregate(joined, ["b"], totals=False)["probe"] == {"calls": 0, "tasks": 1}
    # beside the registry's own computed evaluator (tool_use), whose nested aggregate joins the same way
    assert joining.joined_aggregate(joined, ["a", "b"])["tool_use"] == {"proactivity": 0.5, "success_rate": 1.0,
                                                                        "success_rate_flagged": None, "volume": 1.0}
