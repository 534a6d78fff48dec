"""The scoring app (``m3bench-score``, ``scripts/score.py``): the typed config (engine.apps.config.score) goes
to the inputs' plan (engine.inputs.resolve_inputs), the plan to the pipeline; the outputs and reports are
written into the run folder the kit hands in."""

from __future__ import annotations

import logging
import sys
from dataclasses import replace
from pathlib import Path
from typing import cast

from omegaconf import DictConfig

from engine.apps.config import typed
from engine.apps.config.score import SPEC, ScoreConfig, StatsMode
from engine.apps.front import SCORE
from engine.apps.kit import hydra_app
from engine.contract import ConfigError, InputError, JsonObject, atomic_write_json
from engine.contract.pause import gc_paused
from engine.contract.staged import check_output_folder, staged_folder
from engine.evaluators.vtb_rubrics import NAME as VTB
from engine.grid import GRID_FILES, threshold_grid, write_grid
from engine.inputs import Plan, resolve_inputs
from engine.metrics import TaskScores
from engine.metricspec import Profile, alignment_keys
from engine.pipeline import (
    PreparedSweep,
    ScoreSettings,
    StageTimer,
    SweepScores,
    load_sweep_joined,
    prepare_sweep,
    score_prepared,
    write_sweep,
)
from engine.reports.index import append_run, run_entry
from engine.reports.intervals import read_stats
from engine.reports.read import GRID_FILE, load_threshold_grid
from engine.reports.summary import grid_headline, headline
from engine.reports.write import write_reports
from engine.results import RESULT_FILES
from engine.stats import (
    STATS_FILE,
    ModelUnits,
    StatsSettings,
    bootstrap_stats,
    sweep_units,
    threshold_robustness,
    trial_intervals,
)
from engine.stats.cost import COST_FILE, score_cost
from engine.stats.settings import check_memory
from engine.thresholds import Thresholds
from engine.trials import TRIALS_FILE, success_counts, write_trials
from engine.unreferenced import NO_REFERENCE, write_unreferenced
from kernels.device import cpu_threads, resolve_device

log = logging.getLogger("score")


def settings_from(cfg: ScoreConfig) -> ScoreSettings:
    """The serialization and embedding settings of a score config (its profile and selection metrics checked by
    the schema: ScoreConfig)."""
    return ScoreSettings(profile=cast(Profile, str(cfg.metrics.profile)), device=cfg.device,
                         encoder_model=cfg.encoder.model, select=tuple(cfg.align.select) or None,
                         encoder_batch_size=cfg.encoder.batch_size, encoder_backend=str(cfg.encoder.backend),
                         encoder_save_every=float(cfg.encoder.save_every), cache_dir=cfg.encoder.cache_dir or None,
                         progress=cfg.progress, parse_string_arguments=cfg.parse_string_arguments)


def plan_of(cfg: ScoreConfig) -> Plan:
    """The run's plan (engine.inputs.resolve_inputs), each evaluator's file read as `vtb.profile` says."""
    plan = resolve_inputs(cfg.inputs, cfg.data, cfg.demo, Path(cfg.results_dir), cfg.trials.n)
    reading = {VTB: {"profile": str(cfg.vtb.profile)}}
    return replace(plan, verdicts=[replace(j, settings=reading) for j in plan.verdicts])


def stats_of(cfg: ScoreConfig, plan: Plan) -> StatsSettings | None:
    """The statistics step's settings, None when it does not run: stats=off, and stats=auto (the default)
    unless the plan is a leaderboard."""
    mode = cfg.stats.enabled
    if mode is StatsMode.off or (mode is StatsMode.auto and not plan.leaderboard()):
        return None
    s = cfg.stats
    return StatsSettings(resamples=s.resamples, level=float(s.level), seed=s.seed, cluster=str(s.cluster),
                         method=str(s.method), correction=str(s.correction), scheme=str(s.scheme),
                         power=float(s.power), min_clusters=s.min_clusters).check()


def _write_outputs(cfg: ScoreConfig, prepared: PreparedSweep, result: SweepScores, plan: Plan, folder: Path,
                   timer: StageTimer, stats: StatsSettings | None) -> list[JsonObject]:
    """Every output of the run (per-file results, the threshold grid, statistics, trials, reports) written into
    folder."""
    with timer.stage("write"):
        dirs = [folder / name for name in plan.names] if plan.folders else [folder]
        joined = load_sweep_joined(result, plan.verdicts)
        aggregates = write_sweep(result, dirs, plan.names, plan.verdicts, joined)
    weak_grid, strong_grid = cfg.align.tau_weak_grid, cfg.align.tau_strong_grid
    at_points: list[tuple[tuple[float, float], list[ModelUnits]]] = []  # with stats: each grid point's units

    def keep(point: Thresholds, scores: TaskScores, rows: list[dict]) -> None:
        published = [{**agg, **row} for agg, row in zip(aggregates, rows)]
        at_points.append(((point.tau_weak, point.tau_strong),
                          sweep_units(replace(result, scores=scores, thresholds=point), plan.names, joined,
                                      published)))

    if weak_grid or strong_grid:
        rows = threshold_grid(prepared, weak_grid or [result.thresholds.tau_weak],
                              strong_grid or [result.thresholds.tau_strong], plan.names,
                              progress=cfg.progress, each=keep if stats is not None else None)
        with timer.stage("write"):
            write_grid(rows, folder)
    if stats is not None:
        with timer.stage("stats"), cpu_threads(prepared.threads):
            device = resolve_device(cfg.device)
            units = sweep_units(result, plan.names, joined, aggregates)
            document = bootstrap_stats(units, stats, device)
            for warning in document["warnings"]:  # a warning when asked for (stats=on); said, not warned, by default
                log.log(logging.WARNING if cfg.stats.enabled is StatsMode.on else logging.INFO,
                        "stats: %s", warning)
            if at_points:
                document["robustness"] = threshold_robustness(
                    document, (result.thresholds.tau_weak, result.thresholds.tau_strong), at_points, stats, device)
            if plan.trials:
                counts = success_counts(result, plan.trials, plan.predictions, plan.verdicts, joined,
                                        cfg.trials.success.success_rule())
                clusters = [tid if stats.cluster == "sample" else (result.gt.tasks[tid].type or "unknown")
                            for tid in sorted(result.gt.tasks)]
                document["trials"] = {model: trial_intervals(c, clusters, stats, device) for model, c in counts.items()}
            atomic_write_json(folder / STATS_FILE, document)
    with timer.stage("write"):  # cost beside score: usage.json (engine/stats/cost.py)
        score_cost(folder, result, plan.names, plan.predictions, joined, aggregates, [j.files for j in plan.verdicts],
                   (plan.names[0] if cfg.inputs.file else cfg.inputs.name, cfg.inputs.list_price()), stats,
                   resolve_device(cfg.device))
    if plan.trials:
        with timer.stage("write"):
            write_trials(folder / TRIALS_FILE, result, plan.trials, plan.predictions, plan.verdicts, joined,
                         aggregates, cfg.trials.success.success_rule(), cfg.trials.conventions())
    if cfg.reports:
        with timer.stage("write"):
            write_reports(folder)
    return aggregates


def planned_outputs(plan: Plan) -> list[str]:
    """The entries a run of this plan may write into its output folder."""
    if plan.gt is None:
        return plan.names if plan.folders else ["results_eval.json", "results_eval.csv"]
    return [*(plan.names if plan.folders else RESULT_FILES), *GRID_FILES, TRIALS_FILE, STATS_FILE, COST_FILE]


def check_existing_folder(config: DictConfig, folder: Path) -> None:
    """Before Hydra writes into an existing output folder: ConfigError unless this run's outputs may
    replace it (engine.contract.staged.check_output_folder), so a refused folder is left as it was. It
    only reads: the demo is not written here."""
    check_output_folder(folder, planned_outputs(plan_of(typed(SPEC, config, missing_as_none=SPEC.missing_as_none))))


def run(cfg: ScoreConfig, out: Path) -> int:
    """Score what the config names and write the outputs into the run folder `out`; returns the process exit
    code. The outputs replace the output folder's previous ones as a unit (engine.contract.staged)."""
    with gc_paused():
        return _run(cfg, out)


def _run(cfg: ScoreConfig, out: Path) -> int:
    try:
        settings = settings_from(cfg)
        thresholds = cfg.align.thresholds()
        if inverted := thresholds.inversion():
            log.warning(inverted)
        plan = plan_of(cfg)
        stats = stats_of(cfg, plan)
        if stats is not None:  # the least the step will need (its quantities, clusters: at least 7 and 1)
            check_memory(stats, 1, len(plan.names), len(plan.names) * (len(plan.names) - 1) // 2,
                         len(alignment_keys(settings.profile)), resolve_device(cfg.device))
        if plan.gt is None:
            return _run_unreferenced(cfg, plan, out)
        check_output_folder(out, planned_outputs(plan))
        if plan.demo is not None:
            log.info("scoring the built-in demo (%s)", plan.demo.dir)
            plan.demo.write()
        timer = StageTimer()
        prepared = prepare_sweep(plan.gt, plan.predictions, settings, timer)
        result = score_prepared(prepared, thresholds)
        with staged_folder(out) as folder:
            aggregates = _write_outputs(cfg, prepared, result, plan, folder, timer, stats)
    except (InputError, ConfigError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except MemoryError:
        print("error: out of memory (the inputs are too large for this machine)", file=sys.stderr)
        return 2
    embedding = result.embedding
    print(headline(plan.names, aggregates, out / TRIALS_FILE if plan.trials else None,
                   read_stats(out / STATS_FILE) if stats is not None else None, reports=cfg.reports))
    if (out / GRID_FILE).is_file():
        print(grid_headline(load_threshold_grid(out / GRID_FILE), out))
    print(f"texts: {embedding.distinct_texts} distinct, {embedding.cached} cached, {embedding.encoded} encoded; "
          "stages: " + ", ".join(f"{k} {v:.2f}s" for k, v in timer.seconds.items()))
    print(f"outputs: {out}")
    _index(cfg, out)
    return 0


def _index(cfg: ScoreConfig, out: Path) -> None:
    """Add the finished run to the run index of cfg.index_dir (none when null); a failure is a warning."""
    if cfg.index_dir is None:
        return
    try:
        append_run(Path(cfg.index_dir), run_entry(out))
    except (InputError, OSError) as exc:
        log.warning("run not added to the run index: %s", exc)


def _run_unreferenced(cfg: ScoreConfig, plan: Plan, out: Path) -> int:
    """Score the evaluator files of the predictions without reference trajectories (engine.unreferenced):
    results_eval.json per file and the reports; the settings that need the alignment are refused."""
    needs = [key for key, given in (("align.tau_weak_grid", cfg.align.tau_weak_grid),
                                    ("align.tau_strong_grid", cfg.align.tau_strong_grid),
                                    ("stats=on", cfg.stats.enabled is StatsMode.on), ("trials", plan.trials))
             if given]
    if needs:
        raise ConfigError(f"{needs[0]} needs reference trajectories (set data.gt=PATH), and this run has none")
    log.warning(NO_REFERENCE)
    check_output_folder(out, planned_outputs(plan))
    dirs = [Path(name) for name in plan.names] if plan.folders else [Path(".")]
    with staged_folder(out) as folder:
        aggregates = write_unreferenced(plan.predictions, [folder / d for d in dirs], plan.names, plan.verdicts)
        if cfg.reports:
            write_reports(folder)
    keys = [k for k in ("answer_sr", "pass_rate", "rubric_score", "check_accuracy_evaluated")
            if any(k in a for a in aggregates)]
    print("\n".join(f"{name}: {a['num_ids']} tasks" + "".join(f", {k} {_number(a.get(k))}" for k in keys)
                    for name, a in zip(plan.names, aggregates)))
    print(f"outputs: {out}")
    _index(cfg, out)
    return 0


def _number(value: object) -> str:
    return "–" if value is None else f"{value:.4f}"


OPEN_KEYS = SPEC.open_keys
"""New keys the score app reads: none (an evaluator's file is a setting of inputs.verdicts)."""
NAME_KEYS = SPEC.names
"""The settings whose values become part of file and folder names (engine.contract.check_name)."""

main = hydra_app(SPEC, run, quick_exit=True, rewrite=SCORE.rewrite, check_folder=check_existing_folder)
