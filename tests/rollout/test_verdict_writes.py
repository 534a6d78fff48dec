"""The verdict store writes O(n) bytes: each verdict is appended to the file's journal as it is kept and the file
is written whole on a geometric schedule and at the end (rollout.judges.verdicts), where it was rewritten whole
after every task (O(n^2) bytes); a run stopped mid-way (killed, or Ctrl-C) loses no verdict it had kept, and the
rerun judges only the rest into the same bytes as an uninterrupted run."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rollout_helpers import ROOT, compose_judge

import engine.contract.atomic as atomic
import rollout.judges.verdicts as verdicts
from rollout.judges.run import run

SUFFIX = "_taskcompletion.json"


def _tasks(folder: Path, n: int) -> Path:
    """A predictions file (and the same reference) of n copies of the rollout demo's tasks."""
    demo = json.loads((ROOT / "rollout" / "demo" / "reference.json").read_text(encoding="utf-8"))
    items = []
    for i in range(n):
        item = copy.deepcopy(demo[i % len(demo)])
        item["id"] = f"t{i:04d}"
        items.append(item)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "gt.json").write_text(json.dumps(items), encoding="utf-8")
    predictions = folder / "m_test_mcp_fuzzy.json"
    predictions.write_text(json.dumps(items), encoding="utf-8")
    return predictions


def _cfg(folder: Path, predictions: Path) -> dict:
    return compose_judge("evaluators=[m3_judges]", "judges=scripted", "data=rollout_demo",
                         f"data.gt={folder / 'gt.json'}", f"results_dir={folder}", f"predictions={predictions}",
                         "cache_dir=null", f"run_dir={folder / 'run'}", "concurrency=4")


def test_judging_n_tasks_writes_o_n_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    written = {"bytes": 0}
    real_bytes, real_write = atomic.atomic_write_bytes, os.write

    def counted_bytes(path: Path, data: bytes) -> None:
        if Path(path).name.endswith(SUFFIX):
            written["bytes"] += len(data)
        real_bytes(path, data)

    def counted_write(fd: int, data: bytes) -> int:  # the journal's appends
        if os.readlink(f"/proc/self/fd/{fd}").endswith(SUFFIX + ".journal"):
            written["bytes"] += len(data)
        return real_write(fd, data)

    monkeypatch.setattr(atomic, "atomic_write_bytes", counted_bytes)
    monkeypatch.setattr(os, "write", counted_write)
    predictions = _tasks(tmp_path, 200)
    assert run(_cfg(tmp_path, predictions)) == 0
    final = (tmp_path / f"m_test_mcp_fuzzy{SUFFIX}")
    assert len(json.loads(final.read_text())["pre_id"]) == 200
    assert not Path(str(final) + ".journal").exists()
    assert written["bytes"] <= 4 * final.stat().st_size, (written["bytes"], final.stat().st_size)


def test_a_killed_run_resumes_from_its_journal_into_the_bytes_of_an_uninterrupted_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = _tasks(tmp_path / "whole", 40)
    assert run(_cfg(tmp_path / "whole", whole)) == 0

    class Killed(BaseException):
        """The process dying after its k-th verdict was kept: nothing after it runs, no file is written."""

    kept: list[str] = []
    real_record = verdicts.VerdictFile.record

    def record_then_die(self: verdicts.VerdictFile, verdict: verdicts.Verdict, key: str, usage: object = None) -> None:
        if len(kept) == 15:  # dead: the tasks under way keep nothing
            raise Killed
        real_record(self, verdict, key, usage)  # type: ignore[arg-type]
        kept.append(verdict.task_id)
        if len(kept) == 15:
            raise Killed

    monkeypatch.setattr(verdicts.VerdictFile, "record", record_then_die)
    monkeypatch.setattr(verdicts.VerdictFile, "compact", lambda self, usage=None: None)
    stopped = _tasks(tmp_path / "stopped", 40)
    with pytest.raises(Killed):
        run(_cfg(tmp_path / "stopped", stopped))
    output = tmp_path / "stopped" / f"m_test_mcp_fuzzy{SUFFIX}"
    journal = Path(str(output) + ".journal")
    assert not output.exists() and journal.is_file()
    monkeypatch.undo()

    again: list[str] = []
    real_again = verdicts.VerdictFile.record

    def counted(self: verdicts.VerdictFile, verdict: verdicts.Verdict, key: str, usage: object = None) -> None:
        again.append(verdict.task_id)
        real_again(self, verdict, key, usage)  # type: ignore[arg-type]

    monkeypatch.setattr(verdicts.VerdictFile, "record", counted)
    assert run(_cfg(tmp_path / "stopped", stopped)) == 0
    assert len(kept) == 15 and not set(again) & set(kept) and len(again) == 25
    assert not journal.exists()
    first = (tmp_path / "whole" / f"m_test_mcp_fuzzy{SUFFIX}").read_text().replace(str(tmp_path / "whole"), "<run>")
    second = output.read_text().replace(str(tmp_path / "stopped"), "<run>")
    # the same bytes but the judges' usage, which counts the questions of the tasks the kill cut short besides
    whole_doc, resumed = json.loads(first), json.loads(second)
    more, less = resumed["meta"].pop("usage"), whole_doc["meta"].pop("usage")
    assert list(more) == list(less) and all(more[j]["requests"] >= less[j]["requests"] for j in less)
    assert json.dumps(resumed, indent=1) == json.dumps(whole_doc, indent=1)
    assert second.count("\n") == first.count("\n")


@pytest.mark.slow
def test_ctrl_c_leaves_the_file_written_whole_and_no_journal(tmp_path: Path) -> None:
    predictions = _tasks(tmp_path, 40)
    output = tmp_path / f"m_test_mcp_fuzzy{SUFFIX}"
    journal = Path(str(output) + ".journal")
    proc = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "judge.py"), f"predictions={predictions}",
                             "judges=scripted", "data=rollout_demo", f"data.gt={tmp_path / 'gt.json'}",
                             "evaluators=[m3_judges]", f"results_dir={tmp_path}", "cache_dir=null", "concurrency=2",
                             "judges.pool.scripted_a.delay=0.2"], cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not (journal.is_file() and len(journal.read_text().splitlines()) >= 4):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate(timeout=60)
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    # (the scripted judges' loopback server may say it lost a request cut short: its thread's lines come first)
    assert err.splitlines()[-1] == ("interrupted: the tasks judged so far are in their files (each is written as a "
                                    "task is judged); running the same command again judges the rest"), err
    assert not journal.exists()
    assert 3 <= len(json.loads(output.read_text())["pre_id"]) < 40
