"""Each bounded setting's range is declared once, on its schema field (engine.apps.config), and checked by
the app kit on the composed config before any work: a value outside it is one line naming the setting,
exit status 2, and nothing is written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from preloaded import run_python
from script_runs import call_app

from engine.apps.compose import compose
from engine.apps.config import RANGES, SCHEMAS, check_ranges
from engine.apps.kit import CommandLineError, check_command_line
from engine.contract import ConfigError
from kernels.device import device_problem, resolve_device

ROOT = Path(__file__).resolve().parents[1]

# (app, the setting's override outside its range, the line that refuses it, the range's edge, admitted)
CASES = [
    ("score", "encoder.batch_size=0", "encoder.batch_size=0: must be an integer >= 1", "encoder.batch_size=1"),
    ("score", "encoder.save_every=-0.5", "encoder.save_every=-0.5: must be a number >= 0", "encoder.save_every=0"),
    ("score", "align.tau_weak=1.5", "align.tau_weak=1.5: must be a number in [-1, 1]", "align.tau_weak=1"),
    ("score", "align.tau_strong=-1.01", "align.tau_strong=-1.01: must be a number in [-1, 1]", "align.tau_strong=-1"),
    ("score", "align.tau_weak_grid=[0.5,1.5]",
     "align.tau_weak_grid=[0.5,1.5]: each value must be a number in [-1, 1], got 1.5", "align.tau_weak_grid=[-1,1]"),
    ("score", "align.tau_strong_grid=[-2]",
     "align.tau_strong_grid=[-2.0]: each value must be a number in [-1, 1], got -2.0", "align.tau_strong_grid=[]"),
    ("score", "demo.n_tasks=0", "demo.n_tasks=0: must be an integer >= 1", "demo.n_tasks=1"),
    ("score", "stats.resamples=1", "stats.resamples=1: must be an integer >= 2", "stats.resamples=2"),
    ("score", "stats.min_clusters=1", "stats.min_clusters=1: must be an integer >= 2", "stats.min_clusters=2"),
    ("score", "stats.seed=-1", "stats.seed=-1: must be an integer >= 0", "stats.seed=0"),
    ("score", "stats.level=1.5", "stats.level=1.5: must be a number in [0, 1]", "stats.level=0.5"),
    ("score", "stats.power=-0.1", "stats.power=-0.1: must be a number in [0, 1]", "stats.power=0.5"),
    ("score", "demo.seed=-1", "demo.seed=-1: must be an integer >= 0", "demo.seed=0"),
    ("score", "trials.n=0", "trials.n=0: must be an integer >= 1 or null", "trials.n=null"),
    ("score", "trials.success.threshold=1.2", "trials.success.threshold=1.2: must be a number in [0, 1]",
     "trials.success.threshold=0"),
    ("calibrate", "tau_weak_grid=[2]", "tau_weak_grid=[2.0]: each value must be a number in [-1, 1], got 2.0",
     "tau_weak_grid=[1]"),
    ("calibrate", "tau_strong_grid=[0.5,-3]",
     "tau_strong_grid=[0.5,-3.0]: each value must be a number in [-1, 1], got -3.0", "tau_strong_grid=[-1]"),
    ("rollout", "concurrency=0", "concurrency=0: must be an integer >= 1", "concurrency=1"),
    ("rollout", "max_step=0", "max_step=0: must be an integer >= 1", "max_step=1"),
    ("rollout", "max_concurrent=-2", "max_concurrent=-2: must be an integer >= 1", "max_concurrent=1"),
    ("rollout", "trials=0", "trials=0: must be an integer >= 1 or null", "trials=1"),
    ("rollout", "merge=0", "merge=0: must be an integer >= 1 or null", "merge=1"),
    ("rollout", "max_result_chars=-1", "max_result_chars=-1: must be an integer >= 0", "max_result_chars=0"),
    ("rollout", "max_restarts=-1", "max_restarts=-1: must be an integer >= 0", "max_restarts=0"),
    ("rollout", "call_timeout=-1", "call_timeout=-1.0: must be a number >= 0", "call_timeout=0"),
    ("rollout", "start_timeout=-0.5", "start_timeout=-0.5: must be a number >= 0", "start_timeout=0.5"),
    ("rollout", "ping_timeout=-2", "ping_timeout=-2.0: must be a number >= 0", "ping_timeout=0"),
    ("judge", "concurrency=0", "concurrency=0: must be an integer >= 1", "concurrency=1"),
    ("judge", "attempts=0", "attempts=0: must be an integer >= 1", "attempts=1"),
    ("judge", "merge=0", "merge=0: must be an integer >= 1 or null", "merge=1"),
    ("judge", "max_result_chars=-5", "max_result_chars=-5: must be an integer >= 0", "max_result_chars=0"),
]


@pytest.mark.parametrize(("app", "setting", "line", "edge"), CASES, ids=lambda v: str(v))
def test_a_value_outside_its_range_is_one_line_naming_the_setting(app: str, setting: str, line: str,
                                                                   edge: str) -> None:
    with pytest.raises(ConfigError) as caught:
        check_ranges(app, compose(app, [setting]))
    assert str(caught.value) == line
    check_ranges(app, compose(app, [edge]))  # the range's edge is in it
    with pytest.raises(CommandLineError, match=f"^{re.escape(line)}$"):
        check_command_line(app, [setting])


def test_every_bounded_setting_is_declared_and_its_default_in_range() -> None:
    """The ranges are the schemas' own (one declaration each), and every app's defaults lie in them."""
    assert sorted(RANGES) == sorted(SCHEMAS)
    assert {(app, setting.split("=")[0]) for app, setting, _, _ in CASES} == {
        (app, key) for app, ranges in RANGES.items() for key in ranges}
    for app in SCHEMAS:
        check_ranges(app, compose(app))


def test_every_value_of_a_sweep_is_checked_before_the_first_job() -> None:
    with pytest.raises(CommandLineError, match=r"^concurrency=0: must be an integer >= 1$"):
        check_command_line("rollout", ["-m", "model=scripted", "concurrency=2,0"])
    with pytest.raises(CommandLineError, match=r"^align.tau_weak=2.0: must be a number in \[-1, 1\]$"):
        check_command_line("score", ["-m", "align.tau_weak=0.5,2", "metrics=reference,paper"])
    assert check_command_line("rollout", ["-m", "concurrency=2,1"])[:2] == ["-m", "concurrency=2,1"]


@pytest.mark.parametrize(("app", "args", "line"), [
    ("score", ["demo.n_tasks=0", "output_dir={out}"], "demo.n_tasks=0: must be an integer >= 1"),
    ("calibrate", ["pairs=p.json", "tau_weak_grid=[0.5,7]", "output_dir={out}"],
     "tau_weak_grid=[0.5,7.0]: each value must be a number in [-1, 1], got 7.0"),
    ("rollout", ["model=scripted", "tasks=demo", "concurrency=0", "results_dir={out}"],
     "concurrency=0: must be an integer >= 1"),
    ("judge", ["model=x", "judges=scripted", "attempts=0", "results_dir={out}"], "attempts=0: must be an integer >= 1"),
])
def test_the_command_line_refuses_before_any_work(tmp_path: Path, app: str, args: list[str], line: str) -> None:
    proc = run_python([str(ROOT / "scripts" / f"{app}.py"),
                           *(a.format(out=tmp_path / "out") for a in args)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", f"error: {line}\n")
    assert list(tmp_path.iterdir()) == []


def test_a_value_the_command_line_does_not_show_is_refused_before_the_run(tmp_path: Path) -> None:
    """A group option's file of one's own (`--config-dir`, left unchecked by the command line's check) that
    sets a value outside its range: each job's config is checked before it runs, and its run folder goes."""
    (tmp_path / "conf" / "preset").mkdir(parents=True)
    (tmp_path / "conf" / "preset" / "bad.yaml").write_text("# @package _global_\nconcurrency: 0\n")
    proc = run_python([str(ROOT / "scripts" / "rollout.py"), "--config-dir",
                           str(tmp_path / "conf"), "preset=bad", "model=scripted", "tasks=demo",
                           f"results_dir={tmp_path / 'results'}"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)
    assert (proc.returncode, proc.stderr) == (2, "error: concurrency=0: must be an integer >= 1\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["conf"]


# (app, the settings a user typed, the one line; each once a traceback with exit status 1 or a run with them)
TYPED = [
    ("score", ["device=gpu9"], "device=gpu9: must be auto, cpu, cuda or cuda:N (N: a CUDA device's number)"),
    ("score", ["device=gpu"], "device=gpu: must be auto, cpu, cuda or cuda:N (N: a CUDA device's number)"),
    ("calibrate", ["device=cuda:1x"], "device=cuda:1x: must be auto, cpu, cuda or cuda:N (N: a CUDA device's number)"),
    ("score", ["-m", "device=cpu,gpu"], "device=gpu: must be auto, cpu, cuda or cuda:N (N: a CUDA device's number)"),
    ("score", ["output_dir=/proc/m3bench/forbidden"], "output_dir=/proc/m3bench/forbidden: cannot be made in /proc ("),
    ("score", ["output_dir={tmp}/a_file"], "output_dir={tmp}/a_file: exists and is not a folder"),
    ("score", ["output_dir={tmp}/a_file/run"], "output_dir={tmp}/a_file/run: cannot be made: {tmp}/a_file is not a "
     "folder"),
    ("score", ["hydra.run.dir={tmp}/a_file"], "hydra.run.dir={tmp}/a_file: exists and is not a folder"),
    ("calibrate", ["output_dir={tmp}/a_file"], "output_dir={tmp}/a_file: exists and is not a folder"),
    ("rollout", ["results_dir=/proc/m3bench"], "results_dir=/proc/m3bench: cannot be made in /proc ("),
    ("judge", ["run_dir={tmp}/a_file"], "run_dir={tmp}/a_file: exists and is not a folder"),
    ("rollout", ["tasks.ids={a:1}"], "tasks.ids={'a': 1}: must be a task id or a list of task ids (text or integers); "
     "{'a': 1} is not one"),
    ("judge", ["ids=[[a]]"], "ids=[[a]]: must be a task id or a list of task ids (text or integers); [a] is not one"),
    ("rollout", ["tasks.ids=5"], "rollout/demo/tasks.json: requested id(s) not in the file: 5"),
    ("rollout", ["call_timeout=[1]"], "call_timeout=[1]: wrong type for call_timeout: Value '[1]' of type 'list' "
     "could not be converted to Float"),
    ("judge", ["data.references={a:1}"], "data.references={a:1}: wrong type for data.references: Cannot merge "
     "DictConfig with ListConfig"),  # once "m3bench-judge has no setting data.references (closest: data.references)"
    ("score", ["reports=91"], "reports=91: reports is a flag: true or false"),
    ("rollout", ["-m", "prepare=true,no"], "prepare=true,no: prepare is a flag: true or false"),
]
BASE = {"score": ["demo.n_tasks=3", "demo.dir={tmp}/demo", "output_dir={tmp}/out", "index_dir=null"],
        "calibrate": ["pairs={tmp}/pairs.json", "output_dir={tmp}/out"],
        "rollout": ["model=scripted", "tasks=demo", "results_dir={tmp}/results"],
        "judge": ["model=m", "judges=scripted", "data=rollout_demo", "results_dir={tmp}/results"]}


@pytest.mark.parametrize(("app", "typed", "line"), TYPED, ids=lambda v: str(v))
def test_a_typed_value_no_run_can_use_is_one_line_before_any_work(tmp_path: Path, app: str, typed: list[str],
                                                                  line: str) -> None:
    """Devices that exist, output folders that can be made, task ids, flags, each typed value: checked with the
    settings, before any work; nothing is left where the run would have written."""
    (tmp_path / "a_file").write_text("")
    given = [a.split("=")[0] for a in typed]
    args = [a.replace("{tmp}", str(tmp_path)) for a in BASE[app] if a.split("=")[0] not in given
            and not (a.startswith("output_dir") and "hydra.run.dir" in given)]
    proc = call_app(app, *(a.replace("{tmp}", str(tmp_path)) for a in typed), *args, cwd=tmp_path)
    assert (proc.returncode, "Traceback" in proc.stderr, len(proc.stderr.splitlines())) == (2, False, 1), proc.stderr
    expected = f"error: {line.replace('{tmp}', str(tmp_path))}"
    assert proc.stderr.startswith(expected) if line.endswith("(") else \
        proc.stderr.rstrip("\n").endswith(expected.removeprefix("error: ")), proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]


def test_a_cuda_device_is_one_torch_sees(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a machine with one CUDA device (as torch sees it) and on one with none."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert [device_problem(d) for d in ("auto", "cpu", "cuda", "cuda:0")] == [None] * 4
    assert device_problem("cuda:1") == "torch sees 1 CUDA device here: cuda:0"
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert device_problem("cuda:2") == "torch sees 2 CUDA devices here: cuda:0 to cuda:1"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match=r"^device=cuda: torch sees no CUDA device here \(device=cpu, or auto, runs "
                                         r"on the CPU\)$"):
        resolve_device("cuda")
    with pytest.raises(ConfigError, match="^device=cuda:0: torch sees no CUDA device here"):
        check_ranges("calibrate", compose("calibrate", ["device=cuda:0"]))
