"""The score app's shorthands: `model=NAME` scores <results_dir>/NAME_test_mcp_fuzzy.json for any NAME whose
file is there (as rollout.py and judge.py take model=NAME), a run naming results_dir writes its scores
under <results_dir>/scores/<time>/ unless it names its output folder, `predictions=` names the file(s) of
predicted calls (as in the judge and rollout apps), and a renamed setting is read under its new name."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from script_runs import ROOT, run_script

from engine.apps.compose import compose
from engine.apps.kit import CommandLineError
from engine.apps.shorthands import SCORES_DIR, score_shorthands


def test_a_model_name_with_a_prediction_file_is_scored_as_that_file(tmp_path: Path) -> None:
    (tmp_path / "scripted_test_mcp_fuzzy.json").write_text("[]")
    path = tmp_path / "scripted_test_mcp_fuzzy.json"
    assert score_shorthands(["model=scripted", f"results_dir={tmp_path}", "output_dir=o"]) == [
        "model=none", "inputs.name=scripted", f"inputs.file='{path}'", f"results_dir={tmp_path}", "output_dir=o",
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


@pytest.mark.parametrize(("argv", "spelt"), [
    (["predictions=p.json"], ["inputs.file=p.json", "data=m3bench"]),
    (["predictions='a b.json'", "data=vtb"], ["inputs.file='a b.json'", "data=vtb"]),
    (["predictions=${oc.env:P}", "data.gt=G"], ["inputs.file=${oc.env:P}", "data.gt=G", "data=m3bench"]),
    (["predictions=[p1.json,'p 2.json']"], ["inputs.files=[p1.json,'p 2.json']", "data=m3bench"]),
    (["-m", "predictions=p1.json,p2.json"], ["-m", "inputs.file=p1.json,p2.json", "data=m3bench"]),
    (["--multir", "predictions=p1.json,p2.json"], ["--multir", "inputs.file=p1.json,p2.json", "data=m3bench"]),
    (["predictions=p1.json,p2.json"], ["predictions=p1.json,p2.json", "data=m3bench"]),  # no -m: refused as written
    (["predictions=/x/<img>.json"], ["predictions=/x/<img>.json", "data=m3bench"]),  # for the check to name
    (["inputs.file=p.json", "inputs.files=[q.json]", "inputs.trials=[r.json]"],
     ["inputs.file=p.json", "inputs.files=[q.json]", "inputs.trials=[r.json]", "data=m3bench"]),
])
def test_predictions_names_the_files_to_score(argv: list[str], spelt: list[str]) -> None:
    """`predictions=FILE` is inputs.file, `predictions=[...]` inputs.files, a multirun sweep of
    files one job per file; the value as written, and data=m3bench as for any file named."""
    assert score_shorthands(argv) == spelt


def test_predictions_compose_as_the_settings_they_spell(tmp_path: Path) -> None:
    def composed(*argv: str):
        return compose("score", score_shorthands(list(argv)))

    assert composed("predictions=p.json").inputs.file == "p.json"
    assert list(composed("predictions=[p1.json,p2.json]").inputs.files) == ["p1.json", "p2.json"]
    assert composed("predictions=p.json").data.name == "m3bench"


def test_the_old_spelling_of_parse_string_arguments_is_read_with_a_note(capsys) -> None:
    assert score_shorthands(["predictions.parse_string_arguments=true"]) == ["parse_string_arguments=true"]
    assert capsys.readouterr().err == ("note: predictions.parse_string_arguments is now parse_string_arguments: "
                                       "read as parse_string_arguments=true\n")
    cfg = compose("score", score_shorthands(["predictions.parse_string_arguments=true"]))
    assert cfg.parse_string_arguments is True and cfg.data.name == "demo"  # how to score, not what
    assert compose("score").parse_string_arguments is False
    capsys.readouterr()
    assert score_shorthands(["parse_string_arguments=true"]) == ["parse_string_arguments=true"]
    assert capsys.readouterr().err == ""


def _task(tid: str, query: str) -> dict:
    return {"id": tid, "steps": [{"step": 1, "calls": [{"name": "maps/search", "arguments": {"query": query}}]}]}


def test_predictions_file_scores_what_inputs_file_and_the_old_spelling_score(tmp_path: Path,
                                                                             embedding_cache: Path) -> None:
    """predictions=P, inputs.file=P and the old spelling model.predictions=P (with its warning) write the same
    files, byte for byte."""
    (tmp_path / "G.json").write_text(json.dumps([_task(f"g{i}", f"cafe {i}") for i in range(3)]))
    (tmp_path / "P.json").write_text(json.dumps([_task(f"g{i}", "a bakery" if i else "cafe 0") for i in range(3)]))
    common = ["data.gt=G.json", "device=cpu", f"encoder.cache_dir={embedding_cache}", "reports=false",
              "index_dir=null", "progress=false"]
    runs = (("predictions=P.json", "short"), ("inputs.file=P.json", "long"), ("model.predictions=P.json", "old"))
    for setting, out in runs:
        proc = run_script("score", setting, *common, f"output_dir={out}", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        warned = [line for line in proc.stderr.splitlines() if line.startswith("warning: model.predictions")]
        assert len(warned) == (out == "old"), proc.stderr
    short, long = (json.loads((tmp_path / out / "results_eval.json").read_text()) for out in ("short", "long"))
    assert short == long and short["aggregate"]["num_ids"] == 3 and short["meta"]["predictions"] == "P.json"
    written = [sorted(p.name for p in (tmp_path / out).iterdir() if p.is_file()) for _, out in runs]
    assert written[0] == written[1] == written[2]
    for name in written[0]:
        if not name.endswith(".log"):
            assert len({(tmp_path / out / name).read_bytes() for _, out in runs}) == 1, name


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
