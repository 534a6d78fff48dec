"""A plain per-task Python implementation of the scoring spec, used as a second oracle."""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import linear_sum_assignment


def unit(vectors: np.ndarray) -> np.ndarray:
    """Rows divided by (L2 norm + 1e-8), float32."""
    v = vectors.astype(np.float32)
    return v / (np.linalg.norm(v, axis=1, keepdims=True) + np.float32(1e-8))


def align_task(gt_calls, pred_calls, sim, tau_weak):
    """Matches [(gt_index, pred_index, S)] of one task, bucket by bucket in GT-row order.

    gt_calls / pred_calls: lists of (tool, step, text_row); sim(a, b): similarity of two text rows.
    """
    tools = []
    for tool, _, _ in gt_calls:
        if tool not in tools:
            tools.append(tool)
    matches = []
    for tool in tools:
        rows = [i for i, c in enumerate(gt_calls) if c[0] == tool]
        cols = [j for j, c in enumerate(pred_calls) if c[0] == tool]
        if not cols:
            continue
        s = np.array([[sim(gt_calls[i][2], pred_calls[j][2]) for j in cols] for i in rows], dtype=np.float32)
        cost = np.where(s < tau_weak, 1e6, 1.0 - s.astype(np.float64))
        r, c = linear_sum_assignment(cost)
        for a, b in zip(r, c):
            if s[a, b] >= tau_weak:
                matches.append((rows[a], cols[b], float(s[a, b])))
    return matches


def task_metrics(gt_steps: list[int], pred_steps: list[int], n_gt_steps: int, n_pred_steps: int,
                 matches, tau_strong: float, profile: str = "reference") -> dict:
    """Per-task metrics of the spec; gt_steps[i] / pred_steps[j] give each call's step index."""
    n_gt, n_pred, m = len(gt_steps), len(pred_steps), len(matches)
    empty = n_gt == 0 and n_pred == 0
    recall = 1.0 if empty else (m / n_gt if n_gt else 0.0)
    precision = 1.0 if empty else (m / n_pred if n_pred else 0.0)
    sims = [s for _, _, s in matches]
    strong = [s for s in sims if s >= tau_strong]
    w = np.zeros((n_gt_steps, n_pred_steps), dtype=np.float32)
    for i, j, s in matches:
        w[gt_steps[i], pred_steps[j]] += np.float32(s)
    # step coherence
    coh = 0.0
    m_g = {}
    for g in range(n_gt_steps):
        ps = [pred_steps[j] for i, j, _ in matches if gt_steps[i] == g]
        m_g[g] = len(ps)
        k = len(set(ps))
        frag = (k - 1) / k if k > 1 else 0.0
        coh += len(ps) * (1 - frag)
    # order
    inv = comp = 0
    for a in range(m):
        for b in range(a + 1, m):
            ga, pa = gt_steps[matches[a][0]], pred_steps[matches[a][1]]
            gb, pb = gt_steps[matches[b][0]], pred_steps[matches[b][1]]
            if ga != gb and pa != pb:
                comp += 1
                if (ga < gb) != (pa < pb):
                    inv += 1
    order = 1.0 - inv / comp if comp else 1.0
    n_g = [gt_steps.count(g) for g in range(n_gt_steps)]
    num = sum(m_g[g] * m_g[h] for g in range(n_gt_steps) for h in range(g + 1, n_gt_steps))
    den = sum(n_g[g] * n_g[h] for g in range(n_gt_steps) for h in range(g + 1, n_gt_steps))
    c_pair = num / den if den else 0.0
    # merge
    row_mass = w.sum(axis=1)
    g_act = int((row_mass > 0).sum())
    entropy = 0.0
    if g_act > 1:
        col = w.sum(axis=0).astype(np.float64)
        total = col[col > 0].sum()
        h = 0.0
        for p in range(n_pred_steps):
            if col[p] > 0:
                q = w[:, p].astype(np.float64) / col[p]
                h += (col[p] / total) * -sum(x * math.log(x + 1e-12) for x in q if x > 0)
        entropy = h / math.log(g_act)
    purity = min(1.0, max(0.0, 1.0 - entropy))
    out = {"matched": m, "recall": recall, "precision": precision}
    if profile == "paper":
        out["arg_sim"] = sum(strong) / len(strong) if strong else 0.0
        out["step_coherence_cov"] = 1.0 if empty else recall * (coh / m if m else 0.0)
        out["order_consistency_cov"] = 1.0 if empty else recall * order
        out["merge_purity_cov"] = 1.0 if empty else recall * purity
        return out
    out["avg_sim_all_cov"] = sum(sims) / n_gt if n_gt else 0.0
    out["avg_sim_strong_cov"] = sum(strong) / n_gt if n_gt else 0.0
    out["step_coherence_cov"] = 1.0 if empty else coh / (n_gt if n_gt else 1)
    out["order_consistency_cov"] = 1.0 if empty else order * c_pair
    out["merge_purity_cov"] = 1.0 if empty else purity * recall
    return out
