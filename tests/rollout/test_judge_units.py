"""The judges' arithmetic against plain Python oracles: reply parsing, the trimmed mean, the rates, the
judge file shapes the scoring side reads, and the agreement measures."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from rollout_helpers import ROOT, compose_judge

from engine.contract import InputError, canonical_json
from engine.evaluators.call_outcomes import read_callanalysis
from engine.evaluators.m3_judges import judge_values, read_taskcompletion, taskcompletion_document
from engine.judge_results import Joined, joined_aggregate
from engine.judging import (
    COMPLETION,
    GROUNDING,
    Question,
    agreement,
    completion_payload,
    grounding_payload,
    judges_agreement,
    krippendorff_alpha,
    parse_class,
    parse_score,
    trimmed_mean,
)


@pytest.mark.parametrize("reply, low, high, expected", [
    ("\\boxed{7}", 0, 10, 7.0),
    ("The plan is fine.\n\\boxed{ 8.5 }", 0, 10, 8.5),
    ("\\boxed{0.75} and later \\boxed{0.2}", 0, 1, 0.75),    # the first box
    ("I would give it 6 out of 10.", 0, 10, 6.0),             # no box: the first number
    ("0.5", 0, 1, 0.5),
    (".25", 0, 1, 0.25),
    ("\\boxed{1e-1}", 0, 1, 0.1),
    ("\\boxed{10}", 0, 10, 10.0),
    ("\\boxed{0}", 0, 1, 0.0),
])
def test_parse_score_accepts(reply: str, low: float, high: float, expected: float) -> None:
    assert parse_score(reply, low, high) == expected


@pytest.mark.parametrize("reply, low, high, problem", [
    ("Looks good to me.", 0, 10, "no \\boxed{number}"),
    ("", 0, 10, "no \\boxed{number}"),
    (None, 0, 1, "no \\boxed{number}"),
    ("\\boxed{12}", 0, 10, "out of range"),
    ("\\boxed{1.5}", 0, 1, "out of range"),
    ("\\boxed{-0.1}", 0, 1, "out of range"),
    ("\\boxed{8/10}", 0, 10, "not a number"),
    ("\\boxed{high}", 0, 10, "not a number"),
    ("\\boxed{nan}", 0, 10, "out of range"),
    ("score: 11", 0, 10, "out of range"),   # a bare number out of range is a failed attempt too
])
def test_parse_score_refuses(reply: str | None, low: float, high: float, problem: str) -> None:
    with pytest.raises(ValueError, match=problem.replace("\\", "\\\\").replace("{", "\\{").replace("}", "\\}")):
        parse_score(reply, low, high)


@pytest.mark.parametrize("reply, expected", [("4", 4), ("2\n", 2), ("Class 3.", 3), ("The answer is 1", 1)])
def test_parse_class(reply: str, expected: int) -> None:
    assert parse_class(reply) == expected


@pytest.mark.parametrize("reply", ["5", "42", "none of them", "2.5", ""])
def test_parse_class_refuses(reply: str) -> None:
    with pytest.raises(ValueError):
        parse_class(reply)


def test_rubrics_ask_for_the_published_ranges() -> None:
    assert (COMPLETION.low, COMPLETION.high, COMPLETION.scale) == (0, 10, 10)
    assert (GROUNDING.low, GROUNDING.high, GROUNDING.scale) == (0, 1, 1)
    assert "\\boxed{S}" in COMPLETION.system and "\\boxed{G}" in GROUNDING.system
    prediction = {"id": "t", "steps": [{"step": 1, "calls": [{"name": "a/b", "arguments": {}, "result": "r" * 50}]}],
                  "final_reply": "done", "dialogue": []}
    completion = completion_payload("Q?", prediction)
    assert set(completion) == {"question", "prediction"}  # Task Completion never sees the reference
    assert set(completion["prediction"]) == {"id", "steps", "final_reply"}
    grounding = grounding_payload("Q?", {"id": "t", "steps": [], "final_reply": "gt"}, prediction, max_result_chars=10)
    assert grounding["reference"] == {"id": "t", "steps": []}
    assert grounding["prediction"]["steps"][0]["calls"][0]["result"] == "r" * 10 + "... [40 more characters]"


def oracle_trimmed(scores: list[float]) -> float:
    """The published rule written out: sort, drop one lowest and one highest when there are 3 or more."""
    ordered = sorted(scores)
    if len(ordered) >= 3:
        ordered = ordered[1:len(ordered) - 1]
    total = 0.0
    for value in ordered:
        total += value
    return total / len(ordered)


scores = st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=7)


@given(scores)
def test_trimmed_mean_matches_the_oracle(values: list[float]) -> None:
    assert trimmed_mean(values) == oracle_trimmed(values)


def test_trimmed_mean_examples() -> None:
    assert trimmed_mean([0.8, 0.6, 0.9, 0.7]) == pytest.approx(0.75)
    assert trimmed_mean([0.2, 1.0]) == pytest.approx(0.6)       # two judges: the plain mean
    assert trimmed_mean([0.3, 0.3, 0.9]) == 0.3                  # three: the median
    with pytest.raises(ValueError):
        trimmed_mean([])


@given(st.lists(st.tuples(scores, scores), min_size=0, max_size=8), st.integers(0, 5))
def test_rates_are_means_over_judged_tasks(tasks: list[tuple[list[float], list[float]]], unjudged: int) -> None:
    entries = {f"t{i}": {"final": trimmed_mean(tc), "judges": [],
                         "info_grounding": {"final": trimmed_mean(ig), "judges": []}}
               for i, (tc, ig) in enumerate(tasks)}
    document = taskcompletion_document(entries, len(tasks) + unjudged)
    aggregate = document["aggregate"]
    assert aggregate["num_total"] == len(tasks) + unjudged and aggregate["num_scored"] == len(tasks)
    if not tasks:
        assert aggregate["completion_rate"] is None and aggregate["information_grounding_rate"] is None
        return
    finals = [oracle_trimmed(tc) for tc, _ in tasks]
    assert aggregate["completion_rate"] == sum(finals) / len(finals)
    groundings = [oracle_trimmed(ig) for _, ig in tasks]
    assert aggregate["information_grounding_rate"] == sum(groundings) / len(groundings)


def write(path, value):
    path.write_text(json.dumps(value))
    return path


def test_published_taskcompletion_file(tmp_path) -> None:
    published = {"aggregate": {"num_total": 3, "num_scored": 2, "completion_rate": 0.6,
                               "information_grounding_rate": 0.5},
                 "pre_id": {"a": {"final": 0.8, "judges": [{"name": "gpt-5-mini", "score": 0.8}],
                                  "info_grounding": {"final": 0.5, "judges": [{"name": "gpt-5-mini", "score": 0.5}]}},
                            "b": 0.4}}  # the published reader's legacy entry: a bare Task Completion
    entries = read_taskcompletion(write(tmp_path / "tc.json", published))
    assert judge_values(entries) == {"a": {"task_completion": 0.8, "information_grounding": 0.5},
                                     "b": {"task_completion": 0.4}}
    spelled = {"per_id": published["pre_id"]}
    assert read_taskcompletion(write(tmp_path / "per.json", spelled)) == entries
    listed = [{"id": "a", "task_completion": 0.8, "information_grounding": 0.5}]
    assert judge_values(read_taskcompletion(write(tmp_path / "list.json", listed))) == {
        "a": {"task_completion": 0.8, "information_grounding": 0.5}}


@pytest.mark.parametrize("content, where", [
    ({"pre_id": {"a": {"final": 1.2}}}, "id a: field 'final'"),
    ({"pre_id": {"a": {"final": 0.5, "info_grounding": {"final": "high"}}}}, "id a: field 'info_grounding.final'"),
    ({"pre_id": {"a": "yes"}}, "id a: must be an object"),
    ({"pre_id": []}, "field 'pre_id'"),
    ([{"id": "x", "task_completion": 0.5}], "id x: field 'information_grounding'"),
    ([{"task_completion": 0.5}], "id #0: field 'id'"),
])
def test_bad_judge_files_are_one_line(tmp_path, content, where) -> None:
    path = write(tmp_path / "bad.json", content)
    with pytest.raises(InputError) as info:
        read_taskcompletion(path)
    assert str(info.value).startswith(f"{path}: {where}") and "\n" not in str(info.value)


def test_callanalysis_totals_and_per_id(tmp_path) -> None:
    published = {"illegal_calling": 2, "unknown_tool": 1, "invalid_arguments": 3, "resource_not_found": 0,
                 "success": 9}
    joined = read_callanalysis(write(tmp_path / "c.json", published))
    assert joined.per_id == {} and joined.totals == published
    assert joined_aggregate(joined, ["x"]) == published and joined_aggregate(joined, ["x"], totals=False) == {}
    zero = dict.fromkeys(published, 0)
    per_id = {"a": {**zero, "success": 2}, "b": {**zero, "unknown_tool": 1}}
    joined = read_callanalysis(write(tmp_path / "c2.json", {**published, "per_id": per_id}))
    assert joined_aggregate(joined, ["a"])["success"] == 2 and joined_aggregate(joined, ["a", "b"])["unknown_tool"] == 1
    with pytest.raises(InputError, match="field 'success': must be a count"):
        read_callanalysis(write(tmp_path / "bad.json", {**published, "success": -1}))


def test_joined_means_skip_unjudged_tasks() -> None:
    joined = Joined(per_id={"a": {"task_completion": 0.5, "information_grounding": 1.0},
                            "b": {"task_completion": 0.25}})
    assert joined_aggregate(joined, ["a", "b", "c"]) == {"task_completion": 0.375, "information_grounding": 1.0}


def test_agreement_measures() -> None:
    matrix = np.array([[0.1, 0.5, 0.9, 0.3], [0.2, 0.6, 0.8, np.nan], [0.9, 0.1, 0.5, 0.5]])
    from scipy.stats import spearmanr

    pairs = {(p.first, p.second): p for p in agreement(matrix, "interval", ["t1", "t2", "t3", "t4"]).pairs}
    assert pairs[(0, 1)].items == 3
    assert pairs[(0, 1)].value == pytest.approx(spearmanr([0.1, 0.5, 0.9], [0.2, 0.6, 0.8]).statistic)
    assert pairs[(0, 2)].value == pytest.approx(spearmanr(matrix[0], matrix[2]).statistic)
    alpha = krippendorff_alpha(matrix, "interval")
    assert alpha is not None and -1.0 <= alpha < 0.5
    assert krippendorff_alpha(np.array([[0.5, 0.5], [0.5, 0.5]]), "interval") is None       # no variation: undefined
    assert krippendorff_alpha(np.array([[0.1, 0.9], [0.1, 0.9]]), "interval") == pytest.approx(1.0)
    entries = {"t1": {"final": 0.5, "judges": [{"name": "a", "score": 0.1}, {"name": "b", "score": 0.9}]},
               "t2": {"final": 0.5, "judges": [{"name": "a", "score": 0.4}, {"name": "b", "score": 0.5}]}}
    result = judges_agreement(entries, top=1)
    assert result["task_completion"]["most_disagreed"][0]["id"] == "t1"
    grounding = result["information_grounding"]
    assert grounding["tasks"] == 0 and grounding["krippendorff_alpha"] is None
    assert all(math.isfinite(p["rho"]) for p in result["task_completion"]["spearman"])


def test_pool_config_errors_name_the_setting() -> None:
    from rollout.judges.pool import judge_specs

    judge = {"provider": "openai", "api_name": "m"}
    with pytest.raises(InputError, match="field 'judges.pool.b.api_name': another judge of the pool asks for 'm'"):
        judge_specs({"a": judge, "b": judge})
    with pytest.raises(InputError, match="field 'judges.pool.a.provider': unknown provider 'nope'"):
        judge_specs({"a": {"provider": "nope"}})
    with pytest.raises(InputError, match="field 'judges.pool.a.price.input'"):
        judge_specs({"a": {**judge, "price": {"input": -1}}})
    with pytest.raises(InputError, match="field 'judges.pool': the judge pool is empty"):
        judge_specs({})
    (spec,) = judge_specs({"a": {**judge, "params": {"temperature": 0}, "base_url": "http://x", "timeout": 5}})
    assert spec.identity == {"provider": "openai", "model": "m", "params": {"temperature": 0}}


def test_a_missing_key_names_the_judge(tmp_path, monkeypatch) -> None:
    import asyncio

    from rollout.judges.cache import ReplyCache
    from rollout.judges.pool import JudgePool, judge_specs

    monkeypatch.delenv("M3_JUDGE_TEST_KEY", raising=False)
    specs = judge_specs({"j": {"provider": "openai", "api_name": "m", "api_key_env": "M3_JUDGE_TEST_KEY"}})
    pool = JudgePool(specs, ReplyCache(tmp_path))
    with pytest.raises(InputError, match="field 'judges.pool.j.api_key_env': environment variable M3_JUDGE_TEST_KEY"):
        asyncio.run(pool.ask(specs[0], Question(COMPLETION, {"question": "q"}), 1))


TRANSPORT_BEFORE = frozenset({"provider", "name", "api_name", "base_url", "api_key_env", "timeout", "max_retries",
                              "backoff", "price", "delay", "image_max_side", "json_mode"})
"""What a judge's identity left out when pools were read as plain mappings: where and how it is reached."""


@pytest.mark.parametrize("pool", sorted(p.stem for p in (ROOT / "conf" / "judge" / "judges").glob("*.yaml")))
def test_a_shipped_judge_keeps_the_identity_its_cached_replies_are_keyed_by(pool: str) -> None:
    """Each judge of a shipped pool (and its classifier), read into the typed pool, has the identity it had when
    the pool was its YAML as a mapping (provider, model, every setting it gives but those of where and how it
    is reached): its cached replies and the input keys of its verdicts are found again."""
    from rollout.judges.cache import reply_key
    from rollout.judges.pool import judge_specs

    given = yaml.safe_load((ROOT / "conf" / "judge" / "judges" / f"{pool}.yaml").read_text(encoding="utf-8"))
    judges = compose_judge(f"judges={pool}").judges
    typed = {**judges.pool, **({"classifier": judges.classifier} if judges.classifier is not None else {})}
    entries = {**given["pool"], **({"classifier": given["classifier"]} if "classifier" in given else {})}
    assert list(typed) == list(entries)
    for name, entry in entries.items():
        (spec,) = judge_specs({name: typed[name]})
        before = {"provider": entry["provider"], "model": entry.get("api_name") or name,
                  **{k: v for k, v in entry.items() if k not in TRANSPORT_BEFORE}}
        assert canonical_json(spec.identity) == canonical_json(before), (pool, name)
        assert reply_key(spec.identity, COMPLETION, "p", 1) == reply_key(before, COMPLETION, "p", 1)
