"""The step kernel (kernels.structure.step_structure, all samples at once) against the host's per-sample
step matrices (step_matrices: C, W and the fragmentation the published per-id details report)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kernels.structure import step_matrices, step_structure


def _samples(seed: int) -> list[tuple[int, int, np.ndarray, np.ndarray, np.ndarray]]:
    """Random samples: (GT steps, predicted steps, each match's GT step, predicted step, similarity);
    some without matches, some with several matches in one pair of steps."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(40):
        gt_steps, pred_steps = int(rng.integers(1, 6)), int(rng.integers(1, 6))
        m = int(rng.integers(0, 9))
        out.append((gt_steps, pred_steps, rng.integers(0, gt_steps, m), rng.integers(0, pred_steps, m),
                    rng.uniform(0.5, 1.0, m).astype(np.float32)))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kernel_coherence_is_the_host_fragmentation(seed: int) -> None:
    samples = _samples(seed)
    sample = torch.tensor(np.concatenate([np.full(len(g), i) for i, (_, _, g, _, _) in enumerate(samples)]))
    gt_step, pred_step, similarity = (torch.tensor(np.concatenate([s[k] for s in samples])) for k in (2, 3, 4))
    kernel = step_structure(sample, gt_step, pred_step, similarity, len(samples))
    for i, (gt_steps, pred_steps, g, p, sim) in enumerate(samples):
        host = step_matrices(g, p, sim, gt_steps, pred_steps)
        m_g = host.counts.sum(axis=1)
        assert host.counts.sum() == len(g) and host.weights.sum() == pytest.approx(float(sim.sum()), rel=1e-6)
        # step coherence: each match of a GT step weighs 1 - fragmentation of that step
        coherent = sum(m * (1.0 - f) for m, f in zip(m_g.tolist(), host.fragmentation))
        assert float(kernel.coherent_matches[i]) == pytest.approx(coherent, rel=1e-12, abs=1e-12)
        assert int(kernel.same_gt_step_sq[i]) == int((m_g * m_g).sum())


def test_fragmentation_and_primary_of_one_sample() -> None:
    # GT step 0: matches in predicted steps 0, 0 and 2 (k = 2); GT step 1: none; GT step 2: step 1 only
    host = step_matrices(np.array([0, 0, 0, 2]), np.array([0, 2, 0, 1]),
                         np.array([0.5, 0.9, 0.25, 0.75], dtype=np.float32), 3, 3)
    assert host.counts.tolist() == [[2, 0, 1], [0, 0, 0], [0, 1, 0]]
    assert host.weights.dtype == np.float32 and host.weights.tolist() == [[0.75, 0.0, 0.8999999761581421],
                                                                        [0.0, 0.0, 0.0], [0.0, 0.75, 0.0]]
    assert host.fragmentation == [0.5, 0.0, 0.0]
    assert host.primary == [2, None, 1]
