"""Calls the rollout never made (illegal format: arguments not a JSON object) are predicted calls that
never match: scored on real reference tasks, against a plain per-task computation."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from oracle import align_task, task_metrics, unit

from engine.contract import InputError, call_made, canonical_json, read_trajectories
from engine.encode import TextEncoder, embed_distinct
from engine.pipeline import ScoreSettings, score_sweep, write_sweep
from engine.thresholds import Thresholds

IDS = ("00060004", "00080004")  # real tasks of 19 and 29 calls
MADE_CALLS = {"00060004": range(0, 19, 3), "00080004": range(0, 29, 4)}  # the calls made; the others were not


def record(task: dict, unmade: set[int], legacy: bool = False) -> dict:
    """A prediction record as the rollout writes it, the GT's calls in its steps; the calls at the
    global indices `unmade` were not made (arguments as written; `legacy`: no "made" field, as before)."""
    steps, index, illegal = [], 0, 0
    for s, step in enumerate(task["steps"], 1):
        calls = []
        for call in step["calls"]:
            arguments = call.get("arguments")
            out = {"name": call["name"], "arguments": arguments, "result": '{"ok": true}', "is_error": False}
            if index in unmade:
                problem = "tool_calls[0].arguments is not valid JSON (Expecting ',' delimiter)"
                out = {"name": call["name"], "arguments": canonical_json(arguments)[:-1], "is_error": True,
                       "result": f"Error: Invalid arguments: {problem} (the call was not made)"}
                if not legacy:
                    out["made"] = False
                illegal += 1
            calls.append(out)
            index += 1
        steps.append({"step": s, "calls": calls})
    out = {"id": task["id"], "image": task.get("image"), "type": task.get("type"), "question": "?", "steps": steps,
           "num_step": len(steps), "max_num_concurrent": max(len(s["calls"]) for s in steps), "final_reply": "Done.",
           "dialogue": [], "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, "requests": 0}}
    if illegal:
        out["illegal_calls"] = illegal
    return out


def plain_metrics(gt_task: dict, pred_task: dict, embeddings: dict[str, np.ndarray]) -> dict:
    """The spec's per-task metrics, computed call by call: calls not made are left out of every tool
    bucket but kept in the predicted calls (and their steps)."""
    def flat(task: dict, predicted: bool) -> tuple[list, list]:
        calls, steps = [], []
        for si, step in enumerate(task["steps"]):
            for c in step["calls"]:
                tool = c["name"] if not predicted or call_made(c) else None  # None: in no bucket
                calls.append((tool, si, canonical_json(c.get("arguments"))))
                steps.append(si)
        return calls, steps

    g_calls, g_steps = flat(gt_task, False)
    p_calls, p_steps = flat(pred_task, True)
    vec = {t: unit(embeddings[t][None, :])[0] for _, _, t in g_calls + p_calls}
    matches = align_task(g_calls, p_calls, lambda a, b: float(np.clip(np.float32(np.dot(vec[a], vec[b])), -1, 1)),
                         0.6)
    return task_metrics(g_steps, p_steps, len(gt_task["steps"]), len(pred_task["steps"]), matches, 0.8)


@pytest.fixture(scope="module")
def gt_tasks(gt_path: Path) -> dict[str, dict]:
    tasks = {t["id"]: t for t in json.loads(gt_path.read_text(encoding="utf-8"))}
    return {tid: tasks[tid] for tid in IDS}


@pytest.mark.parametrize("legacy", [False, True], ids=["made-field", "earlier-record"])
def test_calls_never_made_never_match(tmp_path, gt_path, gt_tasks, embedding_cache, caplog, legacy) -> None:
    unmade = {tid: set(range(sum(len(s["calls"]) for s in gt_tasks[tid]["steps"]))) - set(MADE_CALLS[tid])
              for tid in IDS}
    clean = tmp_path / "clean.json"
    faulty = tmp_path / "faulty.json"
    clean.write_text(json.dumps([record(gt_tasks[t], set()) for t in IDS]), encoding="utf-8")
    faulty.write_text(json.dumps([record(gt_tasks[t], unmade[t], legacy) for t in IDS]), encoding="utf-8")
    settings = ScoreSettings(device="cpu", cache_dir=str(embedding_cache))
    result = score_sweep(gt_path, [clean, faulty], Thresholds(), settings)
    write_sweep(result, [tmp_path / "clean", tmp_path / "faulty"])
    runs = {name: json.loads((tmp_path / name / "results_eval.json").read_text()) for name in ("clean", "faulty")}
    assert runs["clean"]["aggregate"]["recall"] == 1.0 == runs["clean"]["aggregate"]["precision"]
    assert runs["faulty"]["aggregate"]["recall"] < 0.35 and runs["faulty"]["aggregate"]["precision"] < 0.35
    assert runs["faulty"]["aggregate"]["total_pred_calls"] == 48  # every call counts as predicted

    texts = result.tables.texts
    vectors, _ = embed_distinct(texts, TextEncoder(device="cpu"), embedding_cache)
    embeddings = dict(zip(texts, vectors))
    preds = {t["id"]: t for t in json.loads(faulty.read_text())}
    for row in runs["faulty"]["per_id"]:
        tid = row["id"]
        expected = plain_metrics(gt_tasks[tid], preds[tid], embeddings)
        made = {i for i in range(row["total_pred_calls"]) if i not in unmade[tid]}
        assert row["total_pred_calls"] == len(made) + len(unmade[tid]) and row["matched"] == expected["matched"]
        assert {m["pred_call_index"] for m in row["details"]["matches"]} <= made
        assert set(row["details"]["unmatched_pred_indices"]) >= unmade[tid]
        for key in ("recall", "precision", "avg_sim_all_cov", "avg_sim_strong_cov", "step_coherence_cov",
                    "order_consistency_cov", "merge_purity_cov"):
            assert row[key] == pytest.approx(expected[key], abs=1e-6), (tid, key)
    assert f"{faulty}: 33 of 48 predicted call(s), in 2 task(s), were never made" in caplog.text
    assert not [r for r in caplog.records if "never made" in r.getMessage() and str(clean) in r.getMessage()]


def test_a_made_field_that_is_not_true_or_false_is_refused(tmp_path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps([{"id": "1", "steps": [{"step": 1, "calls": [
        {"name": "s/t", "arguments": {}, "made": "no"}]}]}]))
    with pytest.raises(InputError, match=r"p\.json.*1.*steps\[0\]\.calls\[0\]\.made.*true or false"):
        read_trajectories(path, lenient=True)


def test_only_the_rollouts_own_marker_reads_as_not_made() -> None:
    base = {"name": "s/t", "arguments": "{x", "is_error": True,
            "result": "Error: Invalid arguments: bad (the call was not made)"}
    assert not call_made(base) and call_made({**base, "is_error": False}) and call_made({**base, "made": True})
    assert call_made({**base, "result": "Error: Invalid arguments: bad"})
    assert call_made(copy.deepcopy({**base, "result": "The call was not made (the call was not made)"}))
