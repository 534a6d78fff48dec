"""The scoring app (``m3bench-score``, ``scripts/score.py``): the typed config (engine.apps.config.score) is
read once into the run's `ScoreJob` (what it does) and `Plan` (what it reads, engine.inputs.resolve_inputs);
both go to the score run (engine.scoring), which writes into the run folder the kit hands in."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import cast

from omegaconf import DictConfig

from engine.apps.config import typed
from engine.apps.config.score import SPEC, ScoreConfig
from engine.apps.front import SCORE
from engine.apps.kit import hydra_app
from engine.contract import ConfigError, InputError
from engine.contract.pause import gc_paused
from engine.contract.staged import check_output_folder
from engine.evaluators.vtb_rubrics import NAME as VTB
from engine.inputs import Plan, resolve_inputs
from engine.metricspec import Profile
from engine.pipeline import ScoreSettings
from engine.scoring import ScoreJob, StatsWhen, planned_outputs, score_plan
from engine.stats import StatsSettings
from engine.thresholds import Thresholds
from engine.trials import SuccessRule


def job_of(cfg: ScoreConfig) -> ScoreJob:
    """What a run of this config does: each step's settings, read from the typed config (the schema,
    ScoreConfig, checked them)."""
    encoder, align, stats, success = cfg.encoder, cfg.align, cfg.stats, cfg.trials.success
    settings = ScoreSettings(profile=cast(Profile, str(cfg.metrics.profile)), device=cfg.device,
                             encoder_model=encoder.model, select=tuple(align.select) or None,
                             encoder_batch_size=encoder.batch_size, encoder_backend=str(encoder.backend),
                             encoder_save_every=float(encoder.save_every), cache_dir=encoder.cache_dir or None,
                             progress=cfg.progress, parse_string_arguments=cfg.parse_string_arguments)
    return ScoreJob(settings=settings, thresholds=Thresholds(align.tau_weak, align.tau_strong),
                    tau_weak_grid=tuple(align.tau_weak_grid), tau_strong_grid=tuple(align.tau_strong_grid),
                    stats=StatsSettings(resamples=stats.resamples, level=float(stats.level), seed=stats.seed,
                                        cluster=str(stats.cluster), method=str(stats.method),
                                        correction=str(stats.correction), scheme=str(stats.scheme),
                                        power=float(stats.power), min_clusters=stats.min_clusters),
                    stats_when=cast(StatsWhen, str(stats.enabled)),
                    success=SuccessRule(str(success.rule), float(success.threshold), success.key),
                    conventions=str(cfg.trials.convention), reports=cfg.reports,
                    index_dir=Path(cfg.index_dir) if cfg.index_dir is not None else None)


def plan_of(cfg: ScoreConfig) -> Plan:
    """What a run of this config reads (engine.inputs.resolve_inputs), each evaluator's file read as
    `vtb.profile` says."""
    return resolve_inputs(cfg.inputs, cfg.data, cfg.demo, Path(cfg.results_dir), cfg.trials.n,
                          {VTB: {"profile": str(cfg.vtb.profile)}})


def check_existing_folder(config: DictConfig, folder: Path) -> None:
    """Before Hydra writes into an existing output folder: ConfigError unless this run's outputs may
    replace it (engine.contract.staged.check_output_folder), so a refused folder is left as it was. It
    only reads: the demo is not written here."""
    check_output_folder(folder, planned_outputs(plan_of(typed(SPEC, config, missing_as_none=SPEC.missing_as_none))))


def run(cfg: ScoreConfig, out: Path) -> int:
    """Score what the config names and write the outputs into the run folder `out`; returns the process exit
    code: 2, with one line, for what cannot be scored."""
    with gc_paused():
        try:
            job = job_of(cfg)
            plan = plan_of(cfg)
            score_plan(plan, job, out)
        except (InputError, ConfigError, ValueError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        except MemoryError:
            print("error: out of memory (the inputs are too large for this machine)", file=sys.stderr)
            return 2
    return 0


OPEN_KEYS = SPEC.open_keys
"""New keys the score app reads: none (an evaluator's file is a setting of inputs.verdicts)."""
NAME_KEYS = SPEC.names
"""The settings whose values become part of file and folder names (engine.contract.check_name)."""

main = hydra_app(SPEC, run, quick_exit=True, rewrite=SCORE.rewrite, check_folder=check_existing_folder)
