"""The two halves meet: a rollout's predictions and its curated optimal trajectories, scored by the engine."""

from __future__ import annotations

from pathlib import Path

import pytest
from rollout_helpers import compose, local_overrides, plan_policy, plan_tasks, predictions_of, run_dir_of

from engine.metrics import aggregate
from engine.pipeline import ScoreSettings, score_sweep
from engine.thresholds import Thresholds
from rollout.runner import run

MEAN = {"name": "math/mean", "arguments": {"numbers": [1, 2, 3]}}
MEDIAN = {"name": "math/median", "arguments": {"numbers": [4, 5, 6]}}
STDEV = {"name": "math/stdev", "arguments": {"numbers": [7, 8, 9, 10]}}
PLANS = {"s1": [[MEAN, MEDIAN], [STDEV]], "s2": [[MEDIAN]], "s3": [[STDEV], [MEAN]]}


@pytest.mark.slow
def test_rollout_output_and_optimal_trajectories_score_through_the_engine(
        tmp_path: Path, chat_server, servers_config, embedding_cache: Path) -> None:
    tasks_file, reference = plan_tasks(tmp_path, PLANS, image=False)
    agent = chat_server(plan_policy(reference))  # follows the plan, then accepts the run as its own curator
    results = tmp_path / "results"
    overrides = local_overrides(agent, tasks_file, results, servers_config("math"), "prepare=false", "stage=both")
    assert run(compose(*overrides)) == 0
    predictions, optimal = predictions_of(results), run_dir_of(results) / "optimal.json"
    settings = ScoreSettings(device="cpu", cache_dir=str(embedding_cache))

    against_reference = score_sweep(reference, [predictions, optimal], Thresholds(), settings)
    for f in range(2):
        agg = aggregate(against_reference.scores, against_reference.tables.samples_of(f))
        assert agg["num_ids"] == 3 and agg["total_gt_calls"] == 6
        assert agg["recall"] == 1.0 and agg["precision"] == 1.0
        assert agg["avg_sim_all_cov"] == pytest.approx(1.0, abs=1e-6)
        assert agg["step_coherence_cov"] == 1.0 and agg["merge_purity_cov"] == 1.0

    as_reference = score_sweep(optimal, [predictions], Thresholds(), settings)
    assert aggregate(as_reference.scores)["matched"] == 6

