"""The CPU assignment solver loaded on its own, and the kernels' CPU thread setting."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import torch

from kernels.device import SMALL_SWEEP_CALLS, cpu_threads, kernel_threads

ROOT = Path(__file__).resolve().parents[1]

SOLVER_CHECK = """
import sys
import numpy as np
from kernels.assignment import host_assignment
rng = np.random.default_rng(0)
# rounded costs: many ties, so the tie rule is exercised; rectangular both ways
blocks = [np.round(rng.random((n, r, c)), 1) for n, r, c in ((40, 3, 5), (40, 5, 3), (40, 4, 4))]
mine = [host_assignment(b) for b in blocks]
assert "scipy.optimize" not in sys.modules, "scipy.optimize was imported"
from scipy.optimize import linear_sum_assignment
for block, assigned in zip(blocks, mine):
    for cost, row_cols in zip(block, assigned):
        rows, cols = linear_sum_assignment(cost)
        expected = np.full(cost.shape[0], -1)
        expected[rows] = cols
        assert (row_cols == expected).all(), (cost, row_cols, expected)
print("ok")
"""


def test_the_solver_loaded_alone_assigns_as_scipy_does() -> None:
    proc = subprocess.run([sys.executable, "-c", SOLVER_CHECK], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_kernel_threads_are_set_for_small_sweeps_and_restored() -> None:
    assert kernel_threads(SMALL_SWEEP_CALLS - 1) == 1 and kernel_threads(SMALL_SWEEP_CALLS) is None
    before = torch.get_num_threads()
    with cpu_threads(1):
        assert torch.get_num_threads() == 1
    with cpu_threads(None):
        assert torch.get_num_threads() == before
    assert torch.get_num_threads() == before
