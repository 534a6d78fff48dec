"""The rollout's Hydra app: its own config root, --help, the run layout, bad input and exit codes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rollout_helpers import ROOT, compose, write_json

from engine.apps.kit import config_groups
from engine.apps.overrides import CommandLineError
from engine.contract import InputError
from engine.contract.settings import record
from rollout.cli import tasks_shorthand
from rollout.runner import run

GROUPS = config_groups("rollout")  # its own (model, exposure, preset) and the shared data sets (data)
SCORING_GROUPS = sorted(config_groups("score"))


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "rollout.py"), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=180, env=env)


@pytest.fixture(scope="module")
def help_text(tmp_path_factory) -> str:
    cwd = tmp_path_factory.mktemp("help-cwd")
    result = _cli("--help", cwd=cwd)
    assert result.returncode == 0, result.stderr
    assert not list(cwd.iterdir())
    return result.stdout


def _section(text: str, title: str, next_title: str) -> list[str]:
    return text.split(f"== {title} ==", 1)[1].split(f"== {next_title} ==", 1)[0].strip().splitlines()


def _documented(help_text: str) -> dict[str, str]:
    rows = [re.match(r"^(\S+)\s{2,}(\S.*)$", line) for line in _section(help_text, "Settings", "Configuration groups")]
    return {m.group(1): m.group(2) for m in rows if m}


def _leaves(node: object, documented: dict[str, str], prefix: str = "") -> set[str]:
    """Dotted keys of the leaves; a mapping the help documents as one setting counts as a leaf."""
    if isinstance(node, dict) and node and prefix not in documented:
        return {k for key, value in node.items()
                for k in _leaves(value, documented, f"{prefix}.{key}" if prefix else key)}
    return {prefix}


def test_help_lists_only_the_rollout_groups(help_text):
    listed = dict(line.split(": ", 1) for line in _section(help_text, "Configuration groups", "Config")[1:] if line)
    assert {group: options.split(", ") for group, options in listed.items()} == GROUPS
    assert sorted(GROUPS) == ["data", "exposure", "model", "preset"]
    assert set(SCORING_GROUPS) - set(GROUPS)  # the scoring app's own groups (align, encoder, ...) exist
    assert not (set(SCORING_GROUPS) - set(GROUPS)) & set(listed)


def test_every_setting_has_one_description_line_and_no_other(help_text):
    documented = _documented(help_text)
    leaves: set[str] = set()
    for group, options in GROUPS.items():
        for option in options:
            extra = [f"model@curate.model={option}"] if group == "model" else []
            leaves |= _leaves(record(compose(f"{group}={option}", *extra)), documented)
    assert "model.script" in leaves and "exposure.top_k" in leaves and "curate.model" in leaves
    assert sorted(leaves - set(documented)) == [], "settings without a description in --help"
    assert sorted(set(documented) - leaves) == [], "--help describes settings the config does not have"


def test_tasks_names_a_shared_data_set():
    """tasks=NAME is data=NAME (tasks=demo: rollout_demo), swept values too; the tasks.* settings are left."""
    assert tasks_shorthand(["tasks=demo", "tasks.ids=[a]", "model=scripted"]) == \
        ["data=rollout_demo", "tasks.ids=[a]", "model=scripted"]
    assert tasks_shorthand(["-m", "tasks=vtb_demo,demo"]) == ["-m", "data=vtb_demo,rollout_demo"]
    with pytest.raises(CommandLineError, match=r"^tasks=vtbdemo: no data set 'vtbdemo' \(conf/shared/data/\); "
                                               r"closest: vtb_demo, demo"):
        tasks_shorthand(["tasks=vtbdemo"])


def test_one_task_id_is_a_list_of_one_and_what_no_id_is_is_refused():
    """tasks.ids is a list of ids (engine.apps.config.rollout.RolloutTasks): one id on the command line is spelt
    as the list of it, a value holding what no task id is is one line naming the setting."""
    assert tasks_shorthand(["tasks.ids=5", "tasks.ids='a,b'", "tasks.ids=[a]", "tasks.ids=null"]) == \
        ["tasks.ids=[5]", "tasks.ids=['a,b']", "tasks.ids=[a]", "tasks.ids=null"]
    assert compose("model=scripted", "tasks=demo", "tasks.ids=5").tasks.ids == ["5"]
    for value in ("{a:1}", "[[a]]", "[true]", "1.5"):
        with pytest.raises(CommandLineError, match=r"^tasks\.ids=.*: must be a task id or a list of task ids"):
            tasks_shorthand([f"tasks.ids={value}"])


def test_the_rollout_config_composes_without_importing_the_rollout():
    """The shipped configs name the rollout's files with the engine's own resolver (project_path), so that
    conf/rollout composes and is made its typed config whatever was imported before (once rollout.cli had to
    be imported first, for its rollout_path resolver)."""
    code = ("import sys; from engine.apps.compose import compose; from engine.apps.config import APPS, typed; "
            "cfg = typed(APPS['rollout'], compose('rollout', ['model=scripted_mcpverse', 'data=rollout_demo']), "
            "missing_as_none=True); "
            "assert not [m for m in sys.modules if m.split('.')[0] == 'rollout'], 'rollout imported'; "
            "print(cfg.servers); print(cfg.model.script)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [str(ROOT / "rollout" / "servers.json"),
                                        str(ROOT / "rollout" / "demo" / "mcpverse" / "agent.json")]


def test_a_data_set_without_tasks_is_one_line_naming_the_settings(tmp_path):
    for name in ("mcpverse", "demo"):  # a checkout not named yet; the score app's generated demo
        cfg = compose("model=scripted", f"data={name}", f"results_dir={tmp_path}")
        with pytest.raises(InputError, match=rf"field 'tasks.file': no tasks to run \(data set {name} names none\): "
                                             r"set tasks.file=PATH, or tasks.root=DIR for a folder of tasks$"):
            run(cfg)
    assert list(tmp_path.iterdir()) == []


def test_layout_of_a_run(monkeypatch):
    monkeypatch.delenv("M3BENCH_RESULTS", raising=False)
    cfg = compose("model=gpt5")
    assert cfg.model.provider == "openai" and cfg.model.api_name == "gpt-5"
    assert cfg.predictions == "results/gpt5_test_mcp_fuzzy.json"
    assert cfg.run_dir == "results/rollout/gpt5"
    assert [cfg.workspace, cfg.cache_dir, cfg.server_logs] == \
        ["results/rollout/gpt5/workspace", "results/rollout/gpt5/cache", "results/rollout/gpt5/server_logs"]
    assert record(cfg.curate) == {"verdicts": "results/rollout/gpt5/verdicts.json",
                                  "optimal": "results/rollout/gpt5/optimal.json", "max_result_chars": 1500,
                                  "model": None}
    assert Path(cfg.servers) == ROOT / "rollout" / "servers.json"
    monkeypatch.setenv("M3BENCH_RESULTS", "/data/results")
    assert compose("model=claude").predictions == "/data/results/claude45_sonnet_test_mcp_fuzzy.json"


@pytest.mark.parametrize("name", GROUPS["model"])
def test_every_rollout_model_resolves_to_its_own_file(name):
    cfg = compose(f"model={name}", f"model@curate.model={name}", "exposure=retrieve", "tasks=demo")
    assert cfg.model.provider in ("openai", "anthropic", "scripted")
    assert cfg.curate.model == cfg.model
    assert cfg.exposure.mode == "retrieve" and cfg.tasks.file is not None and Path(cfg.tasks.file).is_file()


@pytest.mark.slow
def test_bad_input_is_one_line_and_exit_2(tmp_path):
    tasks = write_json(tmp_path / "tasks.json", [{"id": "a", "image": None, "question": "ok"},
                                                 {"id": "b", "image": "images/missing.png", "question": "q"}])
    results = f"results_dir={tmp_path / 'results'}"
    result = _cli("model=scripted", "tasks=demo", f"tasks.file={tasks}", results, cwd=tmp_path / "cwd")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {tasks}: id b: field 'image': 1 of 2 task images are "
                                                   f"not under {tmp_path}")
    assert lines[0].endswith("the images are not shipped with the tasks file: put them in a folder and give it as "
                             "tasks.images_dir")
    assert "Traceback" not in result.stderr + result.stdout

    bad = write_json(tmp_path / "bad.json", [{"id": "a", "question": ""}])
    result = _cli("model=scripted", f"tasks.file={bad}", results, cwd=tmp_path / "cwd")
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: {bad}: id a: field 'question': missing or empty text"


@pytest.mark.slow
def test_missing_api_key_is_one_line_and_exit_2(tmp_path):
    tasks = write_json(tmp_path / "tasks.json", [{"id": "a", "image": None, "question": "What is 2+2?"}])
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    result = _cli("model=gpt5", f"tasks.file={tasks}", f"results_dir={tmp_path / 'results'}", cwd=tmp_path / "cwd",
                  env=env)
    assert result.returncode == 2
    assert result.stderr.strip() == "error: config: field 'model.api_key_env': environment variable " \
                                    "OPENAI_API_KEY is not set"


@pytest.mark.slow
def test_demo_runs_from_the_command_line(tmp_path):
    cwd, results = tmp_path / "cwd", tmp_path / "results"
    result = _cli("model=scripted", "tasks=demo", "stage=both", f"results_dir={results}", cwd=cwd)
    assert result.returncode == 0, result.stdout + result.stderr
    assert not list(cwd.iterdir())  # nothing lands in the working directory
    preds = json.loads((results / "scripted_test_mcp_fuzzy.json").read_text())
    assert [p["id"] for p in preds] == ["demo-0001", "demo-0002", "demo-0003", "demo-0004"]
    assert not any(c["is_error"] for p in preds for s in p["steps"] for c in s["calls"])
    run_dir = results / "rollout" / "scripted"
    assert {p.name for p in run_dir.iterdir()} == {".hydra", "rollout.log", "workspace", "tool_logs", "server_logs",
                                                   "verdicts.json", "optimal.json", ".verdicts.json.lock",
                                                   ".optimal.json.lock"}
    assert (run_dir / ".hydra" / "config.yaml").is_file() and "4 task(s)" in (run_dir / "rollout.log").read_text()
    optimal = json.loads((run_dir / "optimal.json").read_text())
    assert [o["id"] for o in optimal] == [p["id"] for p in preds]
    assert "4 of 4 task(s) finished, 0 failed" in result.stdout and "4 optimal trajectories" in result.stdout
