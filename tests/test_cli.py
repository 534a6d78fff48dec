"""The Hydra command line, run as a user would: python scripts/score.py overrides..."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from preloaded import run_python

ROOT = Path(__file__).resolve().parents[1]
OUTPUT_FILES = {"results_eval.json", "results_eval.csv", "strong_matches.json", "weak_matches.json",
                "unmatched_predictions.json"}


def score(*overrides: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_python([str(ROOT / "scripts" / "score.py"), *overrides], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("small")
    gt = [{"id": f"{i}", "type": "fam" + str(i % 2), "steps": [
        {"step": 1, "calls": [{"name": "maps/search", "arguments": {"query": f"cafe near station {i}"}}]},
        {"step": 2, "calls": [{"name": "weather/now", "arguments": {"city": c}} for c in ("Paris", "Lyon")]}]}
        for i in range(4)]
    pred = json.loads(json.dumps(gt))
    pred[0]["steps"][1]["calls"][0]["arguments"]["city"] = "Marseille"
    pred[1]["steps"] = pred[1]["steps"][::-1]
    paths = {"gt": d / "gt.json", "a": d / "a" / "pred.json", "b": d / "b" / "pred.json"}
    paths["a"].parent.mkdir()
    paths["b"].parent.mkdir()
    paths["gt"].write_text(json.dumps(gt))
    paths["a"].write_text(json.dumps(pred))
    paths["b"].write_text(json.dumps(gt))
    return paths


@pytest.mark.slow
def test_single_file(small, tmp_path: Path, embedding_cache: Path) -> None:
    out = tmp_path / "out"
    proc = score(f"data.gt={small['gt']}", f"inputs.file={small['a']}", f"output_dir={out}",
                 f"encoder.cache_dir={embedding_cache}", "device=cpu", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert OUTPUT_FILES <= {p.name for p in out.iterdir()}
    result = json.loads((out / "results_eval.json").read_text())
    assert result["aggregate"]["num_ids"] == 4 and result["aggregate"]["avg_sim_all_cov"] < 0.99
    assert result["per_id"][1]["order_consistency_cov"] < result["per_id"][2]["order_consistency_cov"]
    assert "Recall" in proc.stdout and "Average Score" in proc.stdout and "outputs:" in proc.stdout


@pytest.mark.slow
def test_sweep_with_colliding_stems_and_options(small, tmp_path: Path, embedding_cache: Path) -> None:
    out = tmp_path / "sweep"
    proc = score(f"data.gt={small['gt']}", f"inputs.files=[{small['a']},{small['b']}]", f"output_dir={out}",
                 f"encoder.cache_dir={embedding_cache}", "align.tau_weak=0.7", "align.tau_strong=0.9",
                 "metrics.profile=paper", "device=cpu", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert {p.name for p in out.iterdir() if p.is_dir()} >= {"a_pred", "b_pred"}
    assert "share the stem" in proc.stdout + proc.stderr
    b = json.loads((out / "b_pred" / "results_eval.json").read_text())
    assert b["meta"]["tau_weak"] == 0.7 and b["meta"]["profile"] == "paper"
    assert b["aggregate"]["recall"] == 1.0 and "arg_sim" in b["aggregate"]


@pytest.mark.slow
def test_bad_input_is_one_line(small, tmp_path: Path, embedding_cache: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"id": "x1", "steps": [{"calls": [{"name": 3}]}]}]))
    proc = score(f"data.gt={small['gt']}", f"inputs.file={bad}", f"output_dir={tmp_path / 'o'}",
                 f"encoder.cache_dir={embedding_cache}", "device=cpu", cwd=tmp_path)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines[-1] == f"error: {bad}: id x1: field 'steps[0].calls[0].name': a call needs a non-empty string 'name'"
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_leaderboard_sweep_without_files(small, tmp_path: Path) -> None:
    proc = score(f"data.gt={small['gt']}", f"output_dir={tmp_path / 'o'}", "sweep=leaderboard",
                 f"results_dir={tmp_path / 'none'}", cwd=tmp_path)
    assert proc.returncode == 2
    assert "none of the sweep's models has a prediction file" in proc.stderr.splitlines()[-1]


@pytest.mark.slow
def test_judge_files_join_the_outputs(small, tmp_path: Path, embedding_cache: Path) -> None:
    """The leaderboard sweep finds a new model's file by its name, with the published judge files beside it;
    model.judge names a judge file of the list shape."""
    results = tmp_path / "results"
    results.mkdir()
    pred = results / "mine_test_mcp_fuzzy.json"
    pred.write_text(small["a"].read_text())
    judges = [{"name": "j1", "score": 0.8}]
    (results / "mine_test_mcp_fuzzy_taskcompletion.json").write_text(json.dumps({
        "aggregate": {"num_total": 5, "num_scored": 3, "completion_rate": 0.5, "information_grounding_rate": 0.8},
        "pre_id": {"0": {"final": 0.8, "judges": judges, "info_grounding": {"final": 0.5, "judges": judges}},
                   "1": {"final": 0.4, "judges": judges, "info_grounding": {"final": 1.0, "judges": judges}},
                   "9": {"final": 0.0, "judges": judges, "info_grounding": {"final": 0.0, "judges": judges}}}}))
    counts = {"illegal_calling": 1, "unknown_tool": 2, "invalid_arguments": 0, "resource_not_found": 1, "success": 9}
    (results / "mine_test_mcp_fuzzy_callanalysis.json").write_text(json.dumps(counts))
    out = tmp_path / "board"
    proc = score(f"data.gt={small['gt']}", "sweep=leaderboard", f"results_dir={results}", f"output_dir={out}",
                 f"encoder.cache_dir={embedding_cache}", "device=cpu", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads((out / "mine" / "results_eval.json").read_text())
    aggregate = result["aggregate"]
    assert aggregate["task_completion"] == pytest.approx(0.6) and aggregate["information_grounding"] == 0.75
    assert {k: aggregate[k] for k in counts} == counts  # totals only: they join the file's aggregate
    assert result["per_id"][0]["task_completion"] == 0.8 and "task_completion" not in result["per_id"][2]
    assert result["by_type"]["fam0"]["task_completion"] == 0.8 and "success" not in result["by_type"]["fam0"]
    assert "2 scored id(s) have no judge record" in proc.stdout + proc.stderr
    assert "Information Grounding" in (out / "leaderboard.md").read_text() and (out / "calls.png").is_file()

    listed = tmp_path / "judge.json"
    listed.write_text(json.dumps([{"id": str(i), "task_completion": 0.25, "information_grounding": 1.0}
                                  for i in range(4)]))
    one = tmp_path / "one"
    proc = score(f"data.gt={small['gt']}", f"inputs.file={pred}", f"inputs.verdicts.judge={listed}",
                 f"output_dir={one}", f"encoder.cache_dir={embedding_cache}", "device=cpu", "reports=false",
                 cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    aggregate = json.loads((one / "results_eval.json").read_text())["aggregate"]
    assert aggregate["task_completion"] == 0.25 and aggregate["success"] == 9


LOADED_AT_THE_ANSWER = """
import os, runpy, sys
def loaded():
    print(" ".join(m for m in ("torch", "matplotlib", "sentence_transformers", "engine.encoders", "engine.pipeline")
                   if m in sys.modules), flush=True)
def exit_now(code, real=os._exit):
    loaded()
    real(code)
os._exit = exit_now
sys.argv = [sys.argv[1], *sys.argv[2:]]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    loaded()
"""
"""Runs a script as `python SCRIPT ARGS` would, then names the heavy modules loaded when it ended (by
SystemExit or by os._exit, as an app's quick exit ends)."""


@pytest.mark.parametrize(("script", "setting", "closest"), [("score.py", "encoder.bakend=onnx", "encoder.backend"),
                                                            ("calibrate.py", "encodr.model=x", "encoder.model")])
def test_a_misspelt_setting_is_answered_before_torch_is_imported(tmp_path: Path, script: str, setting: str,
                                                                 closest: str) -> None:
    """In a fresh Python (not a preloaded one): the one-line answer comes before torch, matplotlib or the
    encoder are imported (engine.apps.front checks the command line before the app's modules load)."""
    proc = subprocess.run([sys.executable, "-c", LOADED_AT_THE_ANSWER, str(ROOT / "scripts" / script), setting],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith(f"error: {setting}: ") and f"(closest: {closest})" in line
    assert proc.stdout.strip() == ""  # none of them loaded


def test_the_score_app_loads_no_plotting_until_it_plots(tmp_path: Path) -> None:
    """Importing the score app loads neither matplotlib nor the encoder's libraries: reports load matplotlib
    when they draw, the encoder its libraries when it encodes."""
    proc = subprocess.run([sys.executable, "-c", "import sys, engine.apps.score; print(' '.join(m for m in "
                           "('matplotlib', 'sentence_transformers', 'onnxruntime', 'openvino') if m in sys.modules))"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""
