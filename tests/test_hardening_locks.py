"""Bounded waits: a lock another process holds (and never lets go of) is waited on for a bounded time, then
named in one line; what the run made is kept. The run index's lock (score runs), the embedding cache's lock
(a run embedding beside another), a merged part file's lock (rollout and judge shards), a server's install lock."""

from __future__ import annotations

import fcntl
import json
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from script_runs import call_app

from engine import embedding_cache
from engine.contract import InputError
from engine.embedding_cache import EmbeddingCache
from engine.reports import index
from engine.reports.index import append_run, read_index
from rollout import shards
from rollout.mcp import install
from rollout.mcp.config import ServerSpec
from rollout.mcp.environments import InstallSpec


@contextmanager
def held(lock: Path, release_after: float = 30.0) -> Iterator[None]:
    """Hold `lock` (flock, as another process would) for the block, letting go after `release_after` seconds
    at the latest: a wait that is not bounded ends then, without the line the test looks for."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    handle = lock.open("a")
    fcntl.flock(handle, fcntl.LOCK_EX)
    timer = threading.Timer(release_after, handle.close)
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        handle.close()


def test_the_index_lock_is_waited_on_for_a_bounded_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index, "LOCK_WAIT_S", 0.5)
    (tmp_path / "index.json").write_text(json.dumps([{"run": "/earlier", "models": []}]))
    start = time.monotonic()
    with held(tmp_path / index.LOCK_FILE, release_after=10), pytest.raises(InputError) as caught:
        append_run(tmp_path, {"run": "/new", "models": []})
    assert time.monotonic() - start < 5
    assert str(caught.value) == (f"{tmp_path / '.index.lock'}: held by another process for 0.5 s (a run stuck while "
                                 f"adding itself?): this run is not in {tmp_path / 'index.json'}")
    assert [e["run"] for e in read_index(tmp_path)] == ["/earlier"]
    append_run(tmp_path, {"run": "/new", "models": []})  # once let go of
    assert [e["run"] for e in read_index(tmp_path)] == ["/earlier", "/new"]


@pytest.mark.slow
def test_a_held_index_lock_leaves_the_score_run_whole(tmp_path: Path, embedding_cache: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the run hung there forever, its outputs written: now a warning naming the lock, and exit status 0."""
    monkeypatch.setattr(index, "LOCK_WAIT_S", 0.5)
    out, runs = tmp_path / "out", tmp_path / "runs"
    with held(runs / index.LOCK_FILE, release_after=120):
        start = time.monotonic()
        proc = call_app("score", f"demo.dir={tmp_path / 'demo'}", "demo.n_tasks=3", "reports=false", "device=cpu",
                        "progress=false", f"encoder.cache_dir={embedding_cache}", f"output_dir={out}",
                        f"index_dir={runs}", cwd=tmp_path)
        took = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    assert took < 100, "the run waited for the lock to be let go of"
    assert (out / "demo_strong" / "results_eval.json").is_file()
    assert f"run not added to the run index: {runs / '.index.lock'}: held by another process" in proc.stderr
    assert not (runs / "index.json").exists()


def test_the_embedding_lock_is_waited_on_for_a_bounded_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    """Past the wait, the run embeds without the lock (the cache takes any number of writers)."""
    monkeypatch.setattr(embedding_cache, "LOCK_WAIT_S", 0.5)
    cache = EmbeddingCache(tmp_path, "enc")
    start = time.monotonic()
    with held(cache.directory / ".embed.lock", release_after=10), caplog.at_level(logging.WARNING):
        with cache.locked():
            took = time.monotonic() - start
            cache.store(np.array([b"k" * 16], dtype="S16"), np.ones((1, 2), np.float32))
    assert took < 5
    assert [r.getMessage() for r in caplog.records] == [
        f"embedding cache: {cache.directory / '.embed.lock'} held by another process for 0.5 s; embedding without it "
        "(texts both processes lack are encoded twice)"]
    assert cache.lookup(np.array([b"k" * 16], dtype="S16"))[0].all()


def test_a_merge_waits_for_the_merged_files_lock_for_a_bounded_time(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Once filelock's Timeout (a traceback): now one line naming the lock."""
    monkeypatch.setattr(shards, "MERGE_WAIT_S", 0.5)
    output = tmp_path / "merged.json"
    with held(tmp_path / ".merged.json.lock", release_after=10), pytest.raises(InputError) as caught:
        shards.write_merged(output, "[]\n")
    assert str(caught.value) == (f"{tmp_path / '.merged.json.lock'}: held by another process for 0.5 s (another job "
                                 "merging, or a run writing merged.json): not merged; merge again once it has ended")
    assert not output.exists()


def test_an_install_waits_for_another_install_for_a_bounded_time(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(install, "LOCK_WAIT_S", 0.5)
    folder = tmp_path / "envs" / "srv"
    spec = ServerSpec(name="srv", command="python", install=InstallSpec(requirements=("nothing",)),
                      env_folder=str(folder))
    with held(tmp_path / "envs" / ".srv.lock", release_after=10):
        start = time.monotonic()
        outcome = install.install_server(spec)
    assert time.monotonic() - start < 5
    assert (outcome.status, outcome.detail) == ("failed", f"{tmp_path / 'envs' / '.srv.lock'} held by another install "
                                                          "for 0.5 s: install again once it has ended")
    assert not folder.exists()
