"""Hydra multirun through real launchers: submitit's local executor and joblib, on one shared cache."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def score(*overrides: str, cwd: Path) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "score.py"), *overrides], cwd=cwd,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def aggregates(folder: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text())["aggregate"] for p in sorted(folder.glob("*/results_eval.json"))}


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> dict:
    """A small demo set and lone-run references at two thresholds, on their own cache."""
    base = tmp_path_factory.mktemp("launch")
    common = [f"demo.dir={base / 'demo'}", "demo.n_tasks=8", "device=cpu", "reports=false"]
    lone = {}
    for tau in ("0.5", "0.7"):
        score(*common, f"align.tau_weak={tau}", f"encoder.cache_dir={base / 'lone-cache'}",
              f"output_dir={base / ('lone' + tau)}", cwd=base)
        lone[tau] = aggregates(base / ("lone" + tau))
    return {"base": base, "common": common, "lone": lone}


@pytest.mark.slow
def test_four_concurrent_joblib_jobs_share_one_fresh_cache(demo) -> None:
    base = demo["base"]
    score("-m", "hydra/launcher=local_parallel", "hydra.launcher.n_jobs=4", "align.tau_weak=0.5,0.7,0.5,0.7",
          f"hydra.sweep.dir={base / 'joblib'}", f"encoder.cache_dir={base / 'shared-cache'}", *demo["common"],
          cwd=base)
    for job, tau in enumerate(("0.5", "0.7", "0.5", "0.7")):
        assert aggregates(base / "joblib" / str(job)) == demo["lone"][tau], (job, tau)


@pytest.mark.slow
def test_submitit_local_executor(demo) -> None:
    base = demo["base"]
    score("-m", "hydra/launcher=local_submitit", "align.tau_weak=0.5,0.7", f"hydra.sweep.dir={base / 'submitit'}",
          f"encoder.cache_dir={base / 'shared-cache'}", *demo["common"], cwd=base)
    assert aggregates(base / "submitit" / "0") == demo["lone"]["0.5"]
    assert aggregates(base / "submitit" / "1") == demo["lone"]["0.7"]
