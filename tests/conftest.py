"""Shared fixtures: the ../shared data, a session-wide embedding cache, in-memory scoring helpers,
scripted chat servers on loopback.

Under pytest-xdist (`-n auto --dist loadfile`, as .ci/run runs the suite) each test file runs in one
worker, in order: a module-scoped fixture is built once, and a documented block may read what the block
before it wrote. A worker computes on one thread (OMP_NUM_THREADS=1, inherited by the processes it
starts), as there is a worker per core.

Processes the tests start get SIGINT as its default, however the suite was started (a background job
starts with it ignored), so the Ctrl-C tests hold there too.

With ``M3BENCH_REQUIRE_SHARED=1`` (as in CI) a test needing the ../shared data fails when the
data is absent instead of being skipped.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    # Started as a background job (`cmd &`, nohup): SIGINT comes ignored, and every process a test starts would
    # inherit that and drop the Ctrl-C the interrupt tests send. Python's own handler here makes it the
    # default again in each process started from this one (a caught signal is reset by exec).
    signal.signal(signal.SIGINT, signal.default_int_handler)

if os.environ.get("PYTEST_XDIST_WORKER"):
    # One worker per core (-n auto): each worker, and every process it starts, computes on one thread
    # instead of one per core each (the encoder, torch's kernels, ONNX Runtime).
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["MKL_NUM_THREADS"] = "1"

from rollout.models.loopback import Policy, ScriptedChatServer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = Path(os.environ.get("M3BENCH_SHARED", ROOT.parent / "shared"))
GT_PATH = SHARED / "data" / "m3bench" / "test_mcp_GT.json"
GOLDEN = SHARED / "golden"
REQUIRE_SHARED = os.environ.get("M3BENCH_REQUIRE_SHARED", "") not in ("", "0")


def _shared_missing(message: str) -> None:
    """Skip the test for missing ../shared data, or fail it when the data is required."""
    if REQUIRE_SHARED:
        pytest.fail(f"{message}; M3BENCH_REQUIRE_SHARED is set, so this is an error", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session", autouse=True)
def project_home(tmp_path_factory) -> Path:
    """A fresh M3BENCH_HOME for the session (demo data, default run folders), inherited by subprocesses."""
    home = tmp_path_factory.mktemp("m3bench-home")
    os.environ["M3BENCH_HOME"] = str(home)
    return home


@pytest.fixture(scope="session")
def gt_path() -> Path:
    """The real M3-Bench reference file; tests using it skip (or fail, see above) without ../shared."""
    if not GT_PATH.is_file():
        _shared_missing(f"reference trajectories not found at {GT_PATH} (set M3BENCH_SHARED)")
    return GT_PATH


@pytest.fixture(scope="session")
def golden_dir() -> Path:
    """The golden cases folder; tests using it skip (or fail, see above) without ../shared."""
    if not (GOLDEN / "manifest.json").is_file():
        _shared_missing(f"golden cases not found under {GOLDEN} (set M3BENCH_SHARED)")
    return GOLDEN


@pytest.fixture(scope="session")
def embedding_cache(tmp_path_factory) -> Path:
    """One embedding cache for the whole test session, so each text is encoded once: under pytest-xdist
    the workers share it (beside their own temporary folders; the cache's lock lets processes share it)."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    cache = root / "embedding-cache"
    cache.mkdir(exist_ok=True)
    return cache


@pytest.fixture
def chat_server() -> Iterator[Callable[..., ScriptedChatServer]]:
    """Start scripted chat servers on 127.0.0.1 (port chosen by the OS), keeping the requests they get;
    all stop after the test."""
    started: list[ScriptedChatServer] = []

    def start(policy: Policy, delay: float = 0.0) -> ScriptedChatServer:
        server = ScriptedChatServer(policy, delay=delay, keep_requests=True)
        server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
