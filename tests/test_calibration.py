"""Threshold calibration: the pure agreement math and the command line end to end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from preloaded import run_python

from engine.calibration import agreement, best_point, calibrate, classify


def test_classify_and_agreement() -> None:
    sim = np.array([0.95, 0.85, 0.7, 0.65, 0.3], dtype=np.float32)
    labels = np.array([2, 2, 1, 0, 0])
    assert classify(sim, 0.6, 0.8).tolist() == [2, 2, 1, 1, 0]
    row = agreement(sim, labels, 0.6, 0.8)
    assert row["accuracy"] == pytest.approx(0.8)
    assert row["recall_strong"] == 1.0 and row["recall_weak"] == 0.5 and row["recall_medium"] == 1.0
    assert row["confusion"] == [[1, 1, 0], [0, 1, 0], [0, 0, 2]]


def test_best_point_and_ties() -> None:
    sim = np.array([0.95, 0.85, 0.7, 0.65, 0.3], dtype=np.float32)
    labels = np.array([2, 2, 1, 0, 0])
    rows = calibrate(sim, labels, [0.5, 0.6, 0.66, 0.7], [0.8, 0.9])
    assert all(r["tau_weak"] <= r["tau_strong"] for r in rows)
    best = best_point(rows)
    assert best["accuracy"] == 1.0 and best["tau_weak"] == 0.66 and best["tau_strong"] == 0.8
    tied = [dict(tau_weak=w, tau_strong=s, accuracy=0.5) for w, s in [(0.5, 0.9), (0.6, 0.8), (0.7, 0.7)]]
    assert (best_point(tied)["tau_weak"], best_point(tied)["tau_strong"]) == (0.6, 0.8)


@pytest.mark.slow
def test_cli_end_to_end(tmp_path: Path, embedding_cache: Path) -> None:
    call = {"name": "weather/now", "arguments": {"city": "Paris", "units": "metric"}}
    pairs = [{"gt": call, "pred": call, "label": "strong"},
             {"gt": call, "pred": {"name": "weather/now", "arguments": {"city": "Paris"}}, "label": "medium"},
             {"gt": call, "pred": {"name": "maps/search", "arguments": {"q": "x"}}, "label": "weak"},
             {"gt": call, "pred": {"name": "weather/now", "arguments": {"zip": 99501, "lang": "ja"}}, "label": "weak"}]
    path = tmp_path / "pairs.json"
    path.write_text(json.dumps(pairs))
    root = Path(__file__).resolve().parents[1]
    proc = run_python([str(root / "scripts" / "calibrate.py"), f"pairs={path}",
                           f"output_dir={tmp_path}", f"encoder.cache_dir={embedding_cache}", "device=cpu"],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "calibration.json").read_text())
    assert result["pairs"] == 4 and result["best"]["accuracy"] >= 0.75
    assert "best: tau_weak=" in proc.stdout
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"gt": call, "pred": call, "label": "great"}]))
    proc = run_python([str(root / "scripts" / "calibrate.py"), f"pairs={bad}",
                           f"output_dir={tmp_path / 'bad-run'}"], capture_output=True, text=True, timeout=600,
                          cwd=tmp_path)
    assert proc.returncode == 2 and "id #0: field 'label'" in proc.stderr


@pytest.mark.slow
def test_the_shipped_example_pairs_calibrate(tmp_path: Path, embedding_cache: Path) -> None:
    """`python scripts/calibrate.py pairs=rollout/demo/calibration_pairs.json`, run from the project's folder."""
    root = Path(__file__).resolve().parents[1]
    proc = run_python(["scripts/calibrate.py", "pairs=rollout/demo/calibration_pairs.json",
                           f"output_dir={tmp_path}", f"encoder.cache_dir={embedding_cache}", "device=cpu"],
                          capture_output=True, text=True, timeout=600, cwd=root)
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "calibration.json").read_text())
    labels = [p["label"] for p in json.loads((root / "rollout/demo/calibration_pairs.json").read_text())]
    assert result["pairs"] == len(labels) == 18 and set(labels) == {"weak", "medium", "strong"}
    assert result["best"]["accuracy"] > 0.5
