"""Cost beside score (engine.cost): each model's per-task tokens, requests, wall time and dollars with their
intervals, its judges' usage, and its place on the score-cost frontier, as usage.json records them.

With statistics, every per-task quantity is resampled on the statistics step's own resample matrix W (the same
clusters, seed and scheme as stats.json, so the score and the cost of a model move together), its interval by the
step's method on the log scale of a volume (engine.stats.decisions.model_intervals, range [0, inf)), and the
frontier membership is called from the joint resamples of every model's Average Score and cost
(engine.cost.frontier_call).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import numpy as np
import torch

from engine import cost as ct
from engine.contract import atomic_write_json, read_json
from engine.contract.settings import ListPrice
from engine.stats import decisions as dc
from engine.stats.document import SettingsRecord
from engine.stats.settings import AVERAGE_KEY, StatsSettings
from engine.stats.units import ModelUnits, empty_value, sweep_units
from kernels import bootstrap as bs

if TYPE_CHECKING:
    from engine.judge_results import Joined
    from engine.pipeline import SweepScores

log = logging.getLogger(__name__)

COST_FILE = "usage.json"

NO_USAGE = ("cost: no token usage recorded in the prediction files (a rollout writes each task's `usage`; these "
            "files have none): no cost table")


@dataclass
class ModelCost:
    """What one scored model's cost is read from: its scored ids and their clusters, its usage (None: none
    recorded), price, judges' usage and published Average Score."""

    name: str
    ids: list[str]
    clusters: list[str]
    usage: ct.TaskUsage | None
    price: ListPrice | None
    judges: ct.JudgeUsage | None
    score: float | None


class _Interval(TypedDict, total=False):
    low: float | None
    high: float | None
    se: float | None
    clusters: int
    reason: str


class Quantity(_Interval):
    """A per-task quantity of a model: its value, and with statistics its interval (None without one: `reason`
    says why), SE and the clusters that have it."""

    value: float


class JudgeBlock(ct.JudgeUsage):
    """A model's judges' usage and its USD per scored task (None without USD or a scored task)."""

    usd_per_task: float | None


class Membership(TypedDict):
    """A model's place on the frontier: on it by the point values, the share of joint resamples on it and the
    call from that share (both None without statistics)."""

    on: bool
    share: float | None
    call: str | None


class _CostExtra(TypedDict, total=False):
    tasks: int
    metrics: dict[str, Quantity]
    frontier: Membership


class CostRecord(_CostExtra):
    """A model's record: its tasks scored, price, judges' usage and Average Score; with usage its tasks with a
    record and its quantities; when placed (usage and a score), its frontier membership."""

    tasks_scored: int
    price: ct.PriceRecord | None
    judges: JudgeBlock | None
    score: float | None


class Frontier(TypedDict):
    """usage.json's frontier block: its axis and rule, the models placed on it and the tail of its calls."""

    axis: str
    score: str
    models: list[str]
    rule: str
    level: float | None
    tail: float | None
    resamples_left_out: int | None


class CostDocument(TypedDict):
    """usage.json's content: per model its cost record, the frontier, the notes, the statistics' settings."""

    models: dict[str, CostRecord]
    frontier: Frontier
    notes: list[str]
    settings: SettingsRecord | None


def model_costs(units: Sequence[ModelUnits], predictions: Sequence[Path], records: Sequence[Sequence[object]],
                prices: Mapping[str, ListPrice | None], judge_files: Sequence[Mapping[str, Path]]) -> list[ModelCost]:
    """Each model's cost inputs: the usage of its prediction file's `records` on its scored ids (wall times from
    the rollout's tool logs beside the file), its price and its evaluator files' judge usage."""
    out = []
    for unit, path, recs, files in zip(units, predictions, records, judge_files, strict=True):
        usage = ct.read_usage(Path(path), recs, unit.ids)
        if usage is not None:
            wall = ct.read_wall_times(ct.tool_log_folder(Path(path)), usage.ids)
            usage.wall_s = np.array([wall.get(i, math.nan) for i in usage.ids], dtype=np.float64)
        out.append(ModelCost(unit.name, list(unit.ids), list(unit.clusters), usage, prices.get(unit.name),
                             ct.judge_usage(files), unit.published.get(AVERAGE_KEY)))
    return out


def _cluster_index(models: Sequence[ModelCost], units: Sequence[ModelUnits], settings: StatsSettings
                   ) -> dict[str, int]:
    """id -> cluster column, as the statistics step numbers them (so that W is stats.json's)."""
    names: dict[str, str] = {}
    for unit in units:
        for ident, cluster in zip(unit.ids, unit.clusters):
            names.setdefault(ident, cluster if settings.cluster == "family" else ident)
    position = {c: j for j, c in enumerate(sorted(set(names.values())))}
    return {i: position[c] for i, c in names.items()}


def score_rows(unit: ModelUnits, cluster_of: Mapping[str, int], clusters: int, counts: torch.Tensor) -> torch.Tensor:
    """A model's Average Score at each resample (B): the mean of its averaged metrics' resampled ratios (NaN when
    one has no value), as the statistics step computes it."""
    keys = [k for k in unit.average if k in unit.num]
    if not keys:
        return torch.full((counts.shape[0],), math.nan, dtype=torch.float64)
    parts = {k: (unit.num[k], unit.den[k]) for k in keys}
    num, den = ct.cluster_sums(unit.ids, cluster_of, clusters, parts)
    empty = torch.tensor([empty_value(k) for k in keys], dtype=torch.float64)
    values = bs.ratios(counts.to(torch.float64), torch.as_tensor(num), torch.as_tensor(den), empty)
    return values.mean(0)


def _intervals(rows: torch.Tensor, num: np.ndarray, den: np.ndarray, settings: StatsSettings
               ) -> list[Quantity]:
    """Each quantity's block: value, low, high, se, clusters (or the reason it has no interval)."""
    k = num.shape[1]
    point = torch.as_tensor(num.sum(0) / den.sum(0), dtype=torch.float64)
    present = torch.as_tensor((den > 0).sum(0), dtype=torch.float64)
    total = den.sum(0, keepdims=True)
    effective = bs.effective_clusters(torch.as_tensor(den / np.where(total > 0, total, 1.0)))
    jack = (ct.resample_rows(bs.leave_one_out(num.shape[0]), num, den).T if settings.method == "bca" else None)
    zeros, inf = torch.zeros(k, dtype=torch.float64), torch.full((k,), math.inf, dtype=torch.float64)
    low, high, se = dc.model_intervals(rows, point, jack, present, effective, zeros, inf, settings)
    valid = bs.valid_counts(rows)
    out: list[Quantity] = []
    for q in range(k):
        why = dc.reason(None, int(present[q]), int(valid[q]), float(se[q]), settings.min_clusters)
        block: Quantity = {"value": float(point[q]), "low": None if why else _clean(low[q]),
                           "high": None if why else _clean(high[q]), "se": _clean(se[q]), "clusters": int(present[q])}
        if why:
            block["reason"] = why
        out.append(block)
    return out


def _clean(value: torch.Tensor | float) -> float | None:
    number = float(value)
    return None if math.isnan(number) else number


def _judges_block(judges: ct.JudgeUsage | None, tasks: int) -> JudgeBlock | None:
    if judges is None:
        return None
    usd = judges["usd"]
    return {**judges, "usd_per_task": usd / tasks if isinstance(usd, (int, float)) and tasks else None}


def cost_document(models: Sequence[ModelCost], units: Sequence[ModelUnits], settings: StatsSettings | None,
                  device: torch.device | str = "cpu") -> CostDocument | None:
    """usage.json's content: per model its per-task quantities (with intervals when `settings` are given), price,
    judges' usage and frontier membership; the frontier's axis and rule; notes (a model without a price or usage).
    None when no model has usage and no judge has any (nothing to say but NO_USAGE)."""
    if not any(m.usage is not None or m.judges is not None for m in models):
        return None
    notes = []
    unpriced = [m.name for m in models if m.usage is not None and m.price is None]
    if unpriced:
        notes.append(f"no price for {', '.join(unpriced)} (inputs.price, or price: in conf/score/model/<name>.yaml): "
                     "tokens, requests and time only, no USD")
    bare = [m.name for m in models if m.usage is None]
    if bare and len(bare) < len(models):
        notes.append(f"no usage recorded in the prediction file of {', '.join(bare)}")
    placed = [m for m in models if m.usage is not None and m.score is not None]
    axis = "usd" if placed and all(m.price is not None for m in placed) else "tokens"
    out_models: dict[str, CostRecord] = {}
    axis_rows: dict[str, torch.Tensor] = {}
    counts = cluster_of = None
    clusters = 0
    if settings is not None and any(m.usage is not None for m in models):
        cluster_of = _cluster_index(models, units, settings)
        clusters = len(set(cluster_of.values()))
        counts = bs.resample_counts(settings.resamples, clusters, settings.seed, settings.scheme).to(device)
    for m in models:
        record: CostRecord = {"tasks_scored": len(m.ids), "price": ct.price_json(m.price),
                                  "judges": _judges_block(m.judges, len(m.ids)), "score": m.score}
        if m.usage is not None:
            parts = ct.quantities(m.usage, m.price)
            record["tasks"] = len(m.usage.ids)
            if counts is not None and cluster_of is not None:
                num, den = ct.cluster_sums(m.usage.ids, cluster_of, clusters, parts)
                rows = ct.resample_rows(counts, num, den)
                blocks = _intervals(rows, num, den, settings) if settings is not None else []
                record["metrics"] = dict(zip(parts, blocks))
                if axis in parts:
                    axis_rows[m.name] = rows[list(parts).index(axis)]
            else:
                record["metrics"] = {k: {"value": v} for k, v in ct.per_task_means(m.usage, m.price).items()}
        out_models[m.name] = record
    frontier = _frontier(placed, out_models, axis, axis_rows, units, cluster_of, clusters, counts, settings)
    return {"models": out_models, "frontier": frontier, "notes": notes,
            "settings": None if settings is None else settings.record(clusters)}


def axis_value(record: CostRecord, axis: str) -> float | None:
    """A model's cost on the frontier's axis (USD per task, or tokens in + out per task); None without it."""
    metrics = record.get("metrics")
    block = metrics.get(axis) if isinstance(metrics, dict) else None
    value = block.get("value") if isinstance(block, dict) else None
    return value if isinstance(value, (int, float)) else None


def _frontier(placed: Sequence[ModelCost], out_models: dict[str, CostRecord], axis: str,
              axis_rows: dict[str, torch.Tensor], units: Sequence[ModelUnits], cluster_of: Mapping[str, int] | None,
              clusters: int, counts: torch.Tensor | None, settings: StatsSettings | None) -> Frontier:
    """The frontier block, and each placed model's ``frontier`` record (point membership, share, call)."""
    names = [m.name for m in placed]
    score = [m.score if m.score is not None else math.nan for m in placed]
    cost = [axis_value(out_models[n], axis) for n in names]
    on = ct.frontier(score, [math.nan if c is None else c for c in cost])
    shares: list[float] = [math.nan] * len(names)
    left_out = None
    if counts is not None and cluster_of is not None and settings is not None and len(names) >= 2:
        by_name = {u.name: u for u in units}
        s_rows = torch.stack([score_rows(by_name[n], cluster_of, clusters, counts) for n in names]).cpu().numpy()
        c_rows = torch.stack([axis_rows[n] for n in names]).cpu().numpy()
        share_array, left_out = ct.frontier_shares(s_rows, c_rows)
        shares = share_array.tolist()
    for name, member, share in zip(names, on, shares):
        call = ct.frontier_call(share, settings.level, _expanded(settings, clusters)) if settings is not None else None
        out_models[name]["frontier"] = {"on": member, "share": None if math.isnan(share) else share, "call": call}
    level = settings.level if settings is not None else None
    tail = ct.frontier_tail(settings.level, _expanded(settings, clusters)) if settings is not None else None
    rule = ("on the frontier when no model has a score >= and a cost <=, one strictly; with statistics, the share "
            "of joint resamples in which it is on it: on when >= 1 - tail / 2, off when <= tail, uncertain between")
    return {"axis": axis, "score": AVERAGE_KEY, "models": names, "rule": rule, "level": level, "tail": tail,
            "resamples_left_out": left_out}


def _expanded(settings: StatsSettings, clusters: int) -> int | None:
    """The clusters the frontier's tail is expanded for (None with stats.correction=none)."""
    return clusters if settings.correction == "expanded" else None


def write_cost(folder: Path, document: CostDocument | None) -> Path | None:
    """Write usage.json into the run's folder (nothing, and NO_USAGE said once, without a document)."""
    if document is None:
        log.info(NO_USAGE)
        return None
    for note in document["notes"]:
        log.info("cost: %s", note)
    atomic_write_json(folder / COST_FILE, document)
    return folder / COST_FILE


def model_prices(names: Sequence[str], own: tuple[str | None, ListPrice | None]) -> dict[str, ListPrice | None]:
    """Each model's price: `own` (the run's model name and price: model=NAME, or inputs.price=... on the command
    line) for its model, else the ``price`` of conf/score/model/<name>.yaml."""
    name, price = own
    return {n: price if n == name and price is not None else ct.shipped_price(n) for n in names}


def score_cost(folder: Path, result: SweepScores, names: Sequence[str], predictions: Sequence[Path],
               joined: Sequence[Joined | None],
               aggregates: Sequence[dict], judge_files: Sequence[Mapping[str, Path]],
               own: tuple[str | None, ListPrice | None], settings: StatsSettings | None,
               device: torch.device | str = "cpu") -> Path | None:
    """The cost step of a scoring run: usage.json in `folder` from the prediction files' usage, the tool logs'
    wall times, the prices and the evaluator files' judge usage (the statistics step's settings, when on, give
    the intervals and the frontier calls); None, said once, when nothing recorded any usage."""
    units = sweep_units(result, list(names), list(joined), list(aggregates))
    records: list[list[object]] = []
    for path in predictions:
        data = read_json(Path(path), "prediction file")
        records.append(data if isinstance(data, list) else [])
    models = model_costs(units, predictions, records, model_prices(names, own), judge_files)
    return write_cost(folder, cost_document(models, units, settings, device))
