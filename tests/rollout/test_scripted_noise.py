"""The noisy scripted model: seeded per (task, trial), so trials differ and a rerun is byte-identical; the
rollout's progress counter counts each task once."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest
from rollout_helpers import compose

from engine.trials import trial_path
from rollout.runner import run
from rollout.scripted_noise import WRONG_REPLY, Noise

PLAN = {"steps": [[{"name": "math/mean", "arguments": {"numbers": [1, 2, 3]}},
                   {"name": "math/median", "arguments": {"numbers": [1, 2, 3]}}],
                  [{"name": "images/crop", "arguments": {"input_path": "a.png", "x1": 4}}],
                  [{"name": "math/evaluate", "arguments": {"expression": "1 + 2"}}]],
        "final_reply": "The mean is 2."}


def test_noise_is_seeded_per_task_and_trial() -> None:
    noise = Noise(rate=0.5, seed=1)
    plans = [noise.perturb(PLAN, "t", trial) for trial in range(1, 9)]
    assert len({json.dumps(p) for p in plans}) > 1  # trials differ
    assert plans == [Noise(rate=0.5, seed=1).perturb(PLAN, "t", trial) for trial in range(1, 9)]  # reproducible
    assert plans != [noise.perturb(PLAN, "u", trial) for trial in range(1, 9)]  # per task
    assert plans != [Noise(rate=0.5, seed=2).perturb(PLAN, "t", trial) for trial in range(1, 9)]  # per seed
    assert PLAN["steps"][0][0]["arguments"] == {"numbers": [1, 2, 3]}  # the plan itself is left alone
    assert Noise(rate=0.0, seed=1).perturb(PLAN, "t", 1) is PLAN


def test_each_perturbation_happens() -> None:
    """Over many trials at rate 0.3: calls dropped, arguments changed, steps swapped, wrong replies."""
    names = [c["name"] for step in PLAN["steps"] for c in step]
    seen = set()
    for trial in range(1, 60):
        plan = Noise(rate=0.3, seed=7).perturb(PLAN, "t", trial)
        calls = [c for step in plan["steps"] for c in step]
        if len(calls) < len(names):
            seen.add("drop")
        if any(c not in [o for s in PLAN["steps"] for o in s] for c in calls):
            seen.add("arguments")
        kept = [c["name"] for c in calls]
        if kept != [n for n in names if n in kept]:
            seen.add("swap")
        if plan["final_reply"] != PLAN["final_reply"]:
            assert plan["final_reply"] == "The mean is 3."
            seen.add("answer")
    assert seen == {"drop", "arguments", "swap", "answer"}
    assert Noise(rate=1.0).perturb({"steps": [], "final_reply": "Done."}, "t", 1)["final_reply"] == WRONG_REPLY


@pytest.mark.parametrize(("setting", "line"), [
    ("model.noise.rate=1.5", "^model.noise.rate=1.5: must be a number from 0 to 1$"),
    ("model.noise.rate=x", "model.noise.rate"), ("model.noise.seed=1.5", "model.noise.seed")])
def test_bad_noise_is_named(setting: str, line: str) -> None:
    """The noise is the model config's node (engine.contract.settings.Noise): a value it refuses, or one of the
    wrong type, is named by its dotted key."""
    with pytest.raises(Exception, match=line):
        compose("model=scripted_noisy", "tasks=demo", setting)


def test_noisy_trials_differ_and_rerun_and_replay_byte_identical(tmp_path: Path,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    runs = {}
    for name, mode in (("a", "mode=record"), ("b", "mode=live")):
        results = tmp_path / name
        with caplog.at_level(logging.INFO, logger="rollout"):
            caplog.clear()
            assert run(compose("model=scripted_noisy", "tasks=demo", "trials=2", f"results_dir={results}", mode)) == 0
        counts = re.findall(r"\((\d) of 4\)", caplog.text)
        assert sorted(counts) == ["1", "1", "2", "2", "3", "3", "4", "4"], caplog.text  # each once per trial
        runs[name] = [trial_path(results / "scripted_noisy_test_mcp_fuzzy.json", i).read_bytes() for i in (1, 2)]
    assert runs["a"][0] != runs["a"][1]
    assert runs["a"] == runs["b"]
    cache = tmp_path / "a" / "rollout" / "scripted_noisy" / "cache"
    replay = tmp_path / "c"
    assert run(compose("model=scripted_noisy", "tasks=demo", "trials=2", f"results_dir={replay}", "mode=replay",
                       f"cache_dir={cache}")) == 0
    assert [trial_path(replay / "scripted_noisy_test_mcp_fuzzy.json", i).read_bytes() for i in (1, 2)] == runs["a"]
