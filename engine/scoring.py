"""A score run: the `Plan` of what it reads (engine.inputs.resolve_inputs) and the `ScoreJob` of what it does go
through the pipeline (engine.pipeline) into the run folder: each file's results, the threshold grid, the
statistics, the cost, the trials and the reports, replacing the folder's previous outputs as a unit
(engine.contract.staged); then the closing lines, and the run added to the run index."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from engine.contract import ConfigError
from engine.contract.staged import check_output_folder, staged_folder
from engine.grid import GRID_FILES, threshold_grid, write_grid
from engine.inputs import Plan
from engine.metricspec import alignment_keys
from engine.pipeline import ScoreSettings, StageTimer, load_sweep_joined, prepare_sweep, score_prepared, write_sweep
from engine.reports.index import index_run
from engine.reports.intervals import read_stats
from engine.reports.read import GRID_FILE, load_threshold_grid
from engine.reports.summary import grid_headline, headline, unreferenced_headline
from engine.reports.write import write_reports
from engine.results import RESULT_FILES
from engine.stats import STATS_FILE, StatsSettings
from engine.stats.cost import COST_FILE, score_cost
from engine.stats.run import GridUnits, write_stats
from engine.stats.settings import check_memory
from engine.synthetic.demo import write_demo
from engine.thresholds import Thresholds
from engine.trial_conventions import conventions_of
from engine.trials import TRIALS_FILE, SuccessRule, success_counts, write_trials
from engine.unreferenced import NO_REFERENCE, write_unreferenced
from kernels.device import cpu_threads, resolve_device

log = logging.getLogger("score")

StatsWhen = Literal["auto", "on", "off"]
"""When the statistics step runs: for a leaderboard (auto, engine.inputs.Plan.leaderboard), always, never."""


@dataclass(frozen=True)
class ScoreJob:
    """What a score run does with what it reads: how texts are serialized and embedded (`settings`), the
    thresholds and their grids, the statistics step's settings and when it runs, the trials' success rule and
    the peers' conventions written beside the project's (a word of engine.trial_conventions), whether the
    reports are written, and the run index the run is added to (none: None)."""

    settings: ScoreSettings = field(default_factory=ScoreSettings)
    thresholds: Thresholds = field(default_factory=Thresholds)
    tau_weak_grid: tuple[float, ...] = ()
    tau_strong_grid: tuple[float, ...] = ()
    stats: StatsSettings = field(default_factory=StatsSettings)
    stats_when: StatsWhen = "auto"
    success: SuccessRule = field(default_factory=SuccessRule)
    conventions: str = "all"
    reports: bool = True
    index_dir: Path | None = None


def planned_outputs(plan: Plan) -> list[str]:
    """The entries a run of this plan may write into its output folder."""
    if plan.gt is None:
        return plan.names if plan.folders else ["results_eval.json", "results_eval.csv"]
    return [*(plan.names if plan.folders else RESULT_FILES), *GRID_FILES, TRIALS_FILE, STATS_FILE, COST_FILE]


def score_plan(plan: Plan, job: ScoreJob, out: Path) -> None:
    """Score what the plan reads as the job says into the run folder `out` and print the closing lines; the
    outputs replace the folder's previous ones as a unit. ConfigError, InputError, ValueError or OSError for
    what cannot be scored, before anything is written."""
    outputs = planned_outputs(plan)
    if inverted := job.thresholds.inversion():
        log.warning(inverted)
    run_stats = job.stats_when == "on" or (job.stats_when == "auto" and plan.leaderboard)
    stats = job.stats.check() if run_stats else None
    if stats is not None:  # the least the step will need (its quantities, clusters: at least 7 and 1)
        n = len(plan.names)
        check_memory(stats, 1, n, n * (n - 1) // 2, len(alignment_keys(job.settings.profile)),
                     resolve_device(job.settings.device))
    if plan.gt is None:  # the evaluators' files only (engine.unreferenced)
        needs = [key for key, given in (("align.tau_weak_grid", job.tau_weak_grid),
                                        ("align.tau_strong_grid", job.tau_strong_grid),
                                        ("stats=on", job.stats_when == "on"), ("trials", plan.trials)) if given]
        if needs:
            raise ConfigError(f"{needs[0]} needs reference trajectories (set data.gt=PATH), and this run has none")
        log.warning(NO_REFERENCE)
        check_output_folder(out, outputs)
        dirs = [Path(name) for name in plan.names] if plan.folders else [Path(".")]
        with staged_folder(out) as folder:
            aggregates = write_unreferenced(plan.predictions, [folder / d for d in dirs], plan.names, plan.verdicts)
            if job.reports:
                write_reports(folder)
        print(unreferenced_headline(plan.names, aggregates))
    else:
        check_output_folder(out, outputs)
        if plan.demo is not None:
            log.info("scoring the built-in demo (%s)", plan.demo.dir)
            write_demo(Path(plan.demo.dir), n_tasks=plan.demo.n_tasks, seed=plan.demo.seed)
        timer = StageTimer()
        prepared = prepare_sweep(plan.gt, plan.predictions, job.settings, timer)
        result = score_prepared(prepared, job.thresholds)
        device = resolve_device(job.settings.device)
        with staged_folder(out) as folder:
            with timer.stage("write"):
                joined = load_sweep_joined(result, plan.verdicts)
                aggregates = write_sweep(result, [folder / name for name in plan.names] if plan.folders else [folder],
                                         plan.names, plan.verdicts, joined)
            grid = GridUnits(result, plan.names, joined, aggregates) if stats is not None else None
            if job.tau_weak_grid or job.tau_strong_grid:
                rows = threshold_grid(prepared, list(job.tau_weak_grid) or [job.thresholds.tau_weak],
                                      list(job.tau_strong_grid) or [job.thresholds.tau_strong], plan.names,
                                      progress=job.settings.progress, each=grid.keep if grid is not None else None)
                with timer.stage("write"):
                    write_grid(rows, folder)
            if stats is not None:
                with timer.stage("stats"), cpu_threads(prepared.threads):
                    counts = (success_counts(result, plan.trials, plan.predictions, plan.verdicts, joined, job.success)
                              if plan.trials else None)
                    write_stats(folder, result, plan.names, joined, aggregates, stats, device, grid, counts,
                                loud=job.stats_when == "on")
            with timer.stage("write"):  # cost beside score: usage.json (engine/stats/cost.py)
                score_cost(folder, result, plan.names, plan.predictions, joined, aggregates,
                           [j.files for j in plan.verdicts], plan.price, stats, device)
                if plan.trials:
                    write_trials(folder / TRIALS_FILE, result, plan.trials, plan.predictions, plan.verdicts, joined,
                                 aggregates, job.success, conventions_of(job.conventions))
                if job.reports:
                    write_reports(folder)
        print(headline(plan.names, aggregates, out / TRIALS_FILE if plan.trials else None,
                       read_stats(out / STATS_FILE) if stats is not None else None, reports=job.reports))
        if (out / GRID_FILE).is_file():
            print(grid_headline(load_threshold_grid(out / GRID_FILE), out))
        embedding = result.embedding
        print(f"texts: {embedding.distinct_texts} distinct, {embedding.cached} cached, {embedding.encoded} encoded; "
              "stages: " + ", ".join(f"{k} {v:.2f}s" for k, v in timer.seconds.items()))
    print(f"outputs: {out}")
    index_run(job.index_dir, out)
