"""What a model's run cost per task: tokens in and out, model requests and wall time as the rollout recorded them,
dollars at the model's price, the judges' usage, and which models sit on the score-cost Pareto frontier.

The rollout writes each task's ``usage`` (``prompt_tokens``, ``completion_tokens``, ``total_tokens``, ``requests``)
into its prediction record, and the task's wall time (``wall_s``) into the task's tool log
(``<results_dir>/rollout/<model>/tool_logs/<task>.json``, rollout/README.md). A per-task figure is a ratio of sums
over the scored ids that have a usage record (num = the id's value, den = 1), so the statistics step's cluster
bootstrap (docs/statistics.md) resamples it as it does every other aggregate, on the same resample matrix.

A model is on the frontier when no other model has a higher or equal Average Score at a lower or equal cost, one
of the two strictly. Its membership is called from the joint resamples (score and cost of every model on the same
row of W): the share of resamples in which it is on the frontier; ``on`` when that share is at least
1 - (1 - level) / 2, ``off`` when at most (1 - level) / 2, ``uncertain`` between (docs/statistics.md, "Cost").
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TypedDict, cast

import numpy as np
import torch

from engine.contract import InputError, is_number, read_json, safe_name
from engine.contract.settings import ListPrice, SettingError
from kernels import bootstrap as bs

QUANTITIES = ("tokens_in", "tokens_out", "tokens", "requests", "wall_s", "usd")
"""The per-task quantities of a model's cost, in table order."""

LABELS = {"tokens_in": "Tokens in", "tokens_out": "Tokens out", "tokens": "Tokens", "requests": "Requests",
          "wall_s": "Wall s", "usd": "USD"}

def read_price(value: object, where: str, file: str | Path = "config") -> ListPrice | None:
    """The price of a model config's ``price`` node (None when it is null); InputError naming the file and the
    field when it is no mapping, has a key of its own, a rate is not a number >= 0 or ``as_of`` is no YYYY-MM-DD
    date (engine.contract.settings.ListPrice's rules)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InputError(file, "must be {input_usd_per_mtok, output_usd_per_mtok, as_of, source} or null",
                         field=where)
    unknown = set(value) - {f.name for f in fields(ListPrice)}
    if unknown:
        raise InputError(file, f"unknown key(s) {', '.join(sorted(map(str, unknown)))}", field=where)
    as_of = value.get("as_of")
    try:
        price = ListPrice(**{**value, "as_of": as_of.isoformat() if isinstance(as_of, datetime.date) else as_of})
    except SettingError as exc:
        raise InputError(file, f"{exc.problem}, got {str(exc.value)[:40]!r}", field=f"{where}.{exc.key}") from None
    if price.source is not None and not isinstance(price.source, str):
        raise InputError(file, "must be a text (where the price was read) or null", field=f"{where}.source")
    return price


class PriceRecord(TypedDict):
    """A model's price as usage.json records it (a given ListPrice: both rates and the day are set)."""

    input_usd_per_mtok: float
    output_usd_per_mtok: float
    as_of: str
    source: str | None


def price_json(price: ListPrice | None) -> PriceRecord | None:
    """A price as usage.json records it."""
    return None if price is None else cast(PriceRecord, asdict(price))


@dataclass
class TaskUsage:
    """A model's per-id usage over the scored ids with a usage record, in id order: tokens in and out, requests,
    and wall seconds (NaN where the id's tool log has none)."""

    ids: list[str]
    tokens_in: np.ndarray
    tokens_out: np.ndarray
    requests: np.ndarray
    wall_s: np.ndarray


def _count(path: Path, usage: Mapping[str, object], key: str, task: str) -> int:
    value = usage.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(path, f"must be an integer >= 0, got {str(value)[:40]!r}", task_id=task, field=f"usage.{key}")
    return value


def read_usage(path: Path, records: Sequence[object], scored: Sequence[str],
               wall: Mapping[str, float] | None = None) -> TaskUsage | None:
    """The usage of a prediction file's records (its last record of each id) on the `scored` ids, checked;
    None when no scored record has one. `wall`: id -> wall seconds (from the tool logs)."""
    last: dict[str, Mapping[str, object]] = {}
    for record in records:
        if isinstance(record, Mapping) and isinstance(record.get("id"), str) and "usage" in record:
            last[record["id"]] = record
    ids, rows = [], []
    for task in scored:
        record = last.get(task)
        if record is None:
            continue
        usage = record["usage"]
        if not isinstance(usage, Mapping):
            raise InputError(path, "must be an object of token counts", task_id=task, field="usage")
        rows.append((_count(path, usage, "prompt_tokens", task), _count(path, usage, "completion_tokens", task),
                     _count(path, usage, "requests", task)))
        ids.append(task)
    if not ids:
        return None
    counts = np.array(rows, dtype=np.float64).reshape(-1, 3)
    seconds = np.array([(wall or {}).get(i, math.nan) for i in ids], dtype=np.float64)
    return TaskUsage(ids, counts[:, 0], counts[:, 1], counts[:, 2], seconds)


def dollars(tokens_in: np.ndarray, tokens_out: np.ndarray, price: ListPrice) -> np.ndarray:
    """Each task's cost in USD at `price` (vectorized)."""
    rate_in, rate_out = price.rates()
    return (tokens_in * rate_in + tokens_out * rate_out) / 1e6


def quantities(usage: TaskUsage, price: ListPrice | None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per quantity the per-id numerator and denominator of its per-task ratio (den 1 where the id has the value;
    no ``wall_s`` without any wall time, no ``usd`` without a price)."""
    ones = np.ones(len(usage.ids))
    out = {"tokens_in": (usage.tokens_in, ones), "tokens_out": (usage.tokens_out, ones),
           "tokens": (usage.tokens_in + usage.tokens_out, ones), "requests": (usage.requests, ones)}
    timed = ~np.isnan(usage.wall_s)
    if timed.any():
        out["wall_s"] = (np.where(timed, usage.wall_s, 0.0), timed.astype(np.float64))
    if price is not None:
        out["usd"] = (dollars(usage.tokens_in, usage.tokens_out, price), ones)
    return out


def per_task_means(usage: TaskUsage, price: ListPrice | None) -> dict[str, float]:
    """Each quantity's mean per task (the point values of the cost table)."""
    return {key: float(num.sum() / den.sum()) for key, (num, den) in quantities(usage, price).items()}


class _Usage(TypedDict, total=False):
    prompt_tokens: int
    completion_tokens: int
    requests: int


class UsageRecord(TypedDict):
    """What per_task_means_reference reads of a record: its id and its usage (token and request counts)."""

    id: str
    usage: _Usage


def per_task_means_reference(records: Sequence[UsageRecord], scored: Sequence[str],
                             wall: Mapping[str, float], price: ListPrice | None) -> dict[str, float]:
    """The same means as per_task_means, one task at a time in plain Python (the reference the tests hold the
    vectorized path to)."""
    last = {r["id"]: r for r in records if "usage" in r}
    totals: dict[str, float] = {}
    counts: dict[str, int] = {}
    for task in scored:
        if task not in last:
            continue
        usage = last[task]["usage"]
        values: dict[str, float] = {"tokens_in": usage.get("prompt_tokens", 0),
                                    "tokens_out": usage.get("completion_tokens", 0),
                                    "requests": usage.get("requests", 0)}
        values["tokens"] = values["tokens_in"] + values["tokens_out"]
        if task in wall:
            values["wall_s"] = wall[task]
        if price is not None:
            rate_in, rate_out = price.rates()
            values["usd"] = (values["tokens_in"] * rate_in + values["tokens_out"] * rate_out) / 1e6
        for key, value in values.items():
            totals[key] = totals.get(key, 0.0) + value
            counts[key] = counts.get(key, 0) + 1
    return {key: totals[key] / counts[key] for key in totals}


def cluster_sums(ids: Sequence[str], cluster_of: Mapping[str, int], clusters: int,
                 parts: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The per-cluster sums (C x K) of each quantity's numerator and denominator, quantities in `parts` order."""
    where = np.array([cluster_of[i] for i in ids], dtype=np.int64)
    num = np.zeros((clusters, len(parts)))
    den = np.zeros((clusters, len(parts)))
    for q, (n, d) in enumerate(parts.values()):
        np.add.at(num[:, q], where, n)
        np.add.at(den[:, q], where, d)
    return num, den


def resample_rows(counts: torch.Tensor, num: np.ndarray, den: np.ndarray) -> torch.Tensor:
    """Every quantity's value at each resample (K x B) from per-cluster sums (C x K): sum num / sum den over the
    drawn clusters, NaN where the drawn clusters have no denominator."""
    weights = counts.to(torch.float64)
    as_t = lambda a: torch.as_tensor(a, dtype=torch.float64, device=weights.device)  # noqa: E731
    return bs.ratios(weights, as_t(num), as_t(den))


def dominated(score: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """Whether each model is dominated (M, or M x B for resamples along the last axis): another model has a
    score at least as high at a cost at most as high, one of the two strictly. A NaN is never dominated nor
    dominates."""
    s_i, s_j = score[:, None], score[None, :]
    c_i, c_j = cost[:, None], cost[None, :]
    with np.errstate(invalid="ignore"):
        beats = (s_j >= s_i) & (c_j <= c_i) & ((s_j > s_i) | (c_j < c_i))
    return np.asarray(beats.any(axis=1))


def frontier(score: Sequence[float], cost: Sequence[float]) -> list[bool]:
    """Whether each model is on the Pareto frontier of its point values (a model without both values: False)."""
    s, c = np.asarray(score, dtype=np.float64), np.asarray(cost, dtype=np.float64)
    known = ~(np.isnan(s) | np.isnan(c))
    return [bool(k and not d) for k, d in zip(known, dominated(s, c))]


def frontier_shares(score_rows: np.ndarray, cost_rows: np.ndarray) -> tuple[np.ndarray, int]:
    """The share of joint resamples (M x B rows of the same W) in which each model is on the frontier, over the
    resamples where every model has both values; and how many resamples were left out."""
    complete = ~(np.isnan(score_rows) | np.isnan(cost_rows)).any(axis=0)
    kept = int(complete.sum())
    if kept == 0:
        return np.full(score_rows.shape[0], math.nan), score_rows.shape[1]
    on = ~dominated(score_rows[:, complete], cost_rows[:, complete])
    return on.mean(axis=1), score_rows.shape[1] - kept


ON, OFF, UNCERTAIN = "on", "off", "uncertain"


def frontier_tail(level: float, clusters: int | None = None) -> float:
    """The share of resamples below which a model is off the frontier with confidence (and above 1 less which it is
    on): (1 - level) / 2, or with `clusters` the expanded level Phi(-sqrt(C/(C-1)) t_{C-1, (1+level)/2}) the
    percentile intervals use (bs.interval_levels), which holds the false calls near their level at 10 families."""
    if clusters is None:
        return (1 - level) / 2
    return float(bs.interval_levels(level, torch.tensor([float(clusters)]))[0, 0])


def frontier_call(share: float, level: float, clusters: int | None = None) -> str | None:
    """A model's frontier membership from its share of resamples on the frontier: on when at least 1 - tail / 2
    (a model is on by beating each other one on score or on cost, two ways: the tail is split between them), off
    when at most tail (frontier_tail), uncertain between (None without a share)."""
    if math.isnan(share):
        return None
    tail = frontier_tail(level, clusters)
    if share >= 1 - tail / 2:
        return ON
    if share <= tail:
        return OFF
    return UNCERTAIN


_PREDICTIONS = re.compile(r"^(?P<model>.+)_test_mcp_fuzzy(?:_trial(?P<trial>\d+))?$")


def tool_log_folder(predictions: Path) -> Path | None:
    """Where the rollout that wrote a prediction file put its tool logs: <results_dir>/rollout/<model>/tool_logs
    (trial<i>/ for a trial file) for <results_dir>/<model>_test_mcp_fuzzy[_trial<i>].json; None for a file of
    another name or when that folder is not there."""
    match = _PREDICTIONS.match(Path(predictions).stem)
    if match is None:
        return None
    folder = Path(predictions).parent / "rollout" / match["model"] / "tool_logs"
    if match["trial"]:
        folder = folder / f"trial{match['trial']}"
    return folder if folder.is_dir() else None


def read_wall_times(folder: Path | None, ids: Sequence[str]) -> dict[str, float]:
    """id -> the task's wall seconds (``wall_s``) from its tool log in `folder` (ids without one, or with an
    unreadable log, are left out: a log of an older rollout has none)."""
    if folder is None:
        return {}
    out = {}
    for task in ids:
        path = folder / f"{safe_name(task)}.json"
        if not path.is_file():
            continue
        try:
            log = read_json(path, "tool log")
        except InputError:
            continue
        seconds: object = log.get("wall_s") if isinstance(log, dict) and log.get("id") == task else None
        if is_number(seconds) and seconds >= 0:
            out[task] = float(seconds)
    return out


JUDGE_COUNTS = ("requests", "cached", "prompt_tokens", "completion_tokens")


class JudgeUsage(TypedDict):
    """The judges' usage summed over a model's evaluator files: the JUDGE_COUNTS, USD (None when a judge that
    sent requests has no price) and the judge models."""

    requests: int
    cached: int
    prompt_tokens: int
    completion_tokens: int
    usd: float | None
    models: list[str]


def judge_usage(files: Mapping[str, Path]) -> JudgeUsage | None:
    """The judges' usage recorded in a prediction file's evaluator files (each file's ``meta.usage``: judge ->
    requests, cached, prompt and completion tokens, cost_usd, added up over the runs that made the file), summed
    over files and judges; ``usd`` None when a judge that sent requests has no price. None without any usage."""
    total: dict[str, int] = dict.fromkeys(JUDGE_COUNTS, 0)
    usd: float | None = 0.0
    models: set[str] = set()
    found = False
    for path in files.values():
        try:
            data = read_json(Path(path), "evaluator file")
        except InputError:
            continue
        usage = (data.get("meta") or {}).get("usage") if isinstance(data, dict) else None
        if not isinstance(usage, dict):
            continue
        for block in usage.values():
            if not isinstance(block, dict):
                continue
            found = True
            for key in JUDGE_COUNTS:
                value = block.get(key)
                total[key] += value if isinstance(value, int) and not isinstance(value, bool) else 0
            cost: object = block.get("cost_usd")
            if is_number(cost) and usd is not None:
                usd += float(cost)
            elif block.get("requests"):
                usd = None
            if isinstance(block.get("model"), str):
                models.add(block["model"])
    return cast(JudgeUsage, {**total, "usd": usd, "models": [*sorted(models)]}) if found else None


SHIPPED_MODELS = Path(__file__).resolve().parents[1] / "conf" / "score" / "model"
"""The score app's model configs, whose ``price`` a leaderboard's models are priced by."""


def shipped_price(name: str, folder: Path = SHIPPED_MODELS) -> ListPrice | None:
    """The ``price`` of the model config <folder>/<name>.yaml (None without such a config or price)."""
    import yaml

    path = folder / f"{name}.yaml"
    if not path.is_file():
        return None
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise InputError(path, f"cannot read the model config: {str(exc).splitlines()[0]}") from None
    return read_price(data.get("price") if isinstance(data, dict) else None, "price", path)
