"""Ctrl-C: a real SIGINT, sent as a terminal sends it (to the app's whole process group) while the app is busy,
ends every app with one line on stderr and status 130, never a traceback: scoring (and it keeps what was
encoded), the rollout starting its servers, the judge waiting on its judges, the viewer serving, an app
still loading its modules. (A rollout interrupted with tasks under way: tests/rollout/test_model_faults.py.)"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _score(tmp_path: Path, out: str) -> list[str]:
    """The demo (60 tasks: about 750 texts, several batches) scored into a fresh cache, the vectors saved
    after every batch (encoder.save_every=0)."""
    return [sys.executable, str(ROOT / "scripts" / "score.py"), "data=demo", "demo.n_tasks=60",
            f"demo.dir={tmp_path / 'demo'}", f"encoder.cache_dir={tmp_path / 'cache'}", "encoder.save_every=0",
            f"output_dir={tmp_path / out}"]


@pytest.mark.slow
def test_sigint_during_encoding_keeps_the_batches_done(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(_score(tmp_path, "first"), cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not list((tmp_path / "cache").glob("*/*.npz")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no encoding was saved in time"
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("interrupted")]
    assert len(lines) == 1 and re.match(r"interrupted: \d+ of \d+ texts encoded and saved", lines[0]), err
    assert err.rstrip().endswith(lines[0])
    assert not (tmp_path / "first" / "results_eval.json").exists()
    assert not any((tmp_path / "first").glob("*/results_eval.json"))

    again = subprocess.run(_score(tmp_path, "second"), cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=600)
    assert again.returncode == 0, again.stderr
    n, cached, encoded = map(int, re.search(r"texts: (\d+) distinct, (\d+) cached, (\d+) encoded",
                                            again.stdout).groups())
    saved = int(re.match(r"interrupted: (\d+)", lines[0]).group(1))
    assert cached == saved > 0 and encoded < n and cached + encoded == n


def _interrupt_when(command: list[str], cwd: Path, marker: Callable[[str], bool], stream: str = "stdout",
                    timeout: float = 300) -> tuple[str, str]:
    """Run a script, send SIGINT to its process group once a line of its `stream` satisfies `marker`;
    (stdout, stderr) once it has ended with status 130 and no traceback."""
    proc = subprocess.Popen([sys.executable, *command], cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    seen, deadline = [], time.monotonic() + timeout
    watched = proc.stdout if stream == "stdout" else proc.stderr
    try:
        while not seen or not marker(seen[-1]):
            line = watched.readline()
            assert line and time.monotonic() < deadline, ("".join(seen), proc.communicate(timeout=60))
            seen.append(line)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    out, err = (("".join(seen) + out, err) if stream == "stdout" else (out, "".join(seen) + err))
    assert proc.returncode == 130, (out[-3000:], err[-3000:])
    assert "Traceback" not in out + err, (out[-3000:], err[-3000:])
    return out, err


def test_sigint_while_the_rollout_starts_its_servers(tmp_path: Path) -> None:
    results = tmp_path / "results"
    _, err = _interrupt_when([str(ROOT / "scripts" / "rollout.py"), "model=scripted", "tasks=demo",
                              f"results_dir={results}"], tmp_path, lambda line: "MCP server excel: python" in line)
    assert err.splitlines() == [("rollout: interrupted; the tasks under way are recorded as cut short "
                                 "(kind cut_short), and running the same command again does them")], err


def test_sigint_while_judging_keeps_the_tasks_judged(tmp_path: Path) -> None:
    """The judges answer slowly (one in 5 s): Ctrl-C once the judging has started; what the file holds is whole."""
    predictions = tmp_path / "x_test_mcp_fuzzy.json"
    shutil.copy(ROOT / "rollout" / "demo" / "reference.json", predictions)
    _, err = _interrupt_when([str(ROOT / "scripts" / "judge.py"), f"predictions={predictions}", "judges=scripted",
                              "data=rollout_demo", f"results_dir={tmp_path}", f"cache_dir={tmp_path / 'cache'}",
                              "judges.pool.scripted_a.delay=5"], tmp_path, lambda line: "task(s) to judge" in line)
    assert err.splitlines() == [("interrupted: the tasks judged so far are in their files (each is written as a task "
                                 "is judged); running the same command again judges the rest")], err
    verdicts = tmp_path / "x_test_mcp_fuzzy_taskcompletion.json"
    assert not verdicts.exists() or isinstance(json.loads(verdicts.read_text()), dict)


def test_sigint_while_the_viewer_serves(tmp_path: Path) -> None:
    gt, pred = tmp_path / "gt.json", tmp_path / "p.json"
    gt.write_text(json.dumps([{"id": "1", "steps": [{"calls": [{"name": "a/b", "arguments": {"x": 1}}]}]}]))
    pred.write_text(json.dumps([{"id": "1", "steps": []}]))
    block = {"recall": 0.5, "precision": 0.5, "avg_sim_all_cov": 0.5, "avg_sim_strong_cov": 0.5,
             "step_coherence_cov": 0.5, "order_consistency_cov": 0.5, "merge_purity_cov": 0.5, "avg_Rounds": 1.0,
             "avg_tool_calls": 1.0, "num_ids": 1}
    run = tmp_path / "run"
    (run / "m").mkdir(parents=True)
    (run / "m" / "results_eval.json").write_text(json.dumps({
        "aggregate": block, "by_type": {}, "per_id": [{"id": "1", **block, "details": {"matches": []}}],
        "meta": {"model": "m", "tau_strong": 0.8, "gt": str(gt), "predictions": str(pred)}}))
    _, err = _interrupt_when([str(ROOT / "scripts" / "view.py"), str(run), "--serve", "--port", "0"], tmp_path,
                             lambda line: line.startswith("serving "))
    assert err.splitlines() == [f"interrupted: stopped serving; the site stays in {run / 'viewer'}"], err
    assert (run / "viewer" / "index.html").is_file()


CONSOLE_SCRIPT = ("import sys; from engine.apps.interrupt import report; sys.argv[0] = 'm3bench-report'; "
                  "sys.exit(report())")
"""What the installed `m3bench-report` runs (pip's console-script wrapper of its entry point)."""


@pytest.mark.parametrize("how", ["script", "console script"])
def test_sigint_while_an_app_loads(tmp_path: Path, how: str) -> None:
    """Ctrl-C while the report app still imports its modules (-X importtime names each as it is loaded: Hydra
    is among the app's, loaded after the guard's), run as scripts/report.py or as the installed `m3bench-report`."""
    start = [str(ROOT / "scripts" / "report.py")] if how == "script" else ["-c", CONSOLE_SCRIPT]
    _, err = _interrupt_when(["-X", "importtime", *start, str(tmp_path)], tmp_path,
                             lambda line: line.split("|")[-1].strip() == "hydra._internal", stream="stderr")
    assert [line for line in err.splitlines() if not line.startswith("import time:")] == \
        ["interrupted (Ctrl-C): the run stopped before its outputs were written"], err[-3000:]


def test_every_console_script_starts_its_app_through_the_interrupt_guard() -> None:
    """Each `m3bench-*` entry point is a function of engine.apps.interrupt (standard library only) that runs
    an app module's `main`, so Ctrl-C while that module loads is one line there too."""
    import importlib

    from engine.apps import interrupt

    table = (ROOT / "pyproject.toml").read_text().split("[project.scripts]\n", 1)[1].split("\n\n", 1)[0]
    scripts = dict(re.findall(r'^([\w-]+) = "([\w.:]+)"$', table, re.M))
    assert len(scripts) == 7
    for command, target in scripts.items():
        module, name = target.split(":")
        assert module == "engine.apps.interrupt" and command == f"m3bench-{name}", target
        assert callable(getattr(interrupt, name)), target
    apps = re.findall(r'run_app\("([\w.]+)"\)', (ROOT / "engine" / "apps" / "interrupt.py").read_text())
    assert len(apps) == 7
    for app in apps:
        assert callable(importlib.import_module(app).main), app
    stdlib = {"__future__", "importlib", "sys"}
    source = (ROOT / "engine" / "apps" / "interrupt.py").read_text()
    imported = set(re.findall(r"^(?:from|import) ([\w.]+)", source, re.M))
    assert imported <= stdlib, imported


def test_processes_the_tests_start_get_sigint_as_default_when_the_suite_starts_with_it_ignored() -> None:
    """A suite started as a background job (`pytest ... &`, nohup) has SIGINT ignored, and a process it starts
    inherits that: the Ctrl-C tests above then saw their interrupt dropped. With the suite's conftest loaded, a
    process started from such a job has SIGINT at its default (Python's KeyboardInterrupt handler)."""
    probe = ("import signal, subprocess, sys; sys.path.insert(0, 'tests'); import conftest; "
             "print(subprocess.run([sys.executable, '-c', 'import signal; print(signal.getsignal(signal.SIGINT))'], "
             "capture_output=True, text=True, check=True).stdout.strip())")
    started = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                             capture_output=True, text=True, timeout=300,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert started.returncode == 0, started.stderr
    assert started.stdout.strip() == str(signal.default_int_handler), started.stdout
