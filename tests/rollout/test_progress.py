"""The rollout's and the judge's progress bars: one tick per task on a terminal's stderr, none when stderr is
not a terminal, and the same outputs either way."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from rollout_helpers import compose, compose_judge, predictions_of

from rollout.judges.run import run as judge
from rollout.runner import run as rollout

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
