"""The host-read budget of one threshold's alignment and metrics, counted on CPU.

Every tensor-to-host read (a value, a list or an array brought to the host, a result whose
size depends on the data) is a synchronization on CUDA. A torch function mode counts them;
their number must stay a small constant, whatever the number of buckets, shapes and samples.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.overrides import TorchFunctionMode

from engine.align import candidate_pairs, match
from engine.contract import parse_trajectories
from engine.encode import EmbeddingStats
from engine.grid import threshold_grid
from engine.metrics import task_scores
from engine.pipeline import PreparedSweep, ScoreSettings, StageTimer
from engine.serialize import flatten_sweep
from engine.synthetic import make_reference, perturb
from engine.synthetic.demo import demo_models

ALIGN_AND_METRICS_BUDGET = 4
"""Reads of one threshold's `match` + `task_scores` (docs/scoring.md, "How it runs")."""

CPU = torch.device("cpu")
_READS = {"item", "tolist", "cpu", "numpy", "__array__", "__bool__", "__int__", "__float__", "__index__",
          "nonzero", "argwhere", "unique", "unique_consecutive", "masked_select", "bincount", "equal",
          "allclose"}


class HostReads(TorchFunctionMode):
    """Counts the calls that read a tensor's data to the host (or size a result by its data)."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", str(func))
        if name in _READS:
            self.reads.append(name)
        elif name == "repeat_interleave" and kwargs.get("output_size") is None and (
                len(args) > 1 and isinstance(args[1], torch.Tensor) or isinstance(kwargs.get("repeats"), torch.Tensor)):
            self.reads.append(name)
        elif name == "where" and len(args) == 1:
            self.reads.append("where(condition)")
        elif name == "to" and any(a == "cpu" or a == CPU for a in (*args[1:], kwargs.get("device"))):
            self.reads.append("to(cpu)")
        elif name in ("__getitem__", "__setitem__") and _has_mask(args[1]):
            self.reads.append(f"{name}[mask]")
        return func(*args, **kwargs)


def _has_mask(index: object) -> bool:
    """Whether an index holds a boolean tensor (its result's size is the mask's count)."""
    parts = index if isinstance(index, tuple) else (index,)
    return any(isinstance(p, torch.Tensor) and p.dtype == torch.bool for p in parts)


def _vectors(texts: list[str], dim: int = 32) -> np.ndarray:
    """Text-seeded vectors near one direction, so that many pairs pass the thresholds."""
    out = np.empty((len(texts), dim), dtype=np.float32)
    for i, text in enumerate(texts):
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        out[i] = np.random.default_rng(seed).standard_normal(dim, dtype=np.float32)
    out[:, 0] += 6.0
    return out


def _prepared(tasks: int, models: int) -> PreparedSweep:
    """A synthetic sweep of `models` prediction files over `tasks` reference tasks, ready to match."""
    reference = make_reference(tasks, seed=tasks)
    gt = parse_trajectories(Path("reference.json"), reference)
    profiles = list(demo_models().values())
    preds = [parse_trajectories(Path(f"model{m}.json"), perturb(reference, profiles[m % len(profiles)], seed=m))
             for m in range(models)]
    tables = flatten_sweep(gt, preds, "reference")
    candidates = candidate_pairs(tables, _vectors(tables.texts), CPU)
    return PreparedSweep(gt=gt, preds=preds, tables=tables, candidates=candidates,
                         embedding=EmbeddingStats(len(tables.texts), 0, 0),
                         settings=ScoreSettings(device="cpu"), timer=StageTimer())


def _shapes(prepared: PreparedSweep) -> int:
    b = prepared.candidates.buckets
    general = (b.rows > 1) & (b.cols > 1)
    return len({(int(r), int(c)) for r, c in zip(b.rows[general], b.cols[general])})


@pytest.fixture(scope="module")
def sweeps() -> tuple[PreparedSweep, PreparedSweep]:
    """A small and a larger sweep: more samples, buckets and bucket shapes."""
    return _prepared(30, 2), _prepared(200, 6)


def _align_and_metrics_reads(prepared: PreparedSweep, tau_weak: float) -> list[str]:
    with HostReads() as mode:
        matches = match(prepared.candidates, tau_weak)
        task_scores(prepared.tables, matches, 0.8, "reference")
    return mode.reads


def test_the_mode_counts_host_reads() -> None:
    t = torch.arange(6)
    with HostReads() as mode:
        int(t[1]), t.tolist(), t[t > 2], torch.repeat_interleave(t, t), t.unique(), bool(t.any())
        torch.repeat_interleave(t, t, output_size=15), t[t.clamp(max=3)]
    assert mode.reads == ["__int__", "tolist", "__getitem__[mask]", "repeat_interleave", "unique", "__bool__"]


@pytest.mark.parametrize("tau_weak", [0.5, 0.8])
def test_one_threshold_reads_a_constant_number_of_times(sweeps, tau_weak: float) -> None:
    small, large = sweeps
    assert large.tables.num_samples > 5 * small.tables.num_samples
    assert large.candidates.buckets.rows.numel() > 5 * small.candidates.buckets.rows.numel()
    assert _shapes(large) > _shapes(small) + 5
    few, many = _align_and_metrics_reads(small, tau_weak), _align_and_metrics_reads(large, tau_weak)
    assert match(large.candidates, tau_weak).sample.numel() > 1000
    assert few == many
    assert len(many) <= ALIGN_AND_METRICS_BUDGET, many


def test_the_grid_computes_the_structure_once_per_tau_weak(sweeps) -> None:
    """A tau_strong adds the reads of the metrics' results only, not those of the step structure."""
    small, _ = sweeps
    counts = []
    for strong in ([0.8], [0.7, 0.8, 0.9]):
        with HostReads() as mode:
            threshold_grid(small, [0.6], strong, ["model0", "model1"])
        counts.append(mode.reads)
    added = list(counts[1])
    for read in counts[0]:
        added.remove(read)
    assert added == ["numpy", "numpy"], counts
