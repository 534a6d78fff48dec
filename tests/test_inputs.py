"""The score app's `inputs` node (engine.inputs): what to score planned by a pure function (nothing written,
the demo neither), the old spellings read as the node's settings with one warning each, and two sources at
once refused in one line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.apps.compose import compose
from engine.apps.config import typed
from engine.apps.config.score import ScoreConfig
from engine.apps.shorthands import MOVED, score_shorthands
from engine.contract import ConfigError
from engine.inputs import Plan, resolve_inputs


def _tree(root: Path) -> list[tuple[str, int]]:
    """Every entry under root with its modification time."""
    return sorted((str(p.relative_to(root)), p.stat().st_mtime_ns) for p in root.rglob("*"))


def _settings(argv: list[str]) -> ScoreConfig:
    return typed("score", compose("score", score_shorthands(argv)))


def _plan(cfg: ScoreConfig) -> Plan:
    return resolve_inputs(cfg.inputs, cfg.data, cfg.demo, Path(cfg.results_dir), cfg.trials.n)


def test_planning_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """resolve_inputs and the check of an existing output folder on an empty home with data=demo: the plan
    names the demo's files, and no file or folder is made or touched (the run writes the demo)."""
    from engine.apps.score import check_existing_folder

    monkeypatch.setenv("M3BENCH_HOME", str(tmp_path / "home"))
    (tmp_path / "out").mkdir()
    before = _tree(tmp_path)
    cfg = _settings([f"output_dir={tmp_path / 'out'}"])
    plan = _plan(cfg)
    assert plan.demo is not None and plan.gt == tmp_path / "home" / "demo" / "reference.json"
    assert plan.names[:2] == ["demo_strong", "demo_medium"] and plan.folders
    check_existing_folder(compose("score", [f"output_dir={tmp_path / 'out'}"], hydra=True), tmp_path / "out")
    assert _tree(tmp_path) == before
    assert not (tmp_path / "home").exists()


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """A reference, two models' prediction files under a results folder, and a judge file."""
    for name in ("gt.json", "a_test_mcp_fuzzy.json", "b_test_mcp_fuzzy.json", "j.json"):
        (tmp_path / name).write_text("[]")
    return tmp_path


OLD_AND_NEW = [
    (["model.predictions={d}/a_test_mcp_fuzzy.json"], ["inputs.file={d}/a_test_mcp_fuzzy.json"]),
    (["model.predictions={d}/a_test_mcp_fuzzy.json", "model.name=alpha"],
     ["inputs.file={d}/a_test_mcp_fuzzy.json", "inputs.name=alpha"]),
    (["model.predictions={d}/a_test_mcp_fuzzy.json", "model.judge={d}/j.json"],
     ["inputs.file={d}/a_test_mcp_fuzzy.json", "inputs.verdicts.judge={d}/j.json"]),
    (["model.predictions={d}/a_test_mcp_fuzzy.json", "+model.verifiers={d}/j.json"],
     ["inputs.file={d}/a_test_mcp_fuzzy.json", "inputs.verdicts.verifiers={d}/j.json"]),
    (["sweep.predictions=[{d}/a_test_mcp_fuzzy.json,{d}/b_test_mcp_fuzzy.json]"],
     ["inputs.files=[{d}/a_test_mcp_fuzzy.json,{d}/b_test_mcp_fuzzy.json]"]),
    (["sweep.models=[a,b]", "results_dir={d}"], ["inputs.models=[a,b]", "results_dir={d}"]),
    (["sweep.models=[a]", "sweep.discover=true", "results_dir={d}"],
     ["inputs.models=[a]", "inputs.discover=true", "results_dir={d}"]),
    (["trials.predictions=[{d}/a_test_mcp_fuzzy.json,{d}/b_test_mcp_fuzzy.json]"],
     ["inputs.trials=[{d}/a_test_mcp_fuzzy.json,{d}/b_test_mcp_fuzzy.json]"]),
]


@pytest.mark.parametrize(("old", "new"), OLD_AND_NEW)
def test_an_old_spelling_plans_what_its_new_one_plans(files: Path, capsys: pytest.CaptureFixture, old: list[str],
                                                      new: list[str]) -> None:
    """Each old spelling of MOVED gives the plan of its new spelling, with one warning on stderr per old key
    naming the new one; the new spelling says nothing."""
    base = [f"data.gt={files}/gt.json", "output_dir=o"]
    planned_old = _plan(_settings([*base, *(a.format(d=files) for a in old)]))
    warned = capsys.readouterr().err.splitlines()
    planned_new = _plan(_settings([*base, *(a.format(d=files) for a in new)]))
    assert capsys.readouterr().err == ""
    assert planned_old == planned_new and planned_new.predictions
    keys = [a.split("=")[0].lstrip("+") for a in old if a.split("=")[0].lstrip("+") in MOVED]
    assert len(warned) == len(keys) and keys
    for line, key in zip(warned, keys):
        assert line.startswith(f"warning: {key} is now {MOVED[key]} (read as {MOVED[key]}=")
        assert line.endswith("the old spelling goes in the next release")


def test_every_moved_setting_is_tested() -> None:
    """The table of old spellings is covered by the cases above (the verdict options by two of them)."""
    tested = {a.split("=")[0].lstrip("+") for old, _ in OLD_AND_NEW for a in old}
    assert {k for k in MOVED if not k.startswith("model.") or k in ("model.predictions", "model.name")} <= tested
    assert all(MOVED[k] == f"inputs.verdicts.{k[len('model.'):]}" for k in MOVED
               if k.startswith("model.") and k not in ("model.predictions", "model.name"))


@pytest.mark.parametrize("argv", [
    ["inputs.file=a.json", "inputs.files=[b.json]"],
    ["predictions=a.json", "inputs.trials=[b.json]"],
    ["model.predictions=a.json", "sweep=leaderboard"],
])
def test_two_sources_are_refused_in_one_line(argv: list[str]) -> None:
    with pytest.raises(ConfigError) as caught:
        _settings([*argv, "data.gt=g.json"])
    line = str(caught.value)
    assert "\n" not in line and "names the files to score already: give one of inputs.file" in line


def test_verdicts_only_for_one_file() -> None:
    with pytest.raises(ConfigError, match=r"^inputs.verdicts.judge=j.json: is for the one file of inputs.file, not "
                                          r"for inputs.files"):
        _settings(["inputs.files=[a.json]", "inputs.verdicts.judge=j.json", "data.gt=g.json"])


def test_two_sources_end_a_run_with_status_2_and_one_line(tmp_path: Path) -> None:
    """The command line: one line, status 2, no run folder left."""
    from script_runs import call_app

    proc = call_app("score", "inputs.file=a.json", "inputs.files=[b.json]", f"output_dir={tmp_path / 'out'}",
                    cwd=tmp_path)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("error: inputs.files=[b.json]: inputs.file names the files to score already")
    assert os.listdir(tmp_path) == []
