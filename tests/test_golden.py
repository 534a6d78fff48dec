"""Parity with the published scorer's outputs in ../shared/golden (real encoder, real GT)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.pipeline import ScoreSettings, output_dirs, score_sweep, write_sweep
from engine.thresholds import Thresholds

COUNTS = ("total_gt_calls", "total_pred_calls", "matched")


def golden_cases(golden: Path) -> dict[tuple[float, float], list[str]]:
    """Golden case names grouped by their (tau_weak, tau_strong)."""
    manifest = json.loads((golden / "manifest.json").read_text())
    groups: dict[tuple[float, float], list[str]] = {}
    for name, th in sorted(manifest["cases"].items()):
        groups.setdefault((th["tau_weak"], th["tau_strong"]), []).append(name)
    return groups


@pytest.fixture(scope="module")
def scored(gt_path: Path, golden_dir: Path, embedding_cache: Path, tmp_path_factory) -> dict[str, dict]:
    """Every golden case scored (one sweep per threshold pair) and written; name -> results_eval."""
    out = tmp_path_factory.mktemp("golden-out")
    results = {}
    for (tau_weak, tau_strong), names in golden_cases(golden_dir).items():
        preds = [golden_dir / n / "pred.json" for n in names]
        settings = ScoreSettings(device="cpu",
                                 cache_dir=str(embedding_cache))
        result = score_sweep(gt_path, preds, Thresholds(tau_weak, tau_strong), settings)
        dirs = [out / n for n in names]
        write_sweep(result, dirs)
        for n, d in zip(names, dirs):
            results[n] = json.loads((d / "results_eval.json").read_text())
    return results


def test_every_golden_case_matches(scored: dict[str, dict], golden_dir: Path) -> None:
    for name, mine in scored.items():
        gold = json.loads((golden_dir / name / "results_eval.json").read_text())
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


def test_similarities_of_matches_agree(scored: dict[str, dict], golden_dir: Path) -> None:
    """Where both scorers chose the same pair, the similarity agrees to float32 precision."""
    checked = 0
    for name, mine in scored.items():
        gold = json.loads((golden_dir / name / "results_eval.json").read_text())
        for m, g in zip(mine["per_id"], gold["per_id"]):
            theirs = {(x["gt_call_index"], x["pred_call_index"]): x["similarity"] for x in g["details"]["matches"]}
            for x in m["details"]["matches"]:
                key = (x["gt_call_index"], x["pred_call_index"])
                if key in theirs:
                    assert x["similarity"] == pytest.approx(theirs[key], abs=1e-5)
                    checked += 1
    assert checked > 3000


def test_stem_collision_gets_parent_names(tmp_path: Path) -> None:
    a, b = tmp_path / "runA" / "pred.json", tmp_path / "runB" / "pred.json"
    assert output_dirs([a, b], tmp_path / "out") == [tmp_path / "out" / "runA_pred", tmp_path / "out" / "runB_pred"]
