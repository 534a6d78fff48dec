"""Reading a finished scoring run: its results_eval.json files and threshold grid, checked."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path

from engine.contract import InputError, JsonObject, JsonValue, is_number, read_json
from engine.metricspec import CORE_SOURCES, METRICS, Metric, leaderboard_columns, metric_value

log = logging.getLogger(__name__)

RESULTS_FILE = "results_eval.json"
GRID_FILE = "threshold_grid.json"


@dataclass(frozen=True)
class ModelResult:
    """One scored prediction file of a run: its aggregate and per-family aggregates."""

    name: str
    path: Path
    aggregate: JsonObject
    by_type: dict[str, JsonObject]
    meta: JsonObject = field(default_factory=dict)


def number(value: object) -> int | float | None:
    """value when it is a number (`is_number`: a checked block's metrics are), else None."""
    return value if isinstance(value, (int, float)) and is_number(value) else None


def block_of(value: JsonValue) -> JsonObject:
    """value when it is a JSON object, else an empty one (an absent or null block reads as empty)."""
    return value if isinstance(value, dict) else {}


def real(value: object) -> float:
    """A checked number as a float (ValueError for anything else: the block or row was not checked)."""
    found = number(value)
    if found is None:
        raise ValueError(f"expected a number, got {value!r}")
    return float(found)


def _check_number(path: Path, block: JsonObject, key: str, where: str) -> None:
    if not is_number(block[key]):
        raise InputError(path, f"expected a number, got {block[key]!r}", field=f"{where}.{key}")


def _range(metric: Metric) -> str:
    """What a metric's values must be, in words."""
    if metric.low == 0.0 and metric.high == 1.0:
        return "a score in [0, 1]"
    if metric.low == 0.0 and metric.high is None and metric.aggregation == "sum":
        return "a count >= 0"
    if metric.high is None:
        return f"a number >= {metric.low:g}"
    if metric.low is None:
        return f"a number <= {metric.high:g}"
    return f"a number in [{metric.low:g}, {metric.high:g}]"


def _check_block(path: Path, block: JsonValue, where: str, aligned: bool = True) -> JsonObject:
    """block, checked: InputError unless it holds every metric the tables read, as numbers (the alignment
    metrics only when `aligned`: a result scored without reference has none)."""
    if not isinstance(block, dict):
        raise InputError(path, "expected an object", field=where)
    sources = ("alignment", "budget") if aligned else ("budget",)
    for column in (c for source in sources for c in leaderboard_columns(source)):
        key = next((k for k in column.keys if k in block), None)
        if key is None:
            expected = " or ".join(repr(k) for k in column.keys)
            raise InputError(path, f"missing (expected {expected})", field=f"{where}.{column.keys[-1]}")
        _check_number(path, block, key, where)
    for metric in METRICS:
        value = metric_value(block, metric.key)
        if metric.source in CORE_SOURCES or value is None:
            continue
        if not isinstance(value, (int, float)) or not is_number(value):
            raise InputError(path, f"expected a number, got {value!r}", field=f"{where}.{metric.key}")
        if (metric.low is not None and value < metric.low) or (metric.high is not None and value > metric.high):
            raise InputError(path, f"expected {_range(metric)}, got {value!r}", field=f"{where}.{metric.key}")
    return block


def load_result(path: Path, name: str | None = None) -> ModelResult:
    """Read and check one results_eval.json.

    The model is named by meta.model, else `name`, else the stem of meta.predictions, else
    the file's folder.
    """
    data: JsonValue = read_json(path, "results file")
    if not isinstance(data, dict):
        raise InputError(path, "expected a JSON object with 'aggregate', 'by_type' and 'meta'")
    if "aggregate" not in data:
        raise InputError(path, "missing", field="aggregate")
    # a run without reference trajectories (engine.unreferenced) says so with meta.gt null
    meta = data.get("meta", {})
    aligned = not (isinstance(meta, dict) and "gt" in meta and meta["gt"] is None)
    aggregate = _check_block(path, data["aggregate"], "aggregate", aligned)
    found = data.get("by_type", {})
    if not isinstance(found, dict):
        raise InputError(path, "expected an object of per-family aggregates", field="by_type")
    by_type = {family: _check_block(path, block, f"by_type.{family}", aligned) for family, block in found.items()}
    if not isinstance(meta, dict):
        raise InputError(path, "expected an object", field="meta")
    model = meta.get("model")
    if model is not None and not (isinstance(model, str) and model):
        raise InputError(path, f"expected a non-empty string, got {model!r}", field="meta.model")
    predictions = meta.get("predictions")
    stem = Path(predictions).stem if isinstance(predictions, str) and predictions else None
    return ModelResult(name=model or name or stem or Path(path).parent.name, path=Path(path),
                       aggregate=aggregate, by_type=by_type, meta=meta)


def collect_run(run_dir: Path) -> list[ModelResult]:
    """Every results_eval.json in run_dir or up to two folder levels below it, sorted by model name.

    A result is named by its meta.model, else by its folder (or, for the run folder itself,
    by the stem of meta.predictions); names that collide get their path relative to run_dir.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise InputError(run_dir, "not a folder")
    paths = sorted({*run_dir.glob(RESULTS_FILE), *run_dir.glob(f"*/{RESULTS_FILE}"),
                    *run_dir.glob(f"*/*/{RESULTS_FILE}")})
    if not paths:
        raise InputError(run_dir, f"no {RESULTS_FILE} found in the folder or two levels below it")
    results = [load_result(path, None if path.parent == run_dir else path.parent.name) for path in paths]
    profiles = {r.meta.get("profile") for r in results} - {None}
    if len(profiles) > 1:
        log.warning("%s mixes metrics profiles (%s): Argument Similarity is not comparable across them",
                    run_dir, ", ".join(sorted(map(str, profiles))))
    counts: dict[str, int] = {}
    for r in results:
        counts[r.name] = counts.get(r.name, 0) + 1
    named = [r if counts[r.name] == 1 else replace(r, name=_distinct_name(r, run_dir)) for r in results]
    return sorted(named, key=lambda r: r.name)


def _distinct_name(result: ModelResult, run_dir: Path) -> str:
    """A name for a result whose model name is shared: its folder path in the run."""
    rel = result.path.parent.relative_to(run_dir)
    return rel.as_posix() if rel.name == result.name else f"{result.name} [{rel.as_posix()}]"


def load_threshold_grid(path: Path) -> list[JsonObject]:
    """Rows of a threshold_grid.json, checked: model (text), tau_weak, tau_strong and metrics (numbers)."""
    found: JsonValue = read_json(path, "threshold grid")
    if not isinstance(found, list):
        raise InputError(path, "expected a list of rows {model, tau_weak, tau_strong, metrics...}")
    rows: list[JsonObject] = []
    for i, row in enumerate(found):
        if not isinstance(row, dict):
            raise InputError(path, "expected an object", field=f"[{i}]")
        if not isinstance(row.get("model"), str):
            raise InputError(path, f"expected a model name, got {row.get('model')!r}", field=f"[{i}].model")
        for key in ("tau_weak", "tau_strong"):
            if not is_number(row.get(key)):
                raise InputError(path, f"expected a number, got {row.get(key)!r}", field=f"[{i}].{key}")
        for key, value in row.items():
            if key != "model" and value is not None and not is_number(value):
                raise InputError(path, f"expected a number, got {value!r}", field=f"[{i}].{key}")
        rows.append(row)
    return rows
