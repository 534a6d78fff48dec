"""Careless and hostile command lines: the score app scores what is named, never the built-in demo in
its place (the README's own commands, as written); a setting or a file it cannot use is one line on
stderr naming the file (or `config`) and the setting, exit status 2, and no output folder is left."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from preloaded import run_python

from engine.apps.compose import compose
from engine.apps.kit import CommandLineError, check_command_line, run_config
from engine.apps.score import NAME_KEYS as SCORE_NAMES
from engine.apps.score import OPEN_KEYS, SPEC, run
from engine.apps.shorthands import score_shorthands
from engine.contract import ConfigError, InputError
from rollout.cli import NAME_KEYS as ROLLOUT_NAMES
from rollout.cli import compose_config as rollout_config
from rollout.judges.cli import NAME_KEYS as JUDGE_NAMES
from rollout.judges.cli import compose_config as judge_config
from rollout.judges.run import run as judge_run
from rollout.runner import run as rollout_run

ROOT = Path(__file__).resolve().parents[1]
NAME_RULE = "cannot be part of a file name: a name is 1 to 100 characters without '/', '\\' or control characters, " \
            "and not '.' or '..'"


def readme_command(marker: str) -> list[str]:
    """The overrides of the docs' `python scripts/score.py ...` line holding marker (README.md or a
    page of docs/), as written."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    lines = [line for page in pages for line in page.read_text(encoding="utf-8").splitlines()
             if line.startswith("python scripts/score.py") and marker in line]
    assert len(lines) == 1, lines
    argv = shlex.split(lines[0].split("  #")[0])
    assert argv[:2] == ["python", "scripts/score.py"]
    return argv[2:]


def task(tid: str, query: str) -> dict:
    return {"id": tid, "steps": [{"step": 1, "calls": [{"name": "maps/search", "arguments": {"query": query}}]}]}


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedding_cache: Path) -> Path:
    """A folder with the README's G and P1..P4 (four trials, judged), the working directory; the
    demo would be written under its home/."""
    (tmp_path / "G").write_text(json.dumps([task(f"g{i}", f"cafe {i}") for i in range(3)]))
    for k in range(1, 5):
        (tmp_path / f"P{k}").write_text(json.dumps([task(f"g{i}", f"cafe {i}" if k % 2 else f"a bakery {i}")
                                                    for i in range(3)]))
        (tmp_path / f"P{k}_taskcompletion.json").write_text(json.dumps(
            [{"id": f"g{i}", "task_completion": 0.3 * i, "information_grounding": 0.5} for i in range(3)]))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("M3BENCH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("M3BENCH_CACHE", str(embedding_cache))
    return tmp_path


def score(capsys: pytest.CaptureFixture, overrides: list[str]) -> tuple[int, list[str]]:
    """The score app's run on the config of these overrides, shorthands spelt out as its command line
    does: (status, stderr lines)."""
    code = run_config(SPEC, run, compose("score", score_shorthands(overrides)))
    return code, capsys.readouterr().err.strip().splitlines()


def test_readme_trials_command_scores_its_reference(files: Path, capsys) -> None:
    """`data.gt=G 'inputs.trials=[P1,P2,P3,P4]' output_dir=D`: once the demo replaced G (the
    trials setting did not count as predictions named); G's tasks are scored, and no demo is made."""
    overrides = readme_command("'inputs.trials=[P1,P2,P3,P4]'")
    assert overrides == ["data.gt=G", "inputs.trials=[P1,P2,P3,P4]", "output_dir=D"]
    code, err = score(capsys, overrides)
    assert code == 0, err
    for i in range(1, 5):
        doc = json.loads((files / "D" / f"P1_trial{i}" / "results_eval.json").read_text())
        assert doc["meta"]["gt"] == "G" and doc["meta"]["predictions"] == f"P{i}"
        assert sorted(e["id"] for e in doc["per_id"]) == ["g0", "g1", "g2"]
    trials = json.loads((files / "D" / "trials.json").read_text())
    assert trials["meta"]["gt"] == "G" and trials["models"]["P1"]["meta"]["trials"] == 4
    assert not (files / "home" / "demo").exists(), "the demo was generated"  # (home/runs: the run index)


def test_the_demo_is_the_default_data_set_unless_something_is_named() -> None:
    """data=demo is the score app's default (its defaults list); a command line naming what to score and
    no data set runs with data=m3bench, one naming only how to score stays on the demo."""
    def data(*overrides: str) -> str:
        return str(compose("score", score_shorthands(list(overrides))).data.name)

    assert data() == "demo" and compose("score").data.name == "demo"
    assert data("device=cpu", "align.tau_weak=0.5", "demo.n_tasks=3", "reports=false", "output_dir=D",
                "encoder.batch_size=8", "metrics=paper", "stats=on", "parse_string_arguments=true",
                "predictions.parse_string_arguments=true", "hydra.job.chdir=true") == "demo"
    for named in (["inputs.trials=[P1]"], ["model=gpt5"], ["data.gt=G"], ["results_dir=R", "trials.n=2"],
                  ["inputs.verdicts.rubrics=r.json"], ["sweep=leaderboard"], ["~model"], ["predictions=P1"],
                  ["predictions=[P1,P2]"]):
        assert data(*named) == "m3bench", named
    assert data("data=rollout_demo", "model=gpt5") == "rollout_demo"
    assert data("data=demo", "model=gpt5") == "demo"
    # inside a running app (another config root's Hydra), which is put back afterwards
    with initialize_config_dir(version_base="1.3", config_dir=str(ROOT / "conf" / "judge")):
        assert compose("score", ["inputs.models=[a]"]).inputs.models == ["a"]
        assert GlobalHydra.instance().is_initialized()
        assert "judges" in compose("judge")


def bad_references(folder: Path) -> str:
    """A reference list whose first entry names another id (once a KeyError)."""
    listed = {"g0": [task("g1", "x"), task("g0", "cafe 0")], "g1": task("g1", "y")}
    (folder / "refs.json").write_text(json.dumps(listed))
    return "refs.json"


def trial_true(folder: Path) -> str:
    """A trial file whose records say `"trial": true` (once accepted as trial 1)."""
    records = json.loads((folder / "P1").read_text())
    (folder / "T1").write_text(json.dumps([{**r, "trial": True} for r in records]))
    (folder / "T1_taskcompletion.json").write_text((folder / "P1_taskcompletion.json").read_text())
    return "T1"


def a_folder(folder: Path) -> str:
    """A folder named as a trial (once counted as a lost trial)."""
    (folder / "P9").mkdir()
    return "P9"


@pytest.mark.parametrize(("overrides", "make", "line"), [
    (["data.gt=G"], None, "no predictions named (data=m3bench): name them with model=NAME, predictions=FILE, "
     "predictions=[FILE,...], inputs.trials=[FILE,...], inputs.models=[NAME,...] or sweep=leaderboard (data=demo, "
     "the default when nothing is named, scores the built-in demo)"),
    (["results_dir=R"], None, "no predictions named (data=m3bench)"),
    (["trials.n=4"], None, "no predictions named (data=m3bench)"),
    (["data=demo", "data.gt=G"], None, "data.gt names a reference and data=demo the built-in demo's: drop one"),
    (["data.gt=G", "inputs.file=P1", "inputs.files=[P2]"], None,
     "inputs.files=[P2]: inputs.file names the files to score already: give one of inputs.file, inputs.files, "
     "inputs.models, inputs.trials"),
    (["data.gt=G", "inputs.trials=[P1,P2]", "model=gpt5"], None,
     "inputs.trials=[P1,P2]: inputs.file names the files to score already"),
    (["data.gt=G", "inputs.file=P1", "inputs.name=../../evil"], None, f"inputs.name=../../evil: {NAME_RULE}"),
    (["data.gt=G", "inputs.trials=[P1,P2]", "inputs.name=.."], None, f"inputs.name=..: {NAME_RULE}"),
    (["data.gt=G", "inputs.models=[ok,a/b]"], None, f"inputs.models=a/b: {NAME_RULE}"),
    (["data.references=[{file}]", "inputs.file=P1"], bad_references,
     "refs.json: id g0: field 'id': reference 0 of the list says id 'g1'"),
    (["data.gt=G", "inputs.trials=[{file},P2]"], trial_true,
     "T1: id g0: field 'trial': must be the trial's number, got True"),
    (["data.gt=G", "inputs.trials=[P1,{file},P3]"], a_folder,
     "P9: field 'inputs.trials': not a file: a trial is a prediction file"),
])
def test_refused_with_one_line_and_nothing_written(files: Path, capsys, overrides: list[str], make, line: str) -> None:
    if make is not None:
        overrides = [o.format(file=make(files)) if "{file}" in o else o for o in overrides]
    before = sorted(p.name for p in files.iterdir())
    code, err = score(capsys, [*overrides, "output_dir=D"])
    assert code == 2 and len(err) == 1 and err[0].startswith(f"error: {line}"), err
    assert sorted(p.name for p in files.iterdir()) == before, "something was written"


def test_a_folder_in_place_of_a_trial_found_by_name(files: Path, capsys) -> None:
    """inputs.file=m.json with m_trial1.json a file and m_trial2.json a folder: once, trial 2 was lost."""
    (files / "m.json").write_text((files / "P1").read_text())
    (files / "m_trial1.json").write_text((files / "P1").read_text())
    (files / "m_trial2.json").mkdir()
    code, err = score(capsys, ["data.gt=G", "inputs.file=m.json", "output_dir=D"])
    assert code == 2 and err == ["error: m_trial2.json: field 'inputs.file': not a file: a trial is a "
                                 "prediction file"]
    assert not (files / "D").exists()


@pytest.mark.parametrize(("app", "argv", "line"), [
    ("score", ["inputs.file=/x/<img src=x>.json"], "inputs.file=/x/<img src=x>.json: not a valid "
     "override (unexpected '<' at character 16); quote the value: inputs.file='...'"),
    ("judge", ["predictions=/x/<img src=x>.json"], "predictions=/x/<img src=x>.json: not a valid override "
     "(unexpected '<' at character 16); quote the value: predictions='...'"),
    ("judge", ["model=x", "predictions=[a.json"], "predictions=[a.json: not a valid override (no viable alternative "
     "at input '[a.json'); quote the value: predictions='...'"),
    ("rollout", ["model.name=a)"], "model.name=a): not a valid override (extraneous input ')' expecting <EOF>); "
     "quote the value: model.name='...'"),
    ("rollout", ["model.name=../../evil"], f"config: field 'model.name': '../../evil' {NAME_RULE}"),
    ("rollout", ["-m", "model.name=ok,../x"], f"config: field 'model.name': '../x' {NAME_RULE}"),
    ("judge", ["model=../../evil"], f"config: field 'model': '../../evil' {NAME_RULE}"),
    ("score", ["inputs.models=[a,..]"], f"config: field 'inputs.models': '..' {NAME_RULE}"),
])
def test_command_line_refusals(app: str, argv: list[str], line: str) -> None:
    names = {"score": SCORE_NAMES, "judge": JUDGE_NAMES, "rollout": ROLLOUT_NAMES}[app]
    with pytest.raises(CommandLineError) as caught:
        check_command_line(app, argv, OPEN_KEYS if app == "score" else (), names)
    assert str(caught.value) == line
    good = {"score": ["inputs.name=gpt-5.1 mini"], "judge": ["model=gpt-5.1"], "rollout": ["model.name=gpt-5.1 mini"]}
    check_command_line(app, good[app], (), names)


def test_the_runs_check_model_names_too(tmp_path: Path) -> None:
    """A config that did not come through the command line (in-process, an interpolation) is checked
    where the name becomes a path."""
    evil = ["model=scripted", "model.name=../../evil", f"results_dir={tmp_path / 'results'}"]
    with pytest.raises(ConfigError, match=f"^model.name=../../evil: {re.escape(NAME_RULE)}$"):
        rollout_run(rollout_config(evil))
    with pytest.raises(InputError, match="^config: field 'model': '../../evil' cannot be part of a file name"):
        judge_run(judge_config(["model=../../evil", "judges=scripted", "data=rollout_demo",
                                           f"results_dir={tmp_path / 'results'}"]))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_the_apps_refuse_before_making_a_folder(tmp_path: Path) -> None:
    """model.name=../../evil once wrote the rollout's predictions two levels above results_dir; a bad
    override was Hydra's four lines and exit status 1."""
    results = tmp_path / "deep" / "results"
    for app, args in (("rollout", ["model=scripted", "model.name=../../evil"]), ("judge", ["model=../../evil"]),
                      ("score", ["inputs.file=/x/<img src=x>.json"]),
                      ("score", ["data.gt=G", "inputs.file=P", "inputs.name=../../evil"])):
        proc = run_python([str(ROOT / "scripts" / f"{app}.py"), *args, f"results_dir={results}",
                               *([f"output_dir={tmp_path / 'out'}"] if app == "score" else [])],
                              cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
        assert proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr
        assert list(tmp_path.iterdir()) == [], (app, args)


def test_the_judge_app_refuses_a_folder_in_place_of_a_trial(tmp_path: Path) -> None:
    """A folder named as trial 2 of the predictions: refused in one line, not silently skipped."""
    (tmp_path / "m.json").write_text("[]")
    (tmp_path / "m_trial1.json").write_text("[]")
    (tmp_path / "m_trial2.json").mkdir()
    with pytest.raises(InputError,
                       match="m_trial2.json: field 'predictions': not a file: a trial is a prediction file"):
        judge_run(judge_config([f"predictions={tmp_path / 'm.json'}", "judges=scripted",
                                           "data=rollout_demo", f"results_dir={tmp_path}"]))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json", "m_trial1.json", "m_trial2.json"]
