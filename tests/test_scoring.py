"""The score run (engine.scoring) and the two values the score app hands it: the `ScoreJob` of the default config
is the default job (the schema's defaults and the steps' agree, one value each), and a run from a `Plan` and a
`ScoreJob`, called from Python, writes what the app writes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from script_runs import call_app

from engine.apps.compose import compose
from engine.apps.config import typed
from engine.apps.config.score import SPEC
from engine.apps.score import job_of, plan_of
from engine.apps.shorthands import score_shorthands
from engine.pipeline import ScoreSettings
from engine.scoring import ScoreJob, score_plan


def test_the_job_of_the_default_config_is_the_default_job() -> None:
    """Every setting of the default config reaches the run as the steps' own default: only the run's
    surroundings differ (the embedding cache under the home, progress bars on, the run index under the home)."""
    job = job_of(typed(SPEC, compose("score", [])))
    assert job.settings.cache_dir and job.settings.progress and job.index_dir is not None
    surroundings = ScoreSettings(cache_dir=job.settings.cache_dir, progress=True)
    assert job == ScoreJob(settings=surroundings, index_dir=job.index_dir)


def test_a_changed_setting_reaches_the_job() -> None:
    """A setting given on the command line is the job's, each in its step's terms."""
    job = job_of(typed(SPEC, compose("score", score_shorthands([
        "align.tau_weak=0.5", "align.tau_strong_grid=[0.7,0.9]", "stats=on", "stats.method=bca",
        "trials.success.rule=outcome_checks", "trials.convention=tau2", "encoder.backend=torch", "reports=false"]))))
    assert (job.thresholds.tau_weak, job.tau_strong_grid) == (0.5, (0.7, 0.9))
    assert (job.stats_when, job.stats.method, job.success.rule, job.conventions) == ("on", "bca", "outcome_checks",
                                                                                    "tau2")
    assert (job.settings.encoder_backend, job.reports) == ("torch", False)


def _files(root: Path) -> dict[str, bytes]:
    """Every output file under root by relative path (Hydra's own files and the log left out)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".hydra" not in p.parts and p.name != "score.log"}


@pytest.mark.slow
def test_a_run_from_a_plan_and_a_job_writes_what_the_app_writes(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The demo with statistics and a threshold grid, scored by the app and by score_plan from Python with the
    same settings: the same files, byte for byte, and the same closing lines."""
    settings = ["stats.resamples=200", "align.tau_weak_grid=[0.5,0.7]", "reports=false", "index_dir=null",
                "progress=false"]
    app = call_app("score", *settings, f"output_dir={tmp_path / 'app'}", cwd=tmp_path)
    assert app.returncode == 0, app.stderr
    cfg = typed(SPEC, compose("score", score_shorthands([*settings, f"output_dir={tmp_path / 'direct'}"])),
                missing_as_none=SPEC.missing_as_none)
    capsys.readouterr()
    score_plan(plan_of(cfg), job_of(cfg), tmp_path / "direct")
    printed = capsys.readouterr().out
    made, written = _files(tmp_path / "app"), _files(tmp_path / "direct")
    assert "stats.json" in made and "threshold_grid.json" in made and "demo_strong/results_eval.json" in made
    assert written == made
    closing = [line.replace(str(tmp_path / "direct"), "OUT") for line in printed.splitlines()
               if not line.startswith("texts:")]
    assert closing == [line.replace(str(tmp_path / "app"), "OUT") for line in app.stdout.splitlines()
                       if not line.startswith("texts:") and not re.match(r"\[\d{4}-", line)]  # no log lines

