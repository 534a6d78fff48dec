"""The Hydra config of scripts/rollout.py and its command line: overrides, bad input, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rollout_helpers import ROOT, compose, write_json

MODELS = sorted(p.stem for p in (ROOT / "conf" / "rollout" / "model").glob("*.yaml"))


def test_model_override_selects_the_rollout_model_group():
    cfg = compose("model=gpt5")
    assert cfg["model"]["provider"] == "openai" and cfg["model"]["name"] == "gpt-5"
    assert cfg["model"]["api_key_env"] == "OPENAI_API_KEY"
    assert cfg["output"] == "results/rollout/gpt-5/all/pred.json"
    assert Path(cfg["servers"]) == ROOT / "rollout" / "servers.json"
    assert cfg["curate"].get("model") is None


@pytest.mark.parametrize("name", MODELS)
def test_every_rollout_model_resolves_to_its_own_file(name):
    cfg = compose(f"model={name}", f"model@curate.model={name}", "exposure=retrieve", "tasks=demo")
    assert cfg["model"]["provider"] in ("openai", "anthropic", "scripted")
    assert cfg["curate"]["model"] == cfg["model"]
    assert cfg["exposure"]["mode"] == "retrieve" and Path(cfg["tasks"]["file"]).is_file()


def test_rollout_groups_do_not_leak_into_other_configs():
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    compose("model=gpt5")
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        names = {p.stem for p in (ROOT / "conf" / "model").glob("*.yaml")}
        if "gpt5" in names:
            other = hydra_compose(config_name="config", overrides=["model=gpt5"])
            assert "provider" not in other["model"]


def _cli(*args, cwd, env=None):
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "rollout.py"), *args,
                           f"hydra.run.dir={cwd / 'hydra'}"], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=env)


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    tasks = write_json(tmp_path / "tasks.json", [{"id": "a", "image": None, "question": "ok"},
                                                 {"id": "b", "image": "images/missing.png", "question": "q"}])
    result = _cli("model=scripted", "tasks=demo", f"tasks.file={tasks}", f"output={tmp_path / 'o.json'}",
                  cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {tasks}: id b: field 'image': image file")
    assert "Traceback" not in result.stderr + result.stdout

    bad = write_json(tmp_path / "bad.json", [{"id": "a", "question": ""}])
    result = _cli("model=scripted", f"tasks.file={bad}", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: {bad}: id a: field 'question': missing or empty text"


def test_missing_api_key_is_one_line_and_exit_2(tmp_path):
    tasks = write_json(tmp_path / "tasks.json", [{"id": "a", "image": None, "question": "What is 2+2?"}])
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    result = _cli("model=gpt5", f"tasks.file={tasks}", f"output={tmp_path / 'o.json'}", cwd=tmp_path, env=env)
    assert result.returncode == 2
    assert result.stderr.strip() == "error: config: field 'model.api_key_env': environment variable " \
                                    "OPENAI_API_KEY is not set"


def test_demo_runs_from_the_command_line(tmp_path):
    out = tmp_path / "demo" / "pred.json"
    result = _cli("model=scripted", "tasks=demo", f"output={out}", "stage=both", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    preds = json.loads(out.read_text())
    assert [p["id"] for p in preds] == ["demo-0001", "demo-0002", "demo-0003", "demo-0004"]
    assert not any(c["is_error"] for p in preds for s in p["steps"] for c in s["calls"])
    optimal = json.loads((out.parent / "optimal.json").read_text())
    assert [o["id"] for o in optimal] == [p["id"] for p in preds]
    assert "4 of 4 task(s) done" in result.stdout and "4 optimal trajectories" in result.stdout
