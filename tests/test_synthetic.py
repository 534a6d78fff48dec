"""Tests for the synthetic trajectory generator (engine/synthetic.py)."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.synthetic import (
    PROFILES,
    ErrorProfile,
    demo_models,
    make_reference,
    perturb,
    scale_predictions,
    write_demo,
)

FAMILIES = {
    "itemsprice", "attraction", "weather_trip", "paper_research", "crypto", "medical",
    "spreadsheet_report", "image_edit", "maps", "movies", "nutrition", "stocks",
}


@pytest.fixture(scope="module")
def reference() -> list[dict]:
    return make_reference(120, seed=7)


def calls_of(task: dict) -> list[dict]:
    return [call for step in task["steps"] for call in step["calls"]]


def n_calls(tasks: list[dict]) -> int:
    return sum(len(calls_of(task)) for task in tasks)


def core(call: dict) -> tuple[str, str]:
    return call["name"], json.dumps(call.get("arguments"), sort_keys=True)


def leaves(value, path=()):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from leaves(v, path + (i,))
    else:
        yield path, value


def assert_valid(tasks: list[dict], prediction: bool) -> None:
    ids = [task["id"] for task in tasks]
    assert len(ids) == len(set(ids))
    for task in tasks:
        assert re.fullmatch(r"\d{8}", task["id"])
        assert task["type"] in FAMILIES
        assert task["image"].endswith(".png")
        assert isinstance(task["question"], str) and task["question"]
        assert isinstance(task["final_reply"], str)
        assert [step["step"] for step in task["steps"]] == list(range(1, len(task["steps"]) + 1))
        assert task["num_step"] == len(task["steps"])
        assert task["max_num_concurrent"] == max((len(s["calls"]) for s in task["steps"]), default=0)
        for step in task["steps"]:
            assert step["calls"], "empty steps must be removed"
            for call in step["calls"]:
                server, _, tool = call["name"].partition("/")
                assert server and tool
                if "arguments" in call:
                    assert isinstance(call["arguments"], dict)
                if prediction:
                    assert isinstance(call["result"], str)
                else:
                    assert "result" not in call
    assert json.loads(json.dumps(tasks, ensure_ascii=False)) == tasks


# ---------------------------------------------------------------- reference


def test_reference_is_deterministic() -> None:
    assert make_reference(40, seed=3) == make_reference(40, seed=3)
    assert make_reference(40, seed=3) != make_reference(40, seed=4)


def test_reference_format(reference: list[dict]) -> None:
    assert_valid(reference, prediction=False)
    assert [t["id"] for t in reference] == [f"{i:08d}" for i in range(len(reference))]
    assert all(2 <= t["num_step"] <= 5 for t in reference)
    assert make_reference(0) == []


def test_reference_looks_realistic() -> None:
    ref = make_reference(400, seed=1)
    assert {t["type"] for t in ref} == FAMILIES
    sizes = [len(calls_of(t)) for t in ref]
    assert min(sizes) >= 1 and max(sizes) <= 29
    assert 3 <= sorted(sizes)[len(sizes) // 2] <= 8
    calls = [c for t in ref for c in calls_of(t)]
    assert any("arguments" not in c for c in calls)
    assert any(len({c["name"] for c in s["calls"]}) < len(s["calls"]) for t in ref for s in t["steps"])
    assert any(isinstance(v, (dict, list)) for c in calls for v in c.get("arguments", {}).values())
    text = json.dumps(ref, ensure_ascii=False)
    assert any(ord(ch) > 127 for ch in text)
    # Arguments of one tool vary across tasks.
    keywords = {c["arguments"]["keywords"] for c in calls if c["name"] == "shop/search_products"}
    assert len(keywords) > 5
    # Several servers, several tools per server.
    servers = Counter(c["name"].split("/")[0] for c in calls)
    assert len(servers) >= 10
    assert len({c["name"] for c in calls}) >= 30


# ---------------------------------------------------------------- profiles


def test_error_profile_validation() -> None:
    with pytest.raises(ValueError):
        ErrorProfile(drop=1.5)
    with pytest.raises(ValueError):
        ErrorProfile(swap=-0.1)
    with pytest.raises(ValueError):
        ErrorProfile(drift=0.7, strong_drift=0.6)
    with pytest.raises(dataclasses.FrozenInstanceError):
        PROFILES["weak"].drop = 0.0  # type: ignore[misc]
    assert {"perfect", "strong", "medium", "weak", "chaotic"} <= set(PROFILES)
    assert all(getattr(PROFILES["perfect"], f.name) == 0 for f in dataclasses.fields(ErrorProfile))


def test_demo_models() -> None:
    models = demo_models()
    assert 4 <= len(models) <= 5
    assert all(isinstance(p, ErrorProfile) for p in models.values())
    assert all(name.startswith("demo_") for name in models)


def test_demo_models_answer_every_task(tmp_path: Path) -> None:
    """Scoring the demo warns of no id without a prediction: every model file holds every reference id."""
    gt_path, model_paths = write_demo(tmp_path, n_tasks=60)
    ids = [t["id"] for t in json.loads(gt_path.read_text(encoding="utf-8"))]
    for name, path in model_paths.items():
        assert [t["id"] for t in json.loads(path.read_text(encoding="utf-8"))] == ids, name


def exact_call_rate(reference: list[dict], predictions: list[dict]) -> float:
    by_id = {t["id"]: t for t in predictions}
    hits = total = 0
    for task in reference:
        ref_calls = Counter(core(c) for c in calls_of(task))
        total += sum(ref_calls.values())
        if task["id"] in by_id:
            hits += sum((ref_calls & Counter(core(c) for c in calls_of(by_id[task["id"]]))).values())
    return hits / total


def test_profiles_are_ordered_by_quality(reference: list[dict]) -> None:
    rates = [exact_call_rate(reference, perturb(reference, PROFILES[k], seed=5))
             for k in ("perfect", "strong", "medium", "weak", "chaotic")]
    assert rates[0] == 1.0
    assert rates == sorted(rates, reverse=True)
    assert rates[-1] < 0.5


# ---------------------------------------------------------------- perturb


def test_perturb_deterministic_and_seeded(reference: list[dict]) -> None:
    a = perturb(reference, PROFILES["medium"], seed=11)
    assert a == perturb(reference, PROFILES["medium"], seed=11)
    assert a != perturb(reference, PROFILES["medium"], seed=12)


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_perturb_format(reference: list[dict], name: str) -> None:
    preds = perturb(reference, PROFILES[name], seed=2)
    assert_valid(preds, prediction=True)
    ref_ids = [t["id"] for t in reference]
    pred_ids = [t["id"] for t in preds]
    assert pred_ids == [i for i in ref_ids if i in set(pred_ids)]


def test_perfect_profile_reproduces_reference(reference: list[dict]) -> None:
    preds = perturb(reference, PROFILES["perfect"], seed=9)
    assert [t["id"] for t in preds] == [t["id"] for t in reference]
    for ref, pred in zip(reference, preds):
        assert [[core(c) for c in s["calls"]] for s in ref["steps"]] == \
               [[core(c) for c in s["calls"]] for s in pred["steps"]]
        assert pred["final_reply"] == ref["final_reply"]
        assert pred["type"] == ref["type"] and pred["question"] == ref["question"]


def test_perturb_does_not_mutate_or_alias_input(reference: list[dict]) -> None:
    snapshot = copy.deepcopy(reference)
    everything = ErrorProfile(drop=0.3, extra=0.5, drift=0.4, strong_drift=0.4, wrong_tool=0.5,
                              split=0.5, merge=0.5, swap=0.5, missing_task=0.2)
    for profile in [*PROFILES.values(), everything]:
        preds = perturb(reference, profile, seed=1)
        for task in preds:
            task["steps"].append({"step": 99, "calls": []})
            for call in calls_of(task):
                call["name"] = "x/y"
                args = call.get("arguments", {})
                for v in args.values():
                    if isinstance(v, (dict, list)):
                        v.clear()
                args["poison"] = 1
    assert reference == snapshot


def test_drop_everything(reference: list[dict]) -> None:
    preds = perturb(reference, ErrorProfile(drop=1.0), seed=0)
    assert len(preds) == len(reference)
    assert n_calls(preds) == 0
    assert all(t["num_step"] == 0 and t["max_num_concurrent"] == 0 for t in preds)


def test_drop_rate_is_respected(reference: list[dict]) -> None:
    preds = perturb(reference, ErrorProfile(drop=0.5), seed=0)
    assert 0.4 < n_calls(preds) / n_calls(reference) < 0.6


def test_extra_adds_calls(reference: list[dict]) -> None:
    preds = perturb(reference, ErrorProfile(extra=1.0), seed=0)
    assert n_calls(preds) == 2 * n_calls(reference)
    # Every reference call survives untouched; the additions are the spurious ones.
    for ref, pred in zip(reference, preds):
        assert not Counter(core(c) for c in calls_of(ref)) - Counter(core(c) for c in calls_of(pred))


def test_split_grows_step_count(reference: list[dict]) -> None:
    preds = perturb(reference, ErrorProfile(split=1.0), seed=0)
    for ref, pred in zip(reference, preds):
        multi = sum(len(s["calls"]) > 1 for s in ref["steps"])
        assert pred["num_step"] == ref["num_step"] + multi
        assert [core(c) for c in calls_of(pred)] == [core(c) for c in calls_of(ref)]
    assert sum(t["num_step"] for t in preds) > sum(t["num_step"] for t in reference)


def test_merge_shrinks_step_count(reference: list[dict]) -> None:
    preds = perturb(reference, ErrorProfile(merge=1.0), seed=0)
    assert all(t["num_step"] == 1 for t in preds)
    assert sum(t["num_step"] for t in preds) < sum(t["num_step"] for t in reference)
    for ref, pred in zip(reference, preds):
        assert [core(c) for c in calls_of(pred)] == [core(c) for c in calls_of(ref)]


def test_swap_exchanges_steps(reference: list[dict]) -> None:
    preds = perturb(reference, ErrorProfile(swap=1.0), seed=0)
    for ref, pred in zip(reference, preds):
        assert pred["num_step"] == ref["num_step"]
        ref_steps = [[core(c) for c in s["calls"]] for s in ref["steps"]]
        pred_steps = [[core(c) for c in s["calls"]] for s in pred["steps"]]
        assert pred_steps[0] == ref_steps[1] and pred_steps[1] == ref_steps[0]


def test_wrong_tool_renames_every_call(reference: list[dict]) -> None:
    preds = perturb(reference, ErrorProfile(wrong_tool=1.0), seed=0)
    same_server = other_server = 0
    for ref, pred in zip(reference, preds):
        for rc, pc in zip(calls_of(ref), calls_of(pred), strict=True):
            assert pc["name"] != rc["name"]
            assert pc.get("arguments") == rc.get("arguments")
            if pc["name"].split("/")[0] == rc["name"].split("/")[0]:
                same_server += 1
            else:
                other_server += 1
    assert same_server > 0 and other_server > 0


def test_missing_tasks(reference: list[dict]) -> None:
    assert perturb(reference, ErrorProfile(missing_task=1.0), seed=0) == []
    preds = perturb(reference, ErrorProfile(missing_task=0.5), seed=0)
    assert 0.3 * len(reference) < len(preds) < 0.7 * len(reference)
    assert {t["id"] for t in preds} < {t["id"] for t in reference}


def changed_leaves(ref_args: dict, pred_args: dict) -> tuple[int, int]:
    ref_leaves = dict(leaves(ref_args))
    pred_leaves = dict(leaves(pred_args))
    assert ref_leaves.keys() == pred_leaves.keys(), "drift keeps the argument structure"
    return sum(ref_leaves[k] != pred_leaves[k] for k in ref_leaves), len(ref_leaves)


@pytest.mark.parametrize("strong", [False, True])
def test_drift_changes_arguments_keeps_tools(reference: list[dict], strong: bool) -> None:
    profile = ErrorProfile(strong_drift=1.0) if strong else ErrorProfile(drift=1.0)
    preds = perturb(reference, profile, seed=0)
    changed_calls = with_args = multi_leaf = multi_changed = 0
    fractions = []
    for ref, pred in zip(reference, preds):
        assert [s["step"] for s in pred["steps"]] == [s["step"] for s in ref["steps"]]
        for rc, pc in zip(calls_of(ref), calls_of(pred), strict=True):
            assert pc["name"] == rc["name"]
            if not rc.get("arguments"):
                continue
            with_args += 1
            n_changed, n_leaves = changed_leaves(rc["arguments"], pc["arguments"])
            changed_calls += n_changed > 0
            fractions.append(n_changed / n_leaves)
            if n_leaves >= 3:
                multi_leaf += 1
                multi_changed += n_changed >= 2
            if not strong:
                assert n_changed <= 1
    assert changed_calls >= 0.97 * with_args
    if strong:
        assert multi_changed >= 0.9 * multi_leaf
        assert sum(fractions) / len(fractions) > 0.5
        assert len({round(f, 1) for f in fractions}) >= 5, "similarities should spread"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rates=st.lists(st.floats(0.0, 1.0), min_size=9, max_size=9),
    seed=st.integers(0, 2**32),
)
def test_random_profiles_give_valid_predictions(reference: list[dict], rates: list[float], seed: int) -> None:
    drift, strong = rates[2] / 2, rates[3] / 2
    profile = ErrorProfile(rates[0], rates[1], drift, strong, *rates[4:])
    ref = reference[:25]
    snapshot = copy.deepcopy(ref)
    preds = perturb(ref, profile, seed=seed)
    assert_valid(preds, prediction=True)
    assert ref == snapshot


# ---------------------------------------------------------------- demo files


def test_write_demo_writes_parseable_files_and_is_idempotent(tmp_path: Path) -> None:
    gt_path, model_paths = write_demo(tmp_path / "demo", n_tasks=20, seed=4)
    assert gt_path == tmp_path / "demo" / "reference.json"
    assert set(model_paths) == set(demo_models())
    reference = json.loads(gt_path.read_text(encoding="utf-8"))
    assert reference == make_reference(20, seed=4)
    for name, path in model_paths.items():
        assert path == tmp_path / "demo" / f"{name}.json"
        preds = json.loads(path.read_text(encoding="utf-8"))
        assert_valid(preds, prediction=True)
        assert {t["id"] for t in preds} <= {t["id"] for t in reference}
    files = sorted(p.name for p in (tmp_path / "demo").iterdir())
    assert files == sorted(["reference.json", *(f"{n}.json" for n in model_paths)]), "no temp files left"

    stamps = {p: p.stat().st_mtime_ns for p in [gt_path, *model_paths.values()]}
    contents = {p: p.read_bytes() for p in stamps}
    assert write_demo(tmp_path / "demo", n_tasks=20, seed=4) == (gt_path, model_paths)
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps
    assert {p: p.read_bytes() for p in stamps} == contents

    write_demo(tmp_path / "demo", n_tasks=21, seed=4)
    assert len(json.loads(gt_path.read_text(encoding="utf-8"))) == 21


def test_demo_models_differ_in_quality(tmp_path: Path) -> None:
    gt_path, model_paths = write_demo(tmp_path, n_tasks=60)
    reference = json.loads(gt_path.read_text(encoding="utf-8"))
    rates = {name: exact_call_rate(reference, json.loads(p.read_text(encoding="utf-8")))
             for name, p in model_paths.items()}
    assert rates["demo_strong"] > rates["demo_medium"] > rates["demo_weak"] > rates["demo_chaotic"]


# ---------------------------------------------------------------- scale


@pytest.mark.parametrize("target", [300, 5_000, 23_456])
def test_scale_predictions_reaches_target(reference: list[dict], target: int) -> None:
    files = scale_predictions(reference, target, seed=3)
    total = sum(n_calls(f) for f in files)
    assert abs(total - target) <= 0.1 * target
    ref_ids = {t["id"] for t in reference}
    for f in files:
        assert {t["id"] for t in f} <= ref_ids
    assert len(files) == 1 or files[0] != files[1]


def test_scale_predictions_options(reference: list[dict]) -> None:
    files = scale_predictions(reference, 4_000, profile=PROFILES["perfect"], seed=1)
    for f in files[:-1]:
        assert [core(c) for t in f for c in calls_of(t)] == [core(c) for t in reference for c in calls_of(t)]
    assert_valid(files[0], prediction=True)
    assert scale_predictions(reference, 4_000, seed=1) == scale_predictions(reference, 4_000, seed=1)
    assert scale_predictions(reference, 4_000, seed=1) != scale_predictions(reference, 4_000, seed=2)
    assert scale_predictions(reference, 0) == []
    tiny = scale_predictions(reference, 1)
    assert len(tiny) == 1 and 1 <= n_calls(tiny[0]) <= 29
    with pytest.raises(ValueError):
        scale_predictions(reference, 100, profile=ErrorProfile(drop=1.0))
    with pytest.raises(ValueError):
        scale_predictions([], 100)


def test_scale_predictions_arguments_are_realistic(reference: list[dict]) -> None:
    files = scale_predictions(reference, 3_000, seed=0)
    calls = [c for f in files for t in f for c in calls_of(t)]
    args = [c["arguments"] for c in calls if "arguments" in c]
    assert all(isinstance(a, dict) for a in args)
    assert any(isinstance(v, (dict, list)) for a in args for v in a.values())
    assert any(ord(ch) > 127 for a in args for _, v in leaves(a) if isinstance(v, str) for ch in v)
    json.dumps(files, ensure_ascii=False)
