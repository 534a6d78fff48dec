"""The Python API: score prediction files, or trajectories held in memory, against references and get the
tables and statistics back as plain objects (docs/scoring.md, "From Python"):

    from engine.api import default_cache_dir, score
    scores = score({"mine": "mine.json", "theirs": "theirs.json"}, "test_mcp_GT.json", cache_dir=default_cache_dir())
    scores.leaderboard[0]["Model"], scores.leaderboard[0]["Average Score"]

`score` chains the steps the score app runs (engine.pipeline, engine.stats, engine.reports) on the same
settings objects, so its numbers are the app's to the last digit; nothing is written unless `write_to`
names a folder, which then gets exactly the files the app writes into its output folder.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias

from engine.api_sources import (
    PathLike,
    Predictions,
    Records,
    References,
    Source,
    in_memory,
    read_sources,
    references_of,
)
from engine.contract import (
    ConfigError,
    JsonObject,
    atomic_write_json,
    config_int,
    dumps_json,
)
from engine.contract.pause import gc_paused
from engine.contract.staged import check_output_folder, staged_folder
from engine.encoders import check_backend
from engine.evaluators import evaluators
from engine.evaluators.vtb_rubrics import NAME as VTB
from engine.evaluators.vtb_scoring import DEFAULT_PROFILE as DEFAULT_VTB_PROFILE
from engine.evaluators.vtb_scoring import check_profile as check_vtb_profile
from engine.judge_results import JoinedFiles, joined_files
from engine.metricspec import AVERAGE, alignment_keys, check_profile
from engine.pipeline import (
    ScoreSettings,
    file_result,
    load_sweep_joined,
    prepare_loaded,
    score_prepared,
    sweep_view,
)
from engine.references import check_select
from engine.reports.intervals import pairwise_table
from engine.reports.read import ModelResult
from engine.reports.tables import Table, family_tables, intervals_table, leaderboard_table
from engine.reports.write import write_reports
from engine.results import RESULT_FILES, FileResults, ResultsDocument, write_results
from engine.stats import STATS_FILE, StatsSettings, bootstrap_stats, sweep_units
from engine.stats.settings import check_memory
from engine.synthetic import demo_records
from engine.thresholds import Thresholds
from kernels.device import cpu_threads, resolve_device

if TYPE_CHECKING:
    import pandas

log = logging.getLogger(__name__)

Row: TypeAlias = "dict[str, object]"
"""One row of a table: column -> cell (a number, a text or None), as the table's JSON file holds it."""


__all__ = ["TABLES", "ResultsDocument", "PathLike", "Predictions", "Records", "References", "Row", "Scores",
           "default_cache_dir", "in_memory", "score"]

TABLES = ("leaderboard", "per_task", "families", "intervals", "pairwise")
"""The tables of a Scores, in the order to_records and to_pandas give them."""


def default_cache_dir() -> Path | None:
    """The score app's embedding cache (its encoder.cache_dir default): $M3BENCH_CACHE (set and empty: none),
    else $M3BENCH_HOME/embeddings, $M3BENCH_HOME defaulting to ~/.cache/m3bench. `score` uses no cache unless
    given one; this one shares the vectors the app has encoded."""
    cache = os.environ.get("M3BENCH_CACHE")
    if cache is not None:
        return Path(cache) if cache else None
    home = os.environ.get("M3BENCH_HOME", f"{os.environ.get('HOME', '.')}/.cache/m3bench")
    return Path(f"{home}/embeddings")


@dataclass(frozen=True)
class Scores:
    """What `score` gives back, as plain objects: each table a list of row dicts (column -> cell).

    leaderboard: one row per model, best first: the rows of leaderboard.json; per_task: one row per model
    and task, the columns of its results_eval.csv after ``model``; families: the per-family leaderboards
    (families.json) as rows with a ``Family`` column first; intervals: the leaderboard with intervals
    (leaderboard_intervals.json) and pairwise: the pairwise comparisons by the Average Score (pairwise.json),
    both empty without statistics; stats: the statistics document (stats.json) or None; results: per model
    the content of its results_eval.json (aggregate, per_id with the matches, by_type, meta); tables: the
    report tables themselves (engine.reports.tables.Table: to_markdown, to_csv, to_text); written: the folder
    the outputs were written to (`write_to`), else None.
    """

    leaderboard: list[Row]
    per_task: list[Row]
    families: list[Row]
    intervals: list[Row]
    pairwise: list[Row]
    stats: JsonObject | None
    results: dict[str, ResultsDocument] = field(repr=False)
    tables: dict[str, Table] = field(repr=False, compare=False)
    written: Path | None = None

    def to_records(self) -> dict[str, list[Row]]:
        """Every table (TABLES) by name, as lists of row dicts."""
        return {name: getattr(self, name) for name in TABLES}

    def to_markdown(self) -> str:
        """The leaderboard, and with statistics the leaderboard with intervals and the pairwise comparisons,
        as markdown (the tables of leaderboard.md, leaderboard_intervals.md and pairwise.md)."""
        parts = [f"## {self.tables[name].title}\n\n{self.tables[name].to_markdown()}"
                 for name in ("leaderboard", "intervals", "pairwise") if name in self.tables]
        return "\n".join(parts)

    def to_pandas(self) -> dict[str, pandas.DataFrame]:
        """Every table (TABLES) by name as a pandas DataFrame (columns in the tables' order). pandas is not a
        dependency of the project: ImportError saying so when it is not installed."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("Scores.to_pandas needs pandas, which m3bench does not install: pip install pandas "
                              "(to_records() gives the same tables as lists of dicts)") from None
        frames = {}
        for name in TABLES:
            table = self.tables.get(name)
            columns = table.columns if table is not None and name != "families" else None
            frames[name] = pd.DataFrame.from_records(getattr(self, name), columns=columns)
        return frames


def _judge_files(source: Source, explicit: Mapping[str, PathLike], settings: Mapping[str, Mapping[str, str]]
                 ) -> JoinedFiles:
    """A model's evaluator files: those `explicit` names by option (judge, calls, ...), else, for a file, the
    companions beside it the score app reads (<predictions stem>_<suffix>.json)."""
    options = {e.card.option_name: e.card.name for e in evaluators() if e.card.suffix is not None}
    unknown = [o for o in explicit if o not in options]
    if unknown:
        raise ConfigError(f"judges[{source.name!r}]: unknown evaluator option(s) {', '.join(map(repr, unknown))} "
                          f"(expected some of {', '.join(options)})")
    if source.path is not None:
        files = joined_files(source.path, explicit)
    else:
        files = JoinedFiles({options[o]: Path(p) for o, p in explicit.items() if p})
    return JoinedFiles(files.files, settings)


def _stats_settings(stats: bool | str, models: int, resamples: int, level: float, seed: int, cluster: str,
                    method: str) -> StatsSettings | None:
    """The statistics step's settings, checked whatever `stats` says; None with stats off, and with "auto"
    unless two or more models are scored (the score app's leaderboard rule)."""
    if stats not in (True, False, "auto"):
        raise ConfigError(f"stats={stats!r}: expected True, False or 'auto'")
    for key, value in (("level", level),):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{key}={value!r}: must be a number between 0 and 1")
    settings = StatsSettings(resamples=config_int({"resamples": resamples}, "resamples", minimum=2),
                             level=float(level), seed=config_int({"seed": seed}, "seed", minimum=0),
                             cluster=cluster, method=method).check()
    if stats == "auto":
        return settings if models >= 2 else None
    return settings if stats else None


def _normal(value: object) -> JsonObject:
    """The object `value` as its JSON file reads back (what the written outputs hold: tuples as lists, numbers
    as parsed)."""
    normal: JsonObject = json.loads(dumps_json(value, indent=None))
    return normal


def _results(result: ResultsDocument) -> ResultsDocument:
    """A model's results_eval.json content as the file reads back."""
    normal: ResultsDocument = json.loads(dumps_json(result, indent=None))
    return normal


def score(predictions: Predictions | None = None, references: References | None = None, *, demo: bool = False,
          names: str | Sequence[str] | None = None, tau_weak: float = 0.6, tau_strong: float = 0.8,
          profile: str = "reference", select: Sequence[str] | None = None, device: str = "auto",
          encoder_model: str | None = None, encoder_backend: str = "auto", encoder_batch_size: int = 128,
          cache_dir: PathLike | None = None, parse_string_arguments: bool = False,
          stats: bool | Literal["auto"] = "auto", resamples: int = 10_000, level: float = 0.95, seed: int = 0,
          cluster: str = "family", method: str = "logit",
          judges: Mapping[str, Mapping[str, PathLike]] | None = None, vtb_profile: str = DEFAULT_VTB_PROFILE,
          sort_by: str = AVERAGE, progress: bool = False, write_to: PathLike | None = None) -> Scores:
    """Score prediction trajectories against reference trajectories, as the score app does; the tables and
    statistics come back as a `Scores`.

    predictions: a prediction file; a list of files (each model named by its file's stem, as the app's
    inputs.files); one model's trajectories held in memory (a list of task objects in the published
    record shape, named "predictions"); or a mapping of model name -> a file or trajectories. references:
    the reference file, several (a task's references in file order), or the reference trajectories held in
    memory. demo=True scores the built-in demo (the score app's data=demo, made in memory) and takes
    neither. names: the models' names, in order, in place of those above.

    Trajectories held in memory are checked as a file's are: a problem is an InputError naming
    ``<in-memory: NAME>``, the task id and the field.

    tau_weak, tau_strong, profile, select, device, encoder_*, parse_string_arguments: the app's align.*,
    metrics.profile, device, encoder.* and parse_string_arguments settings. cache_dir: the embedding cache
    (encoder.cache_dir; None, the default: none, nothing is written; default_cache_dir(): the app's).
    stats: the statistics step (True, False, or "auto": with two or more models), with resamples, level,
    seed, cluster and method as the app's stats.* settings. judges: model name -> {evaluator option: file}
    (the app's inputs.verdicts.judge=PATH ...), each in place of the companion file the app reads beside a
    prediction file (<stem>_taskcompletion.json ...); vtb_profile: the app's vtb.profile. sort_by: the
    leaderboard's order (a column label). write_to: a folder that gets exactly the files the score app writes into its
    output folder (per-model results, stats.json, reports), replaced as a unit; None: nothing is written.
    """
    with gc_paused():
        return _score(predictions, references, demo, names, Thresholds(tau_weak, tau_strong), profile, select,
                      device, encoder_model, encoder_backend, encoder_batch_size, cache_dir, parse_string_arguments,
                      stats, (resamples, level, seed, cluster, method), judges or {}, vtb_profile, sort_by,
                      progress, write_to)


def _score(predictions: Predictions | None, references: References | None, demo: bool,
           names: str | Sequence[str] | None, thresholds: Thresholds,
           profile: str, select: Sequence[str] | None, device: str, encoder_model: str | None, encoder_backend: str,
           encoder_batch_size: int, cache_dir: PathLike | None, parse_strings: bool, stats: bool | str,
           stats_options: tuple[int, float, int, str, str], judges: Mapping[str, Mapping[str, PathLike]],
           vtb_profile: str, sort_by: str, progress: bool, write_to: PathLike | None) -> Scores:
    try:
        checked_profile = check_profile(profile)
        reading = {VTB: {"profile": check_vtb_profile(vtb_profile)}}
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    settings = ScoreSettings(profile=checked_profile, device=device, encoder_model=encoder_model,
                             encoder_batch_size=config_int({"encoder_batch_size": encoder_batch_size},
                                                           "encoder_batch_size"),
                             encoder_backend=check_backend(encoder_backend),
                             cache_dir=None if cache_dir is None else str(cache_dir), progress=progress,
                             parse_string_arguments=parse_strings, select=check_select(select, checked_profile))
    if inverted := thresholds.inversion():
        log.warning(inverted)
    if demo:
        if predictions is not None or references is not None:
            raise ConfigError("demo=True scores the built-in demo: give no predictions or references with it")
        reference, models = demo_records()
        predictions, references = models, reference
    elif predictions is None:
        raise ConfigError("no predictions given: score(predictions, references), or score(demo=True) for the "
                          "built-in demo")
    elif references is None:
        raise ConfigError("no references given: score(predictions, references) needs the reference trajectories "
                          "(a file such as the published test_mcp_GT.json, or a list of task objects)")
    sources, own_dirs = read_sources(predictions, names)
    unknown = sorted(set(judges) - {s.name for s in sources})
    if unknown:
        raise ConfigError(f"judges: no model named {', '.join(map(repr, unknown))} (the models: "
                          f"{', '.join(s.name for s in sources)})")
    model_names = [s.name for s in sources]
    torch_device = resolve_device(device)
    statistics = _stats_settings(stats, len(sources), *stats_options)
    if statistics is not None:  # the least the step will need, as the score app checks it
        check_memory(statistics, 1, len(sources), len(sources) * (len(sources) - 1) // 2,
                     len(alignment_keys(checked_profile)), torch_device)
    out = None if write_to is None else Path(write_to)
    if out is not None:
        check_output_folder(out, [*(model_names if own_dirs else RESULT_FILES), STATS_FILE])
    files = [_judge_files(s, judges.get(s.name, {}), reading) for s in sources]
    gt, alternatives, read_from = references_of(references)
    preds = [s.read(parse_strings) for s in sources]
    prepared = prepare_loaded(gt, alternatives, preds, settings, references=read_from, device=torch_device)
    result = score_prepared(prepared, thresholds)
    joined = load_sweep_joined(result, files)
    view = sweep_view(result)
    outputs = [file_result(result, f, name, files[f], joined[f], view) for f, name in enumerate(model_names)]
    document = None
    if statistics is not None:
        with cpu_threads(prepared.threads):
            units = sweep_units(result, model_names, joined, [o.aggregate for o in outputs])
            made = bootstrap_stats(units, statistics, torch_device)
        for warning in made["warnings"]:
            log.log(logging.WARNING if stats is True else logging.INFO, "stats: %s", warning)
        document = _normal(made)
    if out is not None:
        _write(out, outputs, model_names if own_dirs else None, document)
    return _scores(outputs, model_names, document, sort_by, out)


def _write(out: Path, outputs: list[FileResults], dirs: list[str] | None, document: JsonObject | None) -> None:
    """The score app's outputs in `out`, replaced as a unit: each model's files (in a folder of its own when
    `dirs` names them), stats.json and the reports."""
    with staged_folder(out) as folder:
        for outputs_of, directory in zip(outputs, [folder / d for d in dirs] if dirs else [folder]):
            write_results(directory, outputs_of)
        if document is not None:
            atomic_write_json(folder / STATS_FILE, document)
        write_reports(folder)


def _scores(outputs: list[FileResults], names: list[str], document: JsonObject | None, sort_by: str,
            written: Path | None) -> Scores:
    """The Scores of a sweep's outputs: the report tables built from them as write_reports builds them from
    the files (models in name order, as collect_run reads them)."""
    results = {name: _results(o.result) for name, o in zip(names, outputs)}
    models = sorted((ModelResult(name, Path(name) / "results_eval.json", r["aggregate"], r["by_type"], r["meta"])
                     for name, r in results.items()), key=lambda r: r.name)
    board = leaderboard_table(models, sort_by)
    families = family_tables(models, sort_by)
    tables = {"leaderboard": board}
    if document is not None:
        tables["intervals"] = intervals_table(board, document)
        if (pairwise := pairwise_table(document)) is not None:
            tables["pairwise"] = pairwise
    per_task: list[Row] = [{"model": name, **{c: entry.get(c) for c in o.columns}}
                for name, o in zip(names, outputs) for entry in results[name]["per_id"]]
    return Scores(leaderboard=board.records(), per_task=per_task,
                  families=[{"Family": family, **row} for family, table in families.items()
                            for row in table.records()],
                  intervals=tables["intervals"].records() if "intervals" in tables else [],
                  pairwise=tables["pairwise"].records() if "pairwise" in tables else [],
                  stats=document, results=results, tables=tables, written=written)
