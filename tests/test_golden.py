"""Parity with the published scorer's outputs in ../shared/golden (real encoder, real GT)."""

from __future__ import annotations

from pathlib import Path

import pytest
from golden import agreeing_similarities, assert_matches_golden, score_golden

from engine.pipeline import output_dirs


@pytest.fixture(scope="module")
def scored(gt_path: Path, golden_dir: Path, embedding_cache: Path, tmp_path_factory) -> dict[str, dict]:
    """Every golden case scored on the CPU and written; name -> results_eval."""
    return score_golden(gt_path, golden_dir, tmp_path_factory.mktemp("golden-out"), "cpu", str(embedding_cache))


@pytest.mark.slow
def test_every_golden_case_matches(scored: dict[str, dict], golden_dir: Path) -> None:
    assert_matches_golden(scored, golden_dir)


@pytest.mark.slow
def test_similarities_of_matches_agree(scored: dict[str, dict], golden_dir: Path) -> None:
    """Where both scorers chose the same pair, the similarity agrees to float32 precision."""
    assert agreeing_similarities(scored, golden_dir) > 3000


def test_stem_collision_gets_parent_names(tmp_path: Path) -> None:
    a, b = tmp_path / "runA" / "pred.json", tmp_path / "runB" / "pred.json"
    assert output_dirs([a, b], tmp_path / "out") == [tmp_path / "out" / "runA_pred", tmp_path / "out" / "runB_pred"]
