"""scripts/bench.py --gpu-report on a machine without CUDA: it says so and exits 0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present")
def test_gpu_report_without_a_gpu_says_so_and_exits_0(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench.py"), "--gpu-report",
                           "--report-dir", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode == 0, proc.stderr
    assert "no CUDA device" in proc.stdout and not list(tmp_path.iterdir())
