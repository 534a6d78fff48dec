"""The rollout's and the judge's progress bars: one tick per task on a terminal's stderr, none when stderr is
not a terminal, and the same outputs either way; on a real (pseudo-)terminal the bar ends at 100% and the
closing line starts a line of its own."""

from __future__ import annotations

import asyncio
import fcntl
import io
import logging
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from rollout_helpers import compose, compose_judge, predictions_of

from engine.contract.progress import TaskBar, track
from rollout.judges.run import run as judge
from rollout.runner import run as rollout

ROOT = Path(__file__).resolve().parents[2]
OUTPUTS = ("scripted_test_mcp_fuzzy.json", "scripted_test_mcp_fuzzy_taskcompletion.json",
           "scripted_test_mcp_fuzzy_callanalysis.json")


class Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def _demo(results: Path) -> None:
    """The offline demo flow: the scripted model's rollout of the demo tasks, then the scripted judges."""
    assert rollout(compose("model=scripted", "tasks=demo", f"results_dir={results}")) == 0
    assert judge(compose_judge("model=scripted", "judges=scripted", "data=rollout_demo", f"results_dir={results}",
                               f"cache_dir={results / 'judges'}")) == 0
    assert predictions_of(results, "scripted").is_file()


def test_a_terminal_shows_each_loop_s_bar_and_the_outputs_stay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    _demo(tmp_path / "plain")
    plain = capsys.readouterr()
    assert "task/s" not in plain.err and "4/4" not in plain.err

    terminal = Terminal()
    monkeypatch.setattr("engine.contract.progress.PROGRESS_DELAY", 0.0)
    monkeypatch.setattr(sys, "stderr", terminal)
    _demo(tmp_path / "shown")
    shown = capsys.readouterr()
    bars = terminal.getvalue()
    for label in ("rollout", "m3_judges", "call_outcomes"):
        assert f"{label}: 100%" in bars and f"{label}:   0%" in bars, bars
    assert bars.count("4/4 [") >= 3

    def same(text: str) -> str:
        return text.replace(str(tmp_path / "shown"), str(tmp_path / "plain"))

    assert same(shown.out) == plain.out
    for name in OUTPUTS:
        assert same((tmp_path / "shown" / name).read_text()) == (tmp_path / "plain" / name).read_text(), name


def on_a_terminal(argv: list[str], cwd: Path, env: dict[str, str]) -> str:
    """What a run of `python argv` writes to a terminal of 120 columns (a pseudo-terminal as its stdin, stdout
    and stderr), as the bytes the terminal received."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))
    proc = subprocess.Popen([sys.executable, *argv], stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env)
    os.close(slave)
    received = bytearray()
    while True:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer of the terminal has closed it
                break
            if not data:
                break
            received += data
        elif proc.poll() is not None:
            break
    proc.wait(timeout=600)
    os.close(master)
    assert proc.returncode == 0, received.decode(errors="replace")
    return received.decode()


def closing_line_and_last_bar(screen: str) -> tuple[str, str | None]:
    """The closing line as the terminal shows it (from the last carriage return of its line), and the last
    state of the rollout's bar drawn before it (None when no bar was drawn)."""
    before, _, after = screen.replace("\r\n", "\n").partition("task(s) finished")
    line = (before.rsplit("\n", 1)[-1] + "task(s) finished" + after.split("\n", 1)[0]).rsplit("\r", 1)[-1]
    bars = re.findall(r"rollout: +(\d+%\|[^\r\n]*)", before)
    return line, (bars[-1] if bars else None)


@pytest.mark.slow
@pytest.mark.parametrize("model_delay", ["0", "1"])
def test_on_a_terminal_the_bar_ends_at_100_and_the_closing_line_is_its_own(tmp_path: Path, model_delay: str) -> None:
    """The demo as a user runs it on a terminal: fast (the tasks end within the bar's delay: the bar drawn by a
    task's log line used to stay at 75% with the closing line glued onto it) and with a slow model (the bar
    shows: it ends at 4/4, 100%); either way the closing line starts a line of its own."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "M3BENCH_HOME": str(tmp_path / "home")}
    screen = on_a_terminal([str(ROOT / "scripts" / "rollout.py"), "model=scripted", "tasks=demo", "concurrency=1",
                            f"model.delay={model_delay}", f"results_dir={tmp_path / 'results'}"], tmp_path, env)
    line, bar = closing_line_and_last_bar(screen)
    assert line.startswith("rollout: 4 of 4 task(s) finished"), repr(screen[-1500:])
    if model_delay == "1":  # a run of at least 8 model replies of 1 s each: past the bar's delay
        assert bar is not None, repr(screen[-1500:])
    assert bar is None or (bar.startswith("100%") and "4/4" in bar), repr(screen[-1500:])


def test_a_redirected_stderr_gets_no_bar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every kind of bar (a task loop's, a stage's) writes nothing into a redirected stderr, even past its
    delay; on a terminal the same bars are drawn and end at 100%."""
    monkeypatch.setattr("engine.contract.progress.PROGRESS_DELAY", 0.0)

    async def loop(bar: TaskBar) -> list[int]:
        async def work(i: int) -> int:
            logging.getLogger("rollout").warning("task %d done", i)
            return i
        return [await bar.each(work)(i) for i in range(3)]

    def bars() -> list[int]:
        with TaskBar(4, "rollout", done=1) as bar:
            ticked = asyncio.run(loop(bar))
        return ticked + list(track(range(3), "load", True, delay=0.0))

    with (tmp_path / "err.log").open("w") as log_file:
        monkeypatch.setattr(sys, "stderr", log_file)
        assert bars() == [0, 1, 2, 0, 1, 2]
    written = (tmp_path / "err.log").read_text()
    assert "%|" not in written and "\r" not in written and "it/s" not in written, written
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    bars()
    assert "rollout: 100%" in terminal.getvalue() and "4/4" in terminal.getvalue(), terminal.getvalue()
    assert "load: 100%" in terminal.getvalue() and "3/3" in terminal.getvalue(), terminal.getvalue()
