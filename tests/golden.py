"""Scoring the golden cases on a chosen device and comparing with the published scorer's outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.pipeline import ScoreSettings, score_sweep, write_sweep
from engine.thresholds import Thresholds

COUNTS = ("total_gt_calls", "total_pred_calls", "matched")


def golden_cases(golden: Path) -> dict[tuple[float, float], list[str]]:
    """Golden case names grouped by their (tau_weak, tau_strong)."""
    manifest = json.loads((golden / "manifest.json").read_text())
    groups: dict[tuple[float, float], list[str]] = {}
    for name, th in sorted(manifest["cases"].items()):
        groups.setdefault((th["tau_weak"], th["tau_strong"]), []).append(name)
    return groups


def score_golden(gt_path: Path, golden: Path, out: Path, device: str, cache_dir: str | None,
                 backend: str = "torch", only: set[str] | None = None) -> dict[str, dict]:
    """Every golden case (or those named in only) scored (one sweep per threshold pair) with this encoder
    backend and written under out; name -> results_eval."""
    results = {}
    for (tau_weak, tau_strong), names in golden_cases(golden).items():
        names = [n for n in names if only is None or n in only]
        if not names:
            continue
        preds = [golden / n / "pred.json" for n in names]
        settings = ScoreSettings(device=device, cache_dir=cache_dir, encoder_backend=backend)
        result = score_sweep(gt_path, preds, Thresholds(tau_weak, tau_strong), settings)
        dirs = [out / n for n in names]
        write_sweep(result, dirs)
        for n, d in zip(names, dirs):
            results[n] = json.loads((d / "results_eval.json").read_text())
    return results


def assert_matches_golden(scored: dict[str, dict], golden: Path) -> None:
    """Counts equal and metrics within 1e-5 of the golden results, per id and in aggregate."""
    for name, mine in scored.items():
        gold = json.loads((golden / name / "results_eval.json").read_text())
        assert [p["id"] for p in mine["per_id"]] == [p["id"] for p in gold["per_id"]]
        assert len(mine["per_id"]) == 208
        for m, g in zip(mine["per_id"], gold["per_id"]):
            for key in COUNTS:
                assert m[key] == g[key], (name, g["id"], key)
            for key, value in g.items():
                if key in COUNTS or key in ("id", "details"):
                    continue
                assert m[key] == pytest.approx(value, abs=1e-5), (name, g["id"], key)
            assert len(m["details"]["W"]) == len(g["details"]["W"])
            assert [len(r) for r in m["details"]["W"]] == [len(r) for r in g["details"]["W"]]
        for key, value in gold["aggregate"].items():
            if key in ("num_ids", *COUNTS):
                assert mine["aggregate"][key] == value, (name, key)
            else:
                assert mine["aggregate"][key] == pytest.approx(value, abs=1e-5), (name, key)


def agreeing_similarities(scored: dict[str, dict], golden: Path) -> int:
    """Assert that pairs both scorers chose agree in similarity to 1e-5; returns how many were compared."""
    checked = 0
    for name, mine in scored.items():
        gold = json.loads((golden / name / "results_eval.json").read_text())
        for m, g in zip(mine["per_id"], gold["per_id"]):
            theirs = {(x["gt_call_index"], x["pred_call_index"]): x["similarity"] for x in g["details"]["matches"]}
            for x in m["details"]["matches"]:
                key = (x["gt_call_index"], x["pred_call_index"])
                if key in theirs:
                    assert x["similarity"] == pytest.approx(theirs[key], abs=1e-5)
                    checked += 1
    return checked
