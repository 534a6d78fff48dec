"""Hydra multirun through real launchers: submitit's local executor and joblib, on one shared cache."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from preloaded import run_python

ROOT = Path(__file__).resolve().parents[1]


def score(*overrides: str, cwd: Path) -> subprocess.CompletedProcess:
    proc = run_python([str(ROOT / "scripts" / "score.py"), *overrides], cwd=cwd,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def aggregates(folder: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text())["aggregate"] for p in sorted(folder.glob("*/results_eval.json"))}


JOBS = {f"align.tau_strong={strong},align.tau_weak={weak}": (weak, strong)
        for weak in ("0.5", "0.7") for strong in ("0.8", "0.9")}


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> dict:
    """A small demo set and references at four threshold pairs from Hydra's basic launcher (the jobs one
    after another in one process), on their own cache; each job's folder is named by its swept settings."""
    base = tmp_path_factory.mktemp("launch")
    common = [f"demo.dir={base / 'demo'}", "demo.n_tasks=8", "device=cpu", "reports=false"]
    score("-m", "align.tau_weak=0.5,0.7", "align.tau_strong=0.8,0.9", *common,
          f"encoder.cache_dir={base / 'lone-cache'}", f"output_dir={base / 'lone'}", cwd=base)
    assert {p.name for p in (base / "lone").iterdir() if p.is_dir()} == set(JOBS)
    lone = {name: aggregates(base / "lone" / name) for name in JOBS}
    assert len({json.dumps(a, sort_keys=True) for a in lone.values()}) == len(JOBS), "the thresholds change the scores"
    return {"base": base, "common": common, "lone": lone}


@pytest.mark.slow
def test_four_concurrent_joblib_jobs_share_one_fresh_cache(demo) -> None:
    base = demo["base"]
    score("-m", "hydra/launcher=local_parallel", "hydra.launcher.n_jobs=4", "align.tau_weak=0.5,0.7",
          "align.tau_strong=0.8,0.9", f"hydra.sweep.dir={base / 'joblib'}",
          f"encoder.cache_dir={base / 'shared-cache'}",
          *demo["common"], cwd=base)
    for name in JOBS:
        assert aggregates(base / "joblib" / name) == demo["lone"][name], name


@pytest.mark.slow
def test_submitit_local_executor(demo) -> None:
    base = demo["base"]
    score("-m", "hydra/launcher=local_submitit", "align.tau_weak=0.5,0.7", f"hydra.sweep.dir={base / 'submitit'}",
          f"encoder.cache_dir={base / 'shared-cache'}", *demo["common"], cwd=base)
    assert {p.name for p in (base / "submitit").iterdir() if p.is_dir() and p.name != ".submitit"} == {
        "align.tau_weak=0.5", "align.tau_weak=0.7"}
    for weak in ("0.5", "0.7"):
        assert aggregates(base / "submitit" / f"align.tau_weak={weak}") == \
            demo["lone"][f"align.tau_strong=0.8,align.tau_weak={weak}"]
