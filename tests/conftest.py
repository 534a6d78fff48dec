"""Shared fixtures: the ../shared data, a session-wide embedding cache, in-memory scoring helpers.

With ``M3BENCH_REQUIRE_SHARED=1`` (as in CI) a test needing the ../shared data fails when the
data is absent instead of being skipped.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = Path(os.environ.get("M3BENCH_SHARED", ROOT.parent / "shared"))
GT_PATH = SHARED / "data" / "m3bench" / "test_mcp_GT.json"
GOLDEN = SHARED / "golden"
REQUIRE_SHARED = os.environ.get("M3BENCH_REQUIRE_SHARED", "") not in ("", "0")

# End-to-end tests that take seconds to minutes (the real encoder and the real data, the command
# line, launchers, rollouts against live servers), by file and test name; a test may also carry
# @pytest.mark.slow itself. `pytest -m "not slow"` leaves them out; the default run includes them.
SLOW: dict[str, set[str]] = {
    "test_golden.py": {"test_every_golden_case_matches", "test_similarities_of_matches_agree"},
    "test_launchers.py": {"test_four_concurrent_joblib_jobs_share_one_fresh_cache",
                          "test_submitit_local_executor"},
    "test_cli.py": {"test_single_file", "test_sweep_with_colliding_stems_and_options",
                    "test_bad_input_is_one_line", "test_leaderboard_sweep_without_files",
                    "test_judge_files_join_the_outputs"},
    "test_reports.py": {"test_threshold_plot_and_run_from_cli"},
    "test_calibration.py": {"test_cli_end_to_end"},
    "test_rollout_resume.py": {"test_kill_and_resume"},
    "test_rollout_units.py": {"test_retrieve_exposure_uses_the_engine_encoder"},
    "test_rollout_config.py": {"test_demo_runs_from_the_command_line"},
    "test_rollout_crash.py": {"test_server_crash_mid_run"},
    "test_rollout_e2e.py": {"test_rollout_end_to_end", "test_malformed_model_output",
                            "test_retries_key_secrecy_and_failed_tasks"},
    "test_judge_resume.py": {"test_kill_and_resume"},
    "test_judge_flow.py": {"test_rollout_judge_score"},
    "test_judge_outcomes.py": {"test_rules_on_recorded_shapes",
                               "test_illegal_format_of_a_real_rollout_and_the_published_shape",
                               "test_calls_stage_asks_the_judge_only_what_no_rule_settles"},
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests named in SLOW (before `-m` selects)."""
    for item in items:
        if getattr(item, "originalname", item.name) in SLOW.get(item.path.name, ()):
            item.add_marker(pytest.mark.slow)


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
    """One embedding cache for the whole test session, so each text is encoded once."""
    return tmp_path_factory.mktemp("embedding-cache")
