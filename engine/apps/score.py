"""The scoring app (``m3bench-score``, ``scripts/score.py``): resolve what to score from the Hydra
config (conf/score/), score it, write the outputs and reports into the run's output folder."""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from engine.apps.front import SCORE
from engine.apps.kit import hydra_app, output_folder
from engine.apps.shorthands import PUBLISHED_NAME
from engine.contract import ConfigError, InputError, atomic_write_json, check_name, config_int
from engine.contract.pause import gc_paused
from engine.contract.staged import check_output_folder, staged_folder
from engine.encoders import check_backend
from engine.evaluators import evaluators
from engine.evaluators.vtb_rubrics import NAME as VTB
from engine.evaluators.vtb_scoring import DEFAULT_PROFILE as DEFAULT_VTB_PROFILE
from engine.evaluators.vtb_scoring import check_profile as check_vtb_profile
from engine.grid import GRID_FILES, threshold_grid, write_grid
from engine.judge_results import JoinedFiles, joined_files
from engine.metrics import TaskScores
from engine.metricspec import alignment_keys, check_profile
from engine.pipeline import (
    PreparedSweep,
    ScoreSettings,
    StageTimer,
    SweepScores,
    load_sweep_joined,
    output_dirs,
    prepare_sweep,
    score_prepared,
    write_sweep,
)
from engine.references import check_select
from engine.reports.index import append_run, run_entry
from engine.reports.intervals import read_stats
from engine.reports.read import GRID_FILE, load_threshold_grid
from engine.reports.summary import grid_headline, headline
from engine.reports.write import write_reports
from engine.results import RESULT_FILES
from engine.stats import (
    MIN_CLUSTERS,
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
from engine.synthetic import write_demo
from engine.thresholds import Thresholds
from engine.trials import (
    TRIALS_FILE,
    check_distinct,
    check_trial_files,
    find_trials,
    model_name,
    success_counts,
    write_trials,
)
from engine.unreferenced import NO_REFERENCE, write_unreferenced
from kernels.device import cpu_threads, resolve_device

log = logging.getLogger("score")


@dataclass
class Inputs:
    """What one run scores: the GT, the prediction files with model names and judge files."""

    gt: Path | list[Path] | None  # None: no reference trajectories, the evaluator files only (engine.unreferenced)
    predictions: list[Path]
    names: list[str]
    judges: list[JoinedFiles]
    per_file_dirs: bool
    trials: dict[str, list[Path]] | None = None  # model -> its trial files in trial order, missing ones too


def settings_from(cfg: DictConfig) -> ScoreSettings:
    """The serialization and embedding settings of a composed config."""
    try:
        profile = check_profile(str(cfg.metrics.profile))
    except ValueError as exc:
        raise ConfigError(f"metrics.profile: {exc}") from None
    select = check_select(list(cfg.align.get("select") or []), profile)
    return ScoreSettings(profile=profile, device=str(cfg.device), encoder_model=cfg.encoder.model, select=select,
                         encoder_batch_size=int(cfg.encoder.batch_size),
                         encoder_backend=check_backend(cfg.encoder.get("backend")),
                         encoder_save_every=float(cfg.encoder.save_every),
                         cache_dir=None if cfg.encoder.cache_dir in (None, "") else str(cfg.encoder.cache_dir),
                         progress=bool(cfg.get("progress", False)),
                         parse_string_arguments=bool(cfg.parse_string_arguments))


def evaluator_settings(cfg: DictConfig) -> dict[str, dict[str, Any]]:
    """The settings each evaluator's file is read with: vtb_rubrics' ``vtb.profile``, checked."""
    try:
        profile = check_vtb_profile((cfg.get("vtb") or {}).get("profile") or DEFAULT_VTB_PROFILE)
    except ValueError as exc:
        raise ConfigError(f"vtb.profile: {exc}") from None
    return {VTB: {"profile": profile}}


def _judges(predictions: list[Path], explicit: Mapping[str, Any] | None = None) -> list[JoinedFiles]:
    return [joined_files(p, explicit) for p in predictions]


def _published_files(results: Path, models: list[str], discover: bool) -> list[tuple[str, Path]]:
    """(name, path) of the named models' prediction files, then, with discover, of every other
    <name>_test_mcp_fuzzy.json under results, or <name>_test_mcp_fuzzy_trial<i>.json (in name order)."""
    found = [(m, results / PUBLISHED_NAME.format(model=m)) for m in models]
    if discover:
        suffix = PUBLISHED_NAME.format(model="")
        names = {p.name[:-len(suffix)]: p for p in results.glob(f"*{suffix}")}
        for trial in results.glob(f"*{Path(suffix).stem}_trial*.json"):  # models with trial files only
            name = model_name(trial)[:-len(Path(suffix).stem)]
            if name not in names and find_trials(results / PUBLISHED_NAME.format(model=name)):
                names.setdefault(name, results / PUBLISHED_NAME.format(model=name))
        found += [(name, names[name]) for name in sorted(set(names) - set(models) - {""})]
    return found


def _trial_inputs(gt: Path | list[Path] | None, groups: list[tuple[str, list[Path]]], setting: str,
                  trials_of: set[str] | None = None) -> Inputs:
    """Inputs of models scored as trials (`trials_of`, default all): each model's trial files that
    exist, output to <model>_trial<i>/; a model not in `trials_of` has its one file, output to <model>/.
    Something other than a file in a trial file's place is an InputError naming `setting`."""
    files, names, trials = [], [], {}
    for model, paths in groups:
        if trials_of is not None and model not in trials_of:
            files.append(paths[0])
            names.append(model)
            continue
        trials[model] = paths
        check_trial_files(paths, setting)
        present = [(i, p) for i, p in enumerate(paths, 1) if p.is_file()]
        if not present:
            raise ConfigError(f"{model}: none of its {len(paths)} trial file(s) exists: {', '.join(map(str, paths))}")
        files += [p for _, p in present]
        names += [f"{model}_trial{i}" for i, _ in present]
    return Inputs(gt, files, names, _judges(files), True, trials)


def missing_reference(gt: Path) -> str:
    """The one line for a reference file that is not there: the settings that name it, and where the
    published files come from."""
    return (f"{gt}: reference trajectory file not found: set data.gt=PATH, or M3BENCH_DATA to the folder "
            "holding test_mcp_GT.json (the published M3-Bench files: README, \"Where the data come from\"; "
            "data=demo scores the built-in demo)")


def _only_one_file(explicit: Mapping[str, Any], scored: str) -> None:
    """Refuse verdict files named with model.<option>=PATH where they cannot apply: they belong to the
    one file of model.predictions, and with several files each file's verdicts are found beside it."""
    if explicit:
        option, path = next(iter(explicit.items()))
        raise ConfigError(f"model.{option}={path} is for the one file of model.predictions, not for {scored}: "
                          f"each of their files' verdicts is read from beside it (<predictions stem>_<suffix>.json); "
                          f"drop model.{option}")


PREDICTION_SETTINGS = ("trials.predictions", "sweep.predictions", "model.predictions", "sweep.models")
"""Where the files to score are named, one of them per run."""

NAME_KEYS = SCORE.spec.names
"""The settings whose values become part of file and folder names (engine.contract.check_name)."""


def _check_one_source(cfg: DictConfig) -> None:
    """Refuse two settings of PREDICTION_SETTINGS at once: one would be scored in place of the other."""
    given = [key for key in PREDICTION_SETTINGS if OmegaConf.select(cfg, key)]
    if len(given) > 1:
        raise ConfigError(f"{given[0]} and {given[1]} both name the files to score, and only {given[0]} would "
                          f"be scored: give one of {', '.join(PREDICTION_SETTINGS)}")


def _reference(cfg: DictConfig) -> Path | list[Path] | None:
    """The reference the config names: data.references, else data.gt (which must exist); None when the
    data set names none (MCPVerse, VisualToolBench publish no reference trajectories)."""
    if cfg.data.get("references"):
        return [Path(p) for p in cfg.data.references]
    if cfg.data.get("gt"):
        gt = Path(cfg.data.gt)
        if not gt.is_file():
            raise ConfigError(missing_reference(gt))
        return gt
    return None


def resolve_inputs(cfg: DictConfig) -> Inputs:
    """The files to score: trials.predictions, sweep.predictions, model.predictions or sweep.models (one
    of them), else, with data=demo (the default), the demo models.

    The GT is data.references or data.gt, or the generated demo reference with data=demo (a command line
    that names what to score runs with data=m3bench unless it names a data set: engine.apps.shorthands).
    """
    sweep = [Path(p) for p in (cfg.sweep.get("predictions") or [])]
    models = [check_name(m, "sweep.models") for m in cfg.sweep.get("models") or []]
    if cfg.model.get("name") is not None:
        check_name(cfg.model.name, "model.name")
    _check_one_source(cfg)
    demo_models: dict[str, Path] = {}
    gt: Path | list[Path] | None
    if cfg.data.name == "demo":
        if cfg.data.get("gt") or cfg.data.get("references"):
            key = "data.references" if cfg.data.get("references") else "data.gt"
            raise ConfigError(f"{key} names a reference and data=demo the built-in demo's: drop one")
        log.info("scoring the built-in demo (%s)", cfg.demo.dir)
        gt, demo_models = write_demo(Path(cfg.demo.dir), n_tasks=int(cfg.demo.n_tasks), seed=int(cfg.demo.seed))
    elif not any(OmegaConf.select(cfg, key) for key in PREDICTION_SETTINGS):
        raise ConfigError(f"no predictions named (data={cfg.data.name}): name them with model=NAME, "
                          "predictions=FILE, predictions=[FILE,...], trials.predictions=[FILE,...], "
                          "sweep.models=[NAME,...] or sweep=leaderboard (data=demo, the default when nothing is "
                          "named, scores the built-in demo)")
    else:
        gt = _reference(cfg)
    trials_cfg = cfg.get("trials") or {}
    n = trials_cfg.get("n")
    explicit = {e.option: cfg.model.get(e.option) for e in evaluators() if cfg.model.get(e.option)}
    if trials_cfg.get("predictions"):
        files = [Path(p) for p in trials_cfg["predictions"]]
        check_distinct(files)
        _only_one_file(explicit, "trials.predictions")
        return _trial_inputs(gt, [(cfg.model.get("name") or model_name(files[0]), files)], "trials.predictions")
    if sweep:
        _only_one_file(explicit, "sweep.predictions")
        names = [d.name for d in output_dirs(sweep, Path("."))]
        return Inputs(gt, sweep, names, _judges(sweep), True)
    if cfg.model.get("predictions"):
        pred = Path(cfg.model.predictions)
        name = cfg.model.get("name") or pred.stem
        if trials := find_trials(pred, n):
            _only_one_file(explicit, "trial files")
            return _trial_inputs(gt, [(name, trials)], "model.predictions")
        return Inputs(gt, [pred], [name], _judges([pred], explicit), False)
    _only_one_file(explicit, "sweep.models")
    if models:
        results = Path(cfg.results_dir)
        found = _published_files(results, models, bool(cfg.sweep.get("discover")))
        groups = [(m, find_trials(p, n)) for m, p in found]
        missing = [m for (m, p), (_, t) in zip(found, groups) if not p.is_file() and not t]
        if missing:  # expected with the leaderboard's list (discover), a slip in a list of one's own
            log.log(logging.INFO if cfg.sweep.get("discover") else logging.WARNING,
                    "no prediction file under %s for %d of the %d model(s) listed: %s", results, len(missing),
                    len(models), ", ".join(missing))
        if len(missing) == len(found):
            raise ConfigError(f"none of the sweep's models has a prediction file under {results} "
                              f"(expected {PUBLISHED_NAME.format(model='<model>')})")
        if any(t for _, t in groups):
            return _trial_inputs(gt, [(m, t or [p]) for (m, p), (_, t) in zip(found, groups) if m not in missing],
                                 "sweep.models", trials_of={m for m, t in groups if t})
        present = [(m, p) for m, p in found if p.is_file()]
        preds = [p for _, p in present]
        return Inputs(gt, preds, [m for m, _ in present], _judges(preds), True)
    preds = list(demo_models.values())
    return Inputs(gt, preds, list(demo_models), _judges(preds), True)


def leaderboard(cfg: DictConfig, inputs: Inputs) -> bool:
    """Whether a run is a leaderboard, which gets statistics by default: two or more models (a model's trial
    files count once), or the leaderboard's list of models (sweep=leaderboard)."""
    trials = inputs.trials or {}
    trial_names = {f"{m}_trial{i}" for m, paths in trials.items() for i in range(1, len(paths) + 1)}
    models = len(trials) + sum(1 for n in inputs.names if n not in trial_names)
    return models >= 2 or bool(cfg.sweep.get("discover") and cfg.sweep.get("models"))


def stats_settings(cfg: DictConfig, inputs: Inputs | None = None) -> StatsSettings | None:
    """The statistics step's settings (the `stats` block), checked whatever the option; None with stats=off, and
    with stats=auto (the default) unless `inputs` are a leaderboard."""
    group = cfg.get("stats") or {}
    enabled = group.get("enabled", "auto")
    if enabled not in (True, False, "auto"):
        raise ConfigError(f"stats.enabled={enabled!r}: expected true, false or auto (stats=on, stats=off, stats=auto)")
    number = {}
    for key in ("level", "power"):
        value = group.get(key, getattr(StatsSettings, key))
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"stats.{key}={value!r}: must be a number between 0 and 1")
        number[key] = float(value)
    settings = StatsSettings(
        resamples=config_int(group, "resamples", minimum=2, default=10_000, where="stats.resamples"),
        seed=config_int(group, "seed", minimum=0, default=0, where="stats.seed"),
        min_clusters=config_int(group, "min_clusters", minimum=2, default=MIN_CLUSTERS, where="stats.min_clusters"),
        cluster=str(group.get("cluster", "family")), method=str(group.get("method", "logit")),
        correction=str(group.get("correction", "expanded")), scheme=str(group.get("scheme", "multinomial")),
        **number).check()
    if enabled == "auto":
        return settings if inputs is not None and leaderboard(cfg, inputs) else None
    return settings if enabled else None


def _grid(cfg: DictConfig, name: str) -> list[float]:
    """A threshold grid of the align group (a list: engine.apps.config, its values in range)."""
    return list(cfg.align.get(name) or [])


def _write_outputs(cfg: DictConfig, prepared: PreparedSweep, result: SweepScores, inputs: Inputs,
                   folder: Path, timer: StageTimer, grids: tuple[list[float], list[float]]) -> list[dict]:
    """Every output of the run (per-file results, the threshold grid of `grids`, reports) written into folder."""
    with timer.stage("write"):
        dirs = [folder / name for name in inputs.names] if inputs.per_file_dirs else [folder]
        joined = load_sweep_joined(result, inputs.judges)
        aggregates = write_sweep(result, dirs, inputs.names, inputs.judges, joined)
    stats = stats_settings(cfg, inputs)
    weak_grid, strong_grid = grids
    at_points: list[tuple[tuple[float, float], list[ModelUnits]]] = []  # with stats: each grid point's units

    def keep(point: Thresholds, scores: TaskScores, rows: list[dict]) -> None:
        published = [{**agg, **row} for agg, row in zip(aggregates, rows)]
        at_points.append(((point.tau_weak, point.tau_strong),
                          sweep_units(replace(result, scores=scores, thresholds=point), inputs.names, joined,
                                      published)))

    if weak_grid or strong_grid:
        rows = threshold_grid(prepared, weak_grid or [result.thresholds.tau_weak],
                              strong_grid or [result.thresholds.tau_strong], inputs.names,
                              progress=bool(cfg.progress), each=keep if stats is not None else None)
        with timer.stage("write"):
            write_grid(rows, folder)
    if stats is not None:
        with timer.stage("stats"), cpu_threads(prepared.threads):
            device = resolve_device(str(cfg.device))
            units = sweep_units(result, inputs.names, joined, aggregates)
            document = bootstrap_stats(units, stats, device)
            for warning in document["warnings"]:  # a warning when asked for (stats=on); said, not warned, by default
                log.log(logging.WARNING if (cfg.get("stats") or {}).get("enabled") is True else logging.INFO,
                        "stats: %s", warning)
            if at_points:
                document["robustness"] = threshold_robustness(
                    document, (result.thresholds.tau_weak, result.thresholds.tau_strong), at_points, stats, device)
            if inputs.trials:
                counts = success_counts(result, inputs.trials, inputs.predictions, inputs.judges, joined, cfg.trials)
                clusters = [tid if stats.cluster == "sample" else (result.gt.tasks[tid].type or "unknown")
                            for tid in sorted(result.gt.tasks)]
                document["trials"] = {model: trial_intervals(c, clusters, stats, device) for model, c in counts.items()}
            atomic_write_json(folder / STATS_FILE, document)
    with timer.stage("write"):  # cost beside score: usage.json (engine/stats/cost.py)
        score_cost(folder, result, inputs.names, inputs.predictions, joined, aggregates,
                   [j.files for j in inputs.judges], OmegaConf.to_container(cfg.model, resolve=True), stats,
                   resolve_device(str(cfg.device)))
    if inputs.trials:
        with timer.stage("write"):
            write_trials(folder / TRIALS_FILE, result, inputs.trials, inputs.predictions, inputs.judges, joined,
                         aggregates, cfg.trials)
    if cfg.reports:
        with timer.stage("write"):
            write_reports(folder)
    return aggregates


def planned_outputs(inputs: Inputs) -> list[str]:
    """The entries a run scoring `inputs` may write into its output folder."""
    if inputs.gt is None:
        return inputs.names if inputs.per_file_dirs else ["results_eval.json", "results_eval.csv"]
    return [*(inputs.names if inputs.per_file_dirs else RESULT_FILES), *GRID_FILES, TRIALS_FILE, STATS_FILE, COST_FILE]


def check_existing_folder(cfg: DictConfig, folder: Path) -> None:
    """Before Hydra writes into an existing output folder: ConfigError unless this run's outputs may
    replace it (engine.contract.staged.check_output_folder), so a refused folder is left as it was."""
    check_output_folder(folder, planned_outputs(resolve_inputs(cfg)))


def run(cfg: DictConfig) -> int:
    """Score what the config names and write the outputs; returns the process exit code.

    The outputs replace the output folder's previous ones as a unit (engine.contract.staged).
    """
    with gc_paused():
        return _run(cfg)


def _run(cfg: DictConfig) -> int:
    try:
        settings = settings_from(cfg)
        thresholds = Thresholds(cfg.align.tau_weak, cfg.align.tau_strong)
        if inverted := thresholds.inversion():
            log.warning(inverted)
        grids = _grid(cfg, "tau_weak_grid"), _grid(cfg, "tau_strong_grid")
        inputs = resolve_inputs(cfg)
        reading = evaluator_settings(cfg)
        inputs.judges = [replace(j, settings=reading) for j in inputs.judges]
        out = output_folder(cfg)
        stats = stats_settings(cfg, inputs)
        if stats is not None:  # the least the step will need (its quantities, clusters: at least 7 and 1)
            check_memory(stats, 1, len(inputs.names), len(inputs.names) * (len(inputs.names) - 1) // 2,
                         len(alignment_keys(settings.profile)), resolve_device(str(cfg.device)))
        if inputs.gt is None:
            return _run_unreferenced(cfg, inputs, out, grids)
        check_output_folder(out, planned_outputs(inputs))
        timer = StageTimer()
        prepared = prepare_sweep(inputs.gt, inputs.predictions, settings, timer)
        result = score_prepared(prepared, thresholds)
        with staged_folder(out) as folder:
            aggregates = _write_outputs(cfg, prepared, result, inputs, folder, timer, grids)
    except (InputError, ConfigError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except MemoryError:
        print("error: out of memory (the inputs are too large for this machine)", file=sys.stderr)
        return 2
    embedding = result.embedding
    print(headline(inputs.names, aggregates, out / TRIALS_FILE if inputs.trials else None,
                   read_stats(out / STATS_FILE) if stats is not None else None, reports=bool(cfg.reports)))
    if (out / GRID_FILE).is_file():
        print(grid_headline(load_threshold_grid(out / GRID_FILE), out))
    print(f"texts: {embedding.distinct_texts} distinct, {embedding.cached} cached, {embedding.encoded} encoded; "
          "stages: " + ", ".join(f"{k} {v:.2f}s" for k, v in timer.seconds.items()))
    print(f"outputs: {out}")
    _index(cfg, out)
    return 0


def _index(cfg: DictConfig, out: Path) -> None:
    """Add the finished run to the run index of cfg.index_dir (none when null); a failure is a warning."""
    if cfg.get("index_dir") is None:
        return
    try:
        append_run(Path(cfg.index_dir), run_entry(out))
    except (InputError, OSError) as exc:
        log.warning("run not added to the run index: %s", exc)


def _run_unreferenced(cfg: DictConfig, inputs: Inputs, out: Path, grids: tuple[list[float], list[float]]) -> int:
    """Score the evaluator files of the predictions without reference trajectories (engine.unreferenced):
    results_eval.json per file and the reports; the settings that need the alignment are refused."""
    needs = [key for key, given in (("align.tau_weak_grid", grids[0]), ("align.tau_strong_grid", grids[1]),
                                    ("stats=on", cfg.stats.get("enabled") is True), ("trials", inputs.trials))
             if given]
    if needs:
        raise ConfigError(f"{needs[0]} needs reference trajectories (set data.gt=PATH), and this run has none")
    log.warning(NO_REFERENCE)
    check_output_folder(out, planned_outputs(inputs))
    dirs = [Path(name) for name in inputs.names] if inputs.per_file_dirs else [Path(".")]
    with staged_folder(out) as folder:
        aggregates = write_unreferenced(inputs.predictions, [folder / d for d in dirs], inputs.names, inputs.judges)
        if cfg.reports:
            write_reports(folder)
    keys = [k for k in ("answer_sr", "pass_rate", "rubric_score", "check_accuracy_evaluated")
            if any(k in a for a in aggregates)]
    print("\n".join(f"{name}: {a['num_ids']} tasks" + "".join(f", {k} {_number(a.get(k))}" for k in keys)
                    for name, a in zip(inputs.names, aggregates)))
    print(f"outputs: {out}")
    _index(cfg, out)
    return 0


def _number(value: Any) -> str:
    return "–" if value is None else f"{value:.4f}"


OPEN_KEYS = SCORE.spec.open_keys
"""New keys the score app reads: an evaluator's file, `+model.<option>=PATH` (engine.apps.config.score)."""

main = hydra_app(SCORE.spec, run, quick_exit=True, rewrite=SCORE.rewrite, check_folder=check_existing_folder)
