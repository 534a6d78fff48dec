"""Outputs replaced as a unit: the staged folder, and real scoring processes killed while writing."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from preloaded import preloaded, run_python

from engine.contract import ConfigError, staged
from engine.contract.staged import MANIFEST, STAGING, check_output_folder, staged_folder

ROOT = Path(__file__).resolve().parents[1]
SCORE = ROOT / "scripts" / "score.py"


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every output file under folder (relative path -> bytes), without Hydra's bookkeeping and the manifest."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and ".hydra" not in p.parts and p.suffix != ".log" and p.name != MANIFEST}


def publish(target: Path, files: dict[str, str]) -> None:
    with staged_folder(target) as stage:
        for name, text in files.items():
            (stage / name).parent.mkdir(parents=True, exist_ok=True)
            (stage / name).write_text(text)


def test_a_run_replaces_the_previous_set_and_keeps_bookkeeping(tmp_path: Path) -> None:
    target = tmp_path / "run"
    publish(target, {"a.json": "1", "m/results_eval.json": "2"})
    assert snapshot(target) == {"a.json": b"1", "m/results_eval.json": b"2"}
    (target / ".hydra").mkdir()
    (target / ".hydra" / "config.yaml").write_text("x: 1")
    log = target / "score.log"
    with log.open("a") as handle:  # a log held open across the swap keeps writing into the live folder
        handle.write("before\n")
        handle.flush()
        publish(target, {"b.json": "3"})
        handle.write("after\n")
    assert snapshot(target) == {"b.json": b"3"}
    assert log.read_text() == "before\nafter\n" and (target / ".hydra" / "config.yaml").read_text() == "x: 1"
    assert json.loads((target / MANIFEST).read_text()) == {"outputs": ["b.json"]}
    assert not (tmp_path / STAGING).exists()


def test_a_failed_run_leaves_the_previous_set(tmp_path: Path) -> None:
    target = tmp_path / "run"
    publish(target, {"a.json": "1"})
    with pytest.raises(RuntimeError), staged_folder(target) as stage:
        (stage / "a.json").write_text("half")
        raise RuntimeError("killed")
    assert snapshot(target) == {"a.json": b"1"} and not (tmp_path / STAGING).exists()


def test_without_an_exchange_the_two_renames_still_replace_the_set(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(staged, "_exchange", lambda a, b: False)
    target = tmp_path / "run"
    publish(target, {"a.json": "1"})
    publish(target, {"b.json": "2"})
    assert snapshot(target) == {"b.json": b"2"} and not (tmp_path / STAGING).exists()


def test_foreign_entries_and_the_working_directory_are_refused(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "run"
    publish(target, {"a.json": "1"})
    (target / "pred.json").write_text("mine")
    with pytest.raises(ConfigError, match=r"holds 1 entry no scoring run wrote \(pred.json\)"):
        check_output_folder(target)
    with pytest.raises(ConfigError, match="no scoring run wrote"), staged_folder(target) as stage:
        (stage / "b.json").write_text("2")
    assert snapshot(target) == {"a.json": b"1", "pred.json": b"mine"}
    check_output_folder(target, ["pred.json"])  # an entry this run writes is replaced, not refused
    monkeypatch.chdir(target)
    with pytest.raises(ConfigError, match="holds the working directory"):
        check_output_folder(target)


def test_a_dead_run_s_staging_folder_is_removed(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    leftover = tmp_path / STAGING / f"run@{socket.gethostname()}@{dead.stdout.strip()}@feedbeef"
    other_host = tmp_path / STAGING / "run@elsewhere@1@feedbeef"
    for folder in (leftover, other_host):
        folder.mkdir(parents=True)
        (folder / "results_eval.json").write_text("{}")
    publish(tmp_path / "run", {"a.json": "1"})
    assert not leftover.exists() and other_host.exists()


def test_a_run_killed_between_the_two_renames_gets_its_previous_set_back(tmp_path: Path) -> None:
    """Without an atomic exchange the target is briefly absent; the next run restores the previous set."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    target = tmp_path / "run"
    publish(target, {"a.json": "1"})
    moved_away = tmp_path / STAGING / f"run@{socket.gethostname()}@{dead.stdout.strip()}@feedbeef.old"
    moved_away.parent.mkdir()
    target.rename(moved_away)
    with pytest.raises(RuntimeError), staged_folder(target):
        raise RuntimeError("stopped before publishing")
    assert snapshot(target) == {"a.json": b"1"} and not (tmp_path / STAGING).exists()


@pytest.fixture(scope="module")
def small_sweep(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("kill-data")
    gt = [{"id": f"t{i}", "type": f"fam{i % 2}", "steps": [
        {"step": 1, "calls": [{"name": "maps/search", "arguments": {"query": f"cafe near station {i}"}}]},
        {"step": 2, "calls": [{"name": "weather/now", "arguments": {"city": c}} for c in ("Paris", "Lyon")]}]}
        for i in range(6)]
    (d / "gt.json").write_text(json.dumps(gt))
    paths = {"gt": d / "gt.json"}
    for k in range(3):
        pred = json.loads(json.dumps(gt))
        pred[k]["steps"][1]["calls"][0]["arguments"]["city"] = "Marseille"
        pred[k + 1]["steps"] = pred[k + 1]["steps"][::-1]
        paths[f"m{k}"] = d / f"m{k}.json"
        paths[f"m{k}"].write_text(json.dumps(pred))
    return paths


def score_args(data: dict[str, Path], out: Path, cache: Path, tau_weak: float) -> list[str]:
    preds = ",".join(str(data[f"m{k}"]) for k in range(3))
    return [f"data.gt={data['gt']}", f"inputs.files=[{preds}]", f"output_dir={out}", f"encoder.cache_dir={cache}",
            "device=cpu", "progress=false", "reports=true", f"align.tau_weak={tau_weak}", "align.tau_strong=0.95"]


def staging_started(out: Path) -> bool:
    container = out.parent / STAGING
    return container.is_dir() and any(p.name.startswith(f"{out.name}@") for p in container.iterdir())


@pytest.mark.slow
def test_killed_while_writing_the_folder_holds_one_whole_set(small_sweep, tmp_path: Path,
                                                             embedding_cache: Path) -> None:
    """SIGKILL a real scoring run at random moments of its write stage, many times: the output folder
    always holds exactly the previous run's outputs or the new run's. (The runs are forks of one process
    that has imported the project: tests/preloaded.py.)"""
    sets: dict[float, dict[str, bytes]] = {}
    write_seconds = 0.0
    apps = preloaded()
    for tau in (0.5, 0.9):
        reference = tmp_path / f"reference-{tau}"
        run = apps.start(SCORE, score_args(small_sweep, reference, embedding_cache, tau), tmp_path,
                         stderr=tmp_path / "stderr")
        while not staging_started(reference):
            time.sleep(0.002)
        started = time.monotonic()
        while staging_started(reference):  # until the swap
            time.sleep(0.002)
        write_seconds = max(write_seconds, time.monotonic() - started)
        assert run.wait() == 0, (tmp_path / "stderr").read_text()
        sets[tau] = snapshot(reference)
    assert sets[0.5] != sets[0.9] and "m0/results_eval.json" in sets[0.5] and "leaderboard.md" in sets[0.5]

    out = tmp_path / "out"
    assert apps.run(SCORE, score_args(small_sweep, out, embedding_cache, 0.5), tmp_path) == 0
    rng = random.Random(0)
    outcomes = {"old": 0, "new": 0}
    deadline = time.monotonic() + 420
    runs = 0
    # Kill moments are drawn from [0, window); the write stage's length varies with the machine's load,
    # so after every 5 runs that all ended one way the window widens (all old) or narrows (all new).
    window = write_seconds * 1.2
    while runs < 30 and time.monotonic() < deadline:
        if runs and runs % 5 == 0 and not (outcomes["old"] and outcomes["new"]):
            window = window * 2 if not outcomes["new"] else window / 2
        held = next(tau for tau, files in sets.items() if snapshot(out) == files)
        other = 0.9 if held == 0.5 else 0.5
        run = apps.start(SCORE, score_args(small_sweep, out, embedding_cache, other), tmp_path)
        while run.running() and not staging_started(out):
            time.sleep(0.002)
        time.sleep(rng.uniform(0, window))
        if run.running():
            os.kill(run.pid, signal.SIGKILL)
        run.wait()
        now = snapshot(out)
        assert now in (sets[held], sets[other]), f"run {runs}: a mix of both runs' outputs"
        outcomes["old" if now == sets[held] else "new"] += 1
        runs += 1
    assert runs >= 12 and outcomes["old"] and outcomes["new"], outcomes
    assert apps.run(SCORE, score_args(small_sweep, out, embedding_cache, 0.5), tmp_path) == 0
    assert snapshot(out) == sets[0.5] and not (tmp_path / STAGING).exists()


@pytest.mark.slow
def test_rescoring_keeps_the_viewer_site_and_the_files_a_user_put_there(small_sweep, tmp_path: Path,
                                                                         embedding_cache: Path) -> None:
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    first = run_python([str(SCORE), *score_args(small_sweep, out, embedding_cache, 0.5)], env=env)
    assert first.returncode == 0, first.stderr
    view = run_python([str(ROOT / "scripts" / "view.py"), str(out)], capture_output=True,
                          text=True, env=env)
    assert view.returncode == 0, view.stderr
    (out / "viewer" / "notes.txt").write_text("mine")
    site = {p.relative_to(out).as_posix(): p.read_bytes() for p in (out / "viewer").rglob("*") if p.is_file()}
    again = run_python([str(SCORE), *score_args(small_sweep, out, embedding_cache, 0.6)], env=env)
    assert again.returncode == 0, again.stderr
    assert {p.relative_to(out).as_posix(): p.read_bytes() for p in (out / "viewer").rglob("*") if p.is_file()} == site
    third = run_python([str(SCORE), *score_args(small_sweep, out, embedding_cache, 0.7)], env=env)
    assert third.returncode == 0, third.stderr
    assert (out / "viewer" / "notes.txt").read_text() == "mine"


def test_a_viewer_site_is_carried_into_the_new_set(tmp_path: Path) -> None:
    target = tmp_path / "run"
    publish(target, {"a.json": "1"})
    (target / "viewer").mkdir()
    (target / "viewer" / staged.SITE_MARKER).write_text("{}")
    (target / "viewer" / "mine.txt").write_text("keep")
    publish(target, {"a.json": "2"})
    assert snapshot(target) == {"a.json": b"2", f"viewer/{staged.SITE_MARKER}": b"{}", "viewer/mine.txt": b"keep"}


def _tree(folder: Path) -> dict[str, bytes | None]:
    """Every entry under folder: a file's bytes, None for a folder."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() if p.is_file() else None for p in folder.rglob("*")}


@pytest.mark.parametrize("previous", [False, True], ids=["foreign-folder", "previous-run-with-foreign-file"])
def test_a_refused_output_dir_is_left_byte_for_byte(small_sweep, tmp_path: Path, embedding_cache: Path,
                                                     previous: bool) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    if previous:  # a previous run's folder, with its .hydra/ and log, to which a user added a file
        (out / ".hydra").mkdir()
        (out / ".hydra" / "config.yaml").write_text("old: 1\n")
        (out / "score.log").write_text("old log\n")
    (out / "notes.txt").write_text("mine")
    before = _tree(out)
    proc = run_python([str(SCORE), *score_args(small_sweep, out, embedding_cache, 0.5)],
                      env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"error: output_dir {out} holds 1 entry"), proc.stderr
    assert _tree(out) == before
