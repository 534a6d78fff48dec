"""The apps' front door keeps no hidden state: the configs' resolvers are registered in one place (so any config
root composes without importing the app that reads it), a command line's check composes its config once
(a swept bounded setting's further values are set on copies), sys.argv is Hydra's only while Hydra runs, and
the run-folder callback keeps nothing on its class."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest
from script_runs import root_logger_kept

from engine.apps import check
from engine.apps.kit import RunFolder, check_argv
from engine.apps.shorthands import score_shorthands

ROOT = Path(__file__).resolve().parents[1]


def test_resolvers_are_registered_in_one_place() -> None:
    found = [str(p.relative_to(ROOT)) for folder in ("engine", "rollout", "scripts")
             for p in (ROOT / folder).rglob("*.py") if "register_new_resolver" in p.read_text(encoding="utf-8")]
    assert found == ["engine/apps/resolvers.py"]


def test_the_rollout_and_judge_configs_compose_without_their_apps() -> None:
    """conf/rollout names ${rollout_path:...}, conf/judge ${judged_name:...}: both resolve with only the
    engine's composition imported."""
    code = ("import sys\n"
            "from omegaconf import OmegaConf\n"
            "from engine.apps.compose import compose\n"
            "OmegaConf.to_container(compose('rollout', ['model=scripted']), resolve=True)\n"
            "judge = compose('judge', ['predictions=x/m.json', 'results_dir=r'])\n"
            "assert OmegaConf.to_container(judge, resolve=True)['run_dir'].endswith('judge/m'), judge.run_dir\n"
            "assert not [m for m in sys.modules if m.startswith('rollout')], sorted(sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.parametrize("argv", [
    ["align.tau_weak=0.5", "data=demo"],
    ["-m", "align.tau_weak=0.5,0.6,0.7", "data=demo"],
    ["-m", "encoder.batch_size=8,16", "align.tau_strong=0.7,0.9", "data=demo"],
    ["model=scripted", "data=rollout_demo"],
])
def test_the_check_composes_once(argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "scripted_test_mcp_fuzzy.json").write_text("[]")
    monkeypatch.setenv("M3BENCH_RESULTS", str(tmp_path))
    calls: list[object] = []
    real = check.compose  # the one compose of the check (the shorthands compose nothing)
    monkeypatch.setattr(check, "compose", lambda *a, **k: calls.append(a) or real(*a, **k))
    check_argv("score", argv, rewrite=score_shorthands)
    assert len(calls) == 1, calls


def test_a_swept_value_out_of_range_is_still_refused(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as stop:
        check_argv("score", ["-m", "align.tau_weak=0.5,1.5", "data=demo"], rewrite=score_shorthands)
    assert stop.value.code == 2
    assert capsys.readouterr().err == "error: align.tau_weak=1.5: must be a number in [-1, 1]\n"


def test_sys_argv_is_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After main(argv) and after main() on the process's arguments (both refused here: SystemExit), sys.argv
    is unchanged, the shorthands' spelling included."""
    from engine.apps.calibrate import main

    monkeypatch.setattr(sys, "argv", ["calibrate.py", f"output_dir={tmp_path / 'out'}", "profile=paper"])
    before = list(sys.argv)
    with root_logger_kept():  # Hydra's log file was in the run folder the refused run removed
        with pytest.raises(SystemExit):
            main([f"output_dir={tmp_path / 'out'}", "tau_weak_grid=[2]"])
        assert sys.argv == before
        with pytest.raises(SystemExit):
            main()
        assert sys.argv == before


def test_the_run_folder_callback_keeps_nothing_on_its_class() -> None:
    own = {k: v for k, v in vars(RunFolder).items() if not k.startswith("__")}
    assert all(inspect.isfunction(v) for v in own.values()), own
