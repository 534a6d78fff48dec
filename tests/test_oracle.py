"""The engine against the plain per-task Python oracle on random trajectories."""

from __future__ import annotations

import numpy as np
import pytest
from memory import score_memory, seeded_vector
from oracle import align_task, task_metrics, unit

from engine.serialize import call_text

TOOLS = ["a/x", "a/y", "b/z", "c/w"]


def random_task(rng: np.random.Generator, tid: str, max_steps: int = 4, max_calls: int = 4,
                pool: int = 6) -> dict:
    """A task whose calls draw tools and arguments from small pools, so ties happen often."""
    steps = []
    for s in range(int(rng.integers(0, max_steps + 1))):
        calls = [{"name": TOOLS[int(rng.integers(0, len(TOOLS)))],
                  "arguments": {"q": int(rng.integers(0, pool))}}
                 for _ in range(int(rng.integers(0, max_calls + 1)))]
        steps.append({"step": s + 1, "calls": calls})
    return {"id": tid, "type": f"fam{int(rng.integers(0, 3))}", "steps": steps}


def oracle_scores(gt_task: dict, pred_task: dict, tau_weak: float, tau_strong: float, profile: str) -> dict:
    """Oracle metrics and matches of one task, with the same pseudo-embeddings."""
    def flat(task):
        calls, steps = [], []
        for si, step in enumerate(task["steps"]):
            for c in step["calls"]:
                calls.append((c["name"], si, call_text(c["name"], c.get("arguments"), profile)))
                steps.append(si)
        return calls, steps

    g_calls, g_steps = flat(gt_task)
    p_calls, p_steps = flat(pred_task)
    vecs = {}
    for _, _, text in g_calls + p_calls:
        vecs.setdefault(text, unit(seeded_vector(text)[None, :])[0])

    def sim(a: str, b: str) -> float:
        return float(np.clip(np.float32(np.dot(vecs[a], vecs[b])), -1, 1))

    matches = align_task(g_calls, p_calls, sim, tau_weak)
    out = task_metrics(g_steps, p_steps, len(gt_task["steps"]), len(pred_task["steps"]), matches, tau_strong,
                       profile)
    out["matches"] = [(i, j) for i, j, _ in matches]
    return out


@pytest.mark.parametrize("profile", ["reference", "paper"])
@pytest.mark.parametrize("seed", range(6))
def test_engine_equals_oracle(seed: int, profile: str) -> None:
    rng = np.random.default_rng(seed)
    tau_weak, tau_strong = [(0.6, 0.8), (0.3, 0.7), (0.8, 0.9)][seed % 3]
    gt = [random_task(rng, f"{i:04d}") for i in range(60)]
    preds = [[random_task(rng, f"{i:04d}") for i in range(60) if rng.random() > 0.1] for _ in range(3)]
    tables, matches, scores = score_memory(gt, preds, tau_weak=tau_weak, tau_strong=tau_strong, profile=profile)
    gt_by_id = {t["id"]: t for t in gt}
    for s in range(tables.num_samples):
        tid = tables.task_ids[tables.sample_task[s]]
        pred_task = next(t for t in preds[tables.sample_file[s]] if t["id"] == tid)
        expected = oracle_scores(gt_by_id[tid], pred_task, tau_weak, tau_strong, profile)
        sel = matches["sample"] == s
        got = list(zip(tables.gt_index[matches["gt"][sel]].tolist(), tables.pred_index[matches["pred"][sel]].tolist()))
        assert got == expected["matches"], (tid, s)
        assert scores.matched[s] == expected["matched"]
        for name in scores.names:
            assert scores.values[name][s] == pytest.approx(expected[name], abs=1e-6), (tid, name)
