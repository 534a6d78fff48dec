"""The score app's shorthands: `model=NAME` scores <results_dir>/NAME_test_mcp_fuzzy.json for any NAME whose
file is there (as rollout.py and judge.py take model=NAME), and a run naming results_dir writes its scores
under <results_dir>/scores/<time>/ unless it names its output folder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from script_runs import ROOT, run_script

from engine.apps.kit import CommandLineError
from engine.apps.shorthands import SCORES_DIR, score_shorthands


def test_a_model_name_with_a_prediction_file_is_scored_as_that_file(tmp_path: Path) -> None:
    (tmp_path / "scripted_test_mcp_fuzzy.json").write_text("[]")
    path = tmp_path / "scripted_test_mcp_fuzzy.json"
    assert score_shorthands(["model=scripted", f"results_dir={tmp_path}", "output_dir=o"]) == [
        "model=none", "model.name=scripted", f"model.predictions='{path}'", f"results_dir={tmp_path}", "output_dir=o",
        "data=m3bench"]
    # a leaderboard option
    assert score_shorthands(["model=gpt5", "device=cpu"]) == ["model=gpt5", "device=cpu", "data=m3bench"]
    assert score_shorthands(["model=gpt5", "data=vtb"]) == ["model=gpt5", "data=vtb"]  # a data set named


def test_an_unknown_model_without_a_file_names_both(tmp_path: Path) -> None:
    with pytest.raises(CommandLineError) as caught:
        score_shorthands(["model=gpt55", f"results_dir={tmp_path}"])
    assert str(caught.value) == (f"model=gpt55: no prediction file {tmp_path}/gpt55_test_mcp_fuzzy.json, and group "
                                 "model has no option 'gpt55'; closest: gpt5")


@pytest.mark.parametrize(("argv", "added"), [
    (["results_dir=r"], True), (["results_dir=r", "output_dir=o"], False),
    (["results_dir=r", "hydra.run.dir=o"], False), (["data=demo"], False)])
def test_scores_go_beside_the_results_named(argv: list[str], added: bool) -> None:
    data = [] if "data=demo" in argv else ["data=m3bench"]  # results_dir names what to score
    assert score_shorthands(argv) == argv + data + ([f"output_dir={SCORES_DIR}"] if added else [])


@pytest.mark.slow
def test_score_model_scripted_after_a_rollout(tmp_path: Path, embedding_cache: Path) -> None:
    results = tmp_path / "R"
    run_script("rollout", "model=scripted", "tasks=demo", f"results_dir={results}", cwd=tmp_path)
    proc = run_script("score", "model=scripted", "data=rollout_demo", f"results_dir={results}", "device=cpu",
                      f"encoder.cache_dir={embedding_cache}", cwd=tmp_path)
    out = Path(proc.stdout.splitlines()[-1].removeprefix("outputs: "))
    assert out.parent == results / "scores"
    aggregate = json.loads((out / "results_eval.json").read_text())["aggregate"]
    assert aggregate["num_ids"] == 4 and aggregate["recall"] == 1.0
    assert any(line.startswith("scripted  4 ") for line in proc.stdout.splitlines())  # the summary table
    bad = subprocess.run([sys.executable, str(ROOT / "scripts" / "score.py"), "model=scripte",
                          f"results_dir={results}"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1
    assert bad.stderr == (f"error: model=scripte: no prediction file {results}/scripte_test_mcp_fuzzy.json, and group "
                          "model has no option 'scripte'; closest: scripted\n")
    kept = sorted(p.name for p in results.iterdir() if not p.name.startswith("."))  # the rollout's lock aside
    assert kept == ["rollout", "scores", "scripted_test_mcp_fuzzy.json"]
