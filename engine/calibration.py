"""Threshold calibration: agreement of (tau_weak, tau_strong) with labelled call pairs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from engine.contract import Call, InputError, parse_call, read_json
from engine.encode import embed_distinct
from engine.encoders import TextEncoder
from engine.serialize import Profile, call_text
from engine.thresholds import Thresholds
from kernels.similarity import pair_similarity

LABELS = ("weak", "medium", "strong")


@dataclass(frozen=True)
class LabelledPairs:
    """Call pairs with their human labels (0 weak, 1 medium, 2 strong)."""

    gt: list[Call]
    pred: list[Call]
    labels: np.ndarray


def load_pairs(path: str | Path) -> LabelledPairs:
    """Read a JSON list of {gt: call, pred: call, label: strong|medium|weak}."""
    path = Path(path)
    records = read_json(path, "labelled pairs file")
    if not isinstance(records, list) or not records:
        raise InputError(path, "expected a non-empty list of {gt, pred, label} records")
    gt, pred, labels = [], [], []
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            raise InputError(path, "expected an object", task_id=f"#{i}")
        gt.append(parse_call(path, f"#{i}", "gt", record.get("gt")))
        pred.append(parse_call(path, f"#{i}", "pred", record.get("pred")))
        if record.get("label") not in LABELS:
            raise InputError(path, f"expected one of {', '.join(LABELS)}, got {record.get('label')!r}",
                             task_id=f"#{i}", field="label")
        labels.append(LABELS.index(record["label"]))
    return LabelledPairs(gt=gt, pred=pred, labels=np.asarray(labels, dtype=np.int64))


def pair_similarities(pairs: LabelledPairs, encoder: TextEncoder, cache_dir: str | Path | None,
                      profile: Profile = "reference") -> np.ndarray:
    """Cosine of each pair's call texts, computed as the engine computes it; -1 across different tools."""
    texts: dict[str, int] = {}
    left = [texts.setdefault(call_text(c.name, c.arguments, profile), len(texts)) for c in pairs.gt]
    right = [texts.setdefault(call_text(c.name, c.arguments, profile), len(texts)) for c in pairs.pred]
    vectors, _ = embed_distinct(list(texts), encoder, cache_dir)
    sim = pair_similarity(torch.as_tensor(vectors), torch.as_tensor(left), torch.as_tensor(right)).numpy()
    same_tool = np.array([g.name == p.name for g, p in zip(pairs.gt, pairs.pred)])
    return np.where(same_tool, sim, -1.0).astype(np.float32)


def classify(similarity: np.ndarray, tau_weak: float, tau_strong: float) -> np.ndarray:
    """0 (weak: no match), 1 (medium: tau_weak <= S < tau_strong) or 2 (strong: S >= tau_strong)."""
    return np.where(similarity >= tau_strong, 2, np.where(similarity >= tau_weak, 1, 0))


def agreement(similarity: np.ndarray, labels: np.ndarray, tau_weak: float, tau_strong: float) -> dict:
    """Accuracy, per-label recall and the confusion matrix (rows: label, columns: prediction)."""
    predicted = classify(similarity, tau_weak, tau_strong)
    confusion = np.zeros((3, 3), dtype=np.int64)
    np.add.at(confusion, (labels, predicted), 1)
    per_label = {name: (float(confusion[i, i] / confusion[i].sum()) if confusion[i].sum() else None)
                 for i, name in enumerate(LABELS)}
    return {"tau_weak": float(tau_weak), "tau_strong": float(tau_strong),
            "accuracy": float(np.trace(confusion) / len(labels)) if len(labels) else 0.0,
            **{f"recall_{name}": value for name, value in per_label.items()},
            "confusion": confusion.tolist()}


def calibrate(similarity: np.ndarray, labels: np.ndarray, tau_weak_grid: list[float],
              tau_strong_grid: list[float]) -> list[dict]:
    """Agreement at every grid point with tau_weak <= tau_strong."""
    return [agreement(similarity, labels, w, s) for s in tau_strong_grid for w in tau_weak_grid if w <= s]


def best_point(rows: list[dict], default: Thresholds = Thresholds()) -> dict:
    """The most accurate point; ties go to the one nearest the published defaults."""
    if not rows:
        raise ValueError("no grid point with tau_weak <= tau_strong")
    return min(rows, key=lambda r: (-r["accuracy"], abs(r["tau_weak"] - default.tau_weak)
                                    + abs(r["tau_strong"] - default.tau_strong), r["tau_weak"], r["tau_strong"]))
