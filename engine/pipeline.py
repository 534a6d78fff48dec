"""The scoring pipeline: load -> serialize -> embed -> align -> metrics -> report."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from engine.align import Candidates, Matches, candidate_pairs, match
from engine.contract import TrajectoryFile, read_trajectories, scorable
from engine.contract.progress import track
from engine.encode import EmbeddingStats, embed_distinct
from engine.encoders import SAVE_EVERY, TextEncoder
from engine.inputs import output_dirs as output_dirs
from engine.judge_results import Joined, JoinedFiles, load_joined
from engine.metrics import TaskScores, task_scores
from engine.references import Alternatives, check_select, chosen_samples, read_references
from engine.results import FileResults, SampleView, file_results, write_results
from engine.serialize import Profile, SweepTables, flatten_sweep
from engine.thresholds import Thresholds
from kernels.device import cpu_threads, kernel_threads, resolve_device

log = logging.getLogger(__name__)


@dataclass
class ScoreSettings:
    """How a sweep is serialized and embedded, and where: everything but the thresholds."""

    profile: Profile = "reference"
    device: str = "auto"
    encoder_model: str | None = None
    encoder_batch_size: int = 128
    encoder_backend: str = "auto"  # torch, onnxruntime, openvino, or auto: the fastest here (engine.encoders.select)
    encoder_save_every: float = SAVE_EVERY  # seconds between two saves of encoded vectors into cache_dir
    progress: bool = False
    parse_string_arguments: bool = False  # predicted arguments given as a JSON string scored as their object
    cache_dir: str | None = None
    select: tuple[str, ...] | None = None  # a task's best reference by these metrics (None: Recall, ArgSim)


@dataclass
class StageTimer:
    """Wall-clock seconds per pipeline stage."""

    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time a block under this stage name (accumulating)."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start


@dataclass
class PreparedSweep:
    """A sweep up to its candidate pairs and similarities: everything thresholds do not change."""

    gt: TrajectoryFile
    preds: list[TrajectoryFile]
    tables: SweepTables
    candidates: Candidates
    embedding: EmbeddingStats
    settings: ScoreSettings
    timer: StageTimer
    threads: int | None = None
    references: tuple[Path, ...] = ()  # the reference files read, in order (several with data.references)

    @contextmanager
    def kernel_stage(self, name: str) -> Iterator[None]:
        """A timed stage of alignment or metric kernels, on the sweep's CPU threads (kernel_threads)."""
        with self.timer.stage(name), cpu_threads(self.threads):
            yield


@dataclass
class SweepScores:
    """The result of scoring a set of prediction files against one GT."""

    gt: TrajectoryFile
    preds: list[TrajectoryFile]
    tables: SweepTables
    matches: Matches
    scores: TaskScores
    embedding: EmbeddingStats
    settings: ScoreSettings
    thresholds: Thresholds
    timer: StageTimer
    references: tuple[Path, ...] = ()

    def samples_of(self, file_index: int) -> np.ndarray:
        """The samples of one prediction file that are scored: with several references, each id's
        sample against its best reference (engine.references.chosen_samples)."""
        return selected_samples(self.tables, self.scores, file_index, self.settings)


def selected_samples(tables: SweepTables, scores: TaskScores, file_index: int, settings: ScoreSettings) -> np.ndarray:
    """A file's samples, each id against its best reference by the settings' selection metrics."""
    return chosen_samples(tables.task_ids, tables.sample_task, tables.sample_ref, scores.values,
                          tables.samples_of(file_index), check_select(settings.select, settings.profile))


def embed_tables(tables: SweepTables, settings: ScoreSettings, device: torch.device
                 ) -> tuple[np.ndarray, EmbeddingStats]:
    """Embeddings of the sweep's distinct texts (cached on disk when a cache_dir is set)."""
    encoder = TextEncoder(settings.encoder_model, device=str(device), batch_size=settings.encoder_batch_size,
                          progress=settings.progress, backend=settings.encoder_backend, export_dir=settings.cache_dir)
    vectors, stats = embed_distinct(tables.texts, encoder, settings.cache_dir, every=settings.encoder_save_every)
    return vectors, replace(stats, backend=encoder.description())


def prepare_sweep(gt_path: str | Path | list[Path], pred_paths: Sequence[str | Path], settings: ScoreSettings,
                  timer: StageTimer | None = None) -> PreparedSweep:
    """Load, serialize and embed every file, and build all candidate pairs with their similarities.

    gt_path: the reference file, or several (engine.references: a task's references in file order).
    """
    timer = timer or StageTimer()
    device = resolve_device(settings.device)
    with timer.stage("load"):
        gt, alternatives = read_references(gt_path)
        many = settings.progress and len(pred_paths) > 4
        # tasks lost to the infrastructure are reported apart, not scored (a rerun retries them)
        preds = [scorable(read_trajectories(p, lenient=True, parse_strings=settings.parse_string_arguments))
                 for p in track(list(pred_paths), "load", many)]
    references = (Path(gt_path),) if isinstance(gt_path, (str, Path)) else tuple(Path(p) for p in gt_path)
    return prepare_loaded(gt, alternatives, preds, settings, timer, references, device)


def prepare_loaded(gt: TrajectoryFile, alternatives: Alternatives | None, preds: list[TrajectoryFile],
                   settings: ScoreSettings, timer: StageTimer | None = None, references: tuple[Path, ...] = (),
                   device: torch.device | None = None) -> PreparedSweep:
    """Serialize and embed trajectories already read (the reference set as read_references gives it, the
    predictions as `scorable` keeps them), and build all candidate pairs with their similarities."""
    timer = timer or StageTimer()
    device = device if device is not None else resolve_device(settings.device)
    with timer.stage("serialize"):
        tables = flatten_sweep(gt, preds, settings.profile, alternatives)
    with timer.stage("embed"):
        embeddings, stats = embed_tables(tables, settings, device)
    threads = kernel_threads(len(tables.pred_sample))
    with timer.stage("align"), cpu_threads(threads):
        candidates = candidate_pairs(tables, embeddings, device)
    return PreparedSweep(gt=gt, preds=preds, tables=tables, candidates=candidates, embedding=stats,
                         settings=settings, timer=timer, threads=threads, references=references)


def score_prepared(prepared: PreparedSweep, thresholds: Thresholds) -> SweepScores:
    """Match and measure a prepared sweep at one pair of thresholds."""
    with prepared.kernel_stage("align"):
        matches = match(prepared.candidates, thresholds.tau_weak)
    with prepared.kernel_stage("metrics"):
        scores = task_scores(prepared.tables, matches, thresholds.tau_strong, prepared.settings.profile)
    return SweepScores(gt=prepared.gt, preds=prepared.preds, tables=prepared.tables, matches=matches,
                       scores=scores, embedding=prepared.embedding, settings=prepared.settings,
                       thresholds=thresholds, timer=prepared.timer, references=prepared.references)


def score_sweep(gt_path: str | Path | list[Path], pred_paths: list[str | Path], thresholds: Thresholds,
                settings: ScoreSettings, timer: StageTimer | None = None) -> SweepScores:
    """Score every prediction file against the GT in one pass (one embedding of all texts)."""
    return score_prepared(prepare_sweep(gt_path, pred_paths, settings, timer), thresholds)


def load_sweep_joined(result: SweepScores, judges: Sequence[JoinedFiles | None] | None = None
                      ) -> list[Joined | None]:
    """Each prediction file's joined values: its evaluator files (`judges`, None for none) and the
    evaluators that compute theirs from the predictions."""
    return [load_joined(files, pred) for files, pred in zip(judges or [None] * len(result.preds), result.preds)]


def file_result(result: SweepScores, f: int, name: str, judges: JoinedFiles | None = None,
                joined: Joined | None = None, view: SampleView | None = None) -> FileResults:
    """The outputs of prediction file `f` of a sweep, in memory, recorded as model `name`; `judges`: its
    evaluator files (named in its meta), `joined`: their values, loaded (load_sweep_joined); `view`: the
    sweep's match view (sweep_view), when several files share one."""
    view = view if view is not None else sweep_view(result)
    s, th = result.settings, result.thresholds
    pred = result.preds[f]
    meta = {"gt": str(result.gt.path), "predictions": str(pred.path), "tau_weak": th.tau_weak,
            "tau_strong": th.tau_strong, "profile": s.profile, "model": name}
    if len(result.references) > 1:
        meta["references"] = [str(p) for p in result.references]
    if result.embedding.backend is not None:  # how the vectors were computed, unless by torch as named
        meta["encoder"] = result.embedding.backend
    if judges is not None:
        meta.update(judges.meta())
    return file_results(view, result.scores, result.samples_of(f), th.tau_strong, meta, joined)


def sweep_view(result: SweepScores) -> SampleView:
    """The host-side match arrays of a sweep, by sample."""
    m = result.matches.to_numpy()
    return SampleView(result.tables, m["sample"], m["gt"], m["pred"], m["similarity"])


def write_sweep(result: SweepScores, dirs: list[Path], names: Sequence[str | None] | None = None,
                judges: Sequence[JoinedFiles | None] | None = None,
                joined: list[Joined | None] | None = None) -> list[dict]:
    """Write each prediction file's outputs into its folder; returns the aggregates.

    names: model names recorded in each file's meta (default: the folder's name); judges: each file's
    evaluator files (None for none) whose values (task_completion / information_grounding, call outcomes,
    ...) join the outputs, with the values of the evaluators that compute theirs from the predictions;
    joined: those values already loaded (load_sweep_joined), else they are loaded here.
    """
    view = sweep_view(result)
    names = names or [None] * len(result.preds)
    judges = judges or [None] * len(result.preds)
    joined = joined if joined is not None else load_sweep_joined(result, judges)
    aggregates = []
    items = list(enumerate(zip(result.preds, dirs)))
    for f, (_, directory) in track(items, "write", result.settings.progress and len(items) > 4):
        outputs = file_result(result, f, names[f] or directory.name, judges[f], joined[f], view)
        aggregates.append(write_results(directory, outputs))
    return aggregates
