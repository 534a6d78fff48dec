"""Comparing runs: the report app groups results by the settings that make them comparable, the score app's
multirun gets one combined table, and every score run is listed in the run index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from preloaded import run_python

from engine.apps import report, view
from engine.reports.groups import group_results
from engine.reports.index import append_run, read_index
from engine.reports.read import collect_run
from tests.test_reports import block

ROOT = Path(__file__).resolve().parents[1]


def _score_multirun(tmp_path: Path, cache: Path, sweep: str) -> tuple[Path, str]:
    """A score multirun of the 3-task demo sweeping `sweep`; returns its folder and what it printed."""
    runs = tmp_path / "runs"
    proc = run_python([str(ROOT / "scripts" / "score.py"), "-m", f"demo.dir={tmp_path / 'demo'}",
                           "demo.n_tasks=3", f"encoder.cache_dir={cache}", f"output_dir={runs}",
                           f"index_dir={tmp_path / 'index'}", "device=cpu", "progress=false", sweep],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return runs, proc.stdout


@pytest.mark.slow
def test_runs_of_other_thresholds_are_separated_and_named(tmp_path: Path, embedding_cache: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Two runs with other align.tau_weak: the multirun's table and report.py on their parent give one
    leaderboard per group and say that tau_weak differs; --one-table refuses; the index lists both runs."""
    runs, printed = _score_multirun(tmp_path, embedding_cache, "align.tau_weak=0.5,0.7")
    combined = json.loads((runs / "report" / "comparison.json").read_text())
    assert {row["tau_weak"] for row in combined["rows"]} == {0.5, 0.7} and len(combined["rows"]) == 10
    assert "tau_weak differs (0.5, 0.7)" in combined["note"]
    pivot = json.loads((runs / "report" / "comparison_pivot.json").read_text())
    assert pivot["columns"] == ["Model", "tau_weak 0.5", "tau_weak 0.7"] and len(pivot["rows"]) == 5
    by_cell = {(row["Model"].split("/")[-1], row["tau_weak"]): row["Average Score"] for row in combined["rows"]}
    assert all(row[f"tau_weak {t}"] == by_cell[(row["Model"], t)] for row in pivot["rows"] for t in (0.5, 0.7))
    assert "| Model | tau_weak 0.5 | tau_weak 0.7 |" in printed
    assert printed.count("comparison_pivot.md") == 1 and printed.strip().splitlines()[-1].startswith("multirun: 10")

    assert report.run([str(runs), "--out", str(tmp_path / "again")]) == 0
    groups = (tmp_path / "again" / "groups.md").read_text()
    assert "tau_weak differs (0.5, 0.7)" in groups and groups.count("- ") == 2
    boards = sorted((tmp_path / "again").glob("*/leaderboard.json"))
    assert [len(json.loads(b.read_text())["rows"]) for b in boards] == [5, 5]

    assert report.run([str(runs), "--one-table"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "tau_weak differs (0.5, 0.7)" in err
    assert not (runs / "leaderboard.md").exists()  # nothing written into the folder of the runs

    entries = read_index(tmp_path / "index")
    assert sorted(e["settings"]["tau_weak"] for e in entries) == [0.5, 0.7]
    assert all(len(e["average_score"]) == 5 for e in entries)
    assert report.run(["--list", str(tmp_path / "index")]) == 0
    listed = capsys.readouterr().out
    assert str(runs / "align.tau_weak=0.5") in listed and str(runs / "align.tau_weak=0.7") in listed
    assert view.run([str(runs / "align.tau_weak=0.5")]) == 0
    assert view.run([str(tmp_path / "index")]) == 0
    page = (tmp_path / "index" / "runs.html").read_text()
    assert page.count("<tr><td>") == 10 and page.count(">site</a>") == 5 and page.count("not built") == 5


@pytest.mark.slow
def test_runs_of_the_same_settings_share_one_table(tmp_path: Path, embedding_cache: Path) -> None:
    """Two runs differing only in how they were computed (encoder.batch_size): one leaderboard of both, in
    the folder's report/ and not among the runs."""
    runs, printed = _score_multirun(tmp_path, embedding_cache, "encoder.batch_size=16,32")
    assert "multirun: 10 results, all comparable" in printed
    assert report.run([str(runs), "--one-table"]) == 0
    board = json.loads((runs / "report" / "leaderboard.json").read_text())
    assert len(board["rows"]) == 10
    assert not (runs / "report" / "groups.md").exists() and not (runs / "leaderboard.md").exists()


def _result(folder: Path, gt: Path, **meta: object) -> None:
    folder.mkdir(parents=True)
    data = {"aggregate": block(0.5), "by_type": {}, "per_id": [],
            "meta": {"model": folder.name, "gt": str(gt), "tau_weak": 0.5, "tau_strong": 0.8, "profile": "reference",
                     **meta}}
    (folder / "results_eval.json").write_text(json.dumps(data))


def test_the_reference_is_compared_by_content(tmp_path: Path) -> None:
    """The same reference file at two paths is one reference set; another content, or another profile or
    encoder (read from the run's .hydra/config.yaml), is another group."""
    same_a, same_b, other = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    same_a.write_text("[1]")
    same_b.write_text("[1]")
    other.write_text("[2]")
    _result(tmp_path / "runs" / "one", same_a)
    _result(tmp_path / "runs" / "two", same_b)
    _result(tmp_path / "runs" / "three", other)
    _result(tmp_path / "runs" / "four", same_a, profile="paper")
    run = tmp_path / "runs" / "five"
    _result(run / "m", same_a)
    (run / ".hydra").mkdir()
    (run / ".hydra" / "config.yaml").write_text("encoder:\n  model: /models/other-encoder\n")
    groups = group_results(collect_run(tmp_path / "runs"), tmp_path / "runs")
    assert sorted(sorted(r.name for r in g.results) for g in groups) == [["four"], ["m"], ["one", "two"], ["three"]]
    encoders = {g.results[0].name: g.settings["encoder"] for g in groups}
    assert encoders["m"] == "/models/other-encoder" and encoders["one"] == "unrecorded"


DAMAGED = [(5, "not an object (int)"), ({"models": ["m"]}, "no 'run' folder"),
           ({"run": "/r/two", "models": 5}, "'models' must be a list of model names, got 5"),
           ({"run": "/r/three", "models": [["a"]]}, "'models' must be a list of model names, got [['a']]"),
           ({"run": "/r/four", "models": ["m"], "average_score": {"m": "high"}},
            "'average_score' must map each model to a number or null"),
           ({"run": "/r/five", "models": ["m"], "settings": [1]}, "'settings' must be an object")]
"""Hand-edited index entries (each once a TypeError of report.py --list or view.py) and the warning naming each."""


def test_a_damaged_index_entry_is_skipped_with_a_warning_naming_it(tmp_path: Path) -> None:
    good = {"run": "/r/one", "time": "2025-01-01T00:00:00+0000", "models": ["m"], "settings": {"tau_weak": 0.6},
            "average_score": {"m": 0.5}}
    entries = [good, *(entry for entry, _ in DAMAGED)]
    (tmp_path / "index.json").write_text(json.dumps(entries))
    warnings = [f"warning: {tmp_path / 'index.json'}: entry [{i}] skipped: {why}"
                for i, (_, why) in enumerate(DAMAGED, 1)]
    listed = run_python([str(ROOT / "scripts" / "report.py"), "--list", str(tmp_path)])
    assert (listed.returncode, listed.stderr.splitlines()) == (0, warnings), listed.stderr
    assert "/r/one" in listed.stdout and "0.5000" in listed.stdout and "/r/two" not in listed.stdout
    page = run_python([str(ROOT / "scripts" / "view.py"), str(tmp_path)])
    assert (page.returncode, page.stderr.splitlines()) == (0, warnings), page.stderr
    assert (tmp_path / "runs.html").read_text().count("<tr><td>") == 1

    append_run(tmp_path, {**good, "run": "/r/six"})  # a new run keeps the entries it cannot read as they are
    assert json.loads((tmp_path / "index.json").read_text()) == [*entries, {**good, "run": "/r/six"}]
