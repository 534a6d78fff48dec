"""The writers' and the readers' shapes of stats.json, usage.json and trials.json kept in step: every key a writer
declares the reader declares with the same type (nested blocks included) and the reader declares no other; and a
document the code writes holds exactly the keys its writer's shape declares (the required ones, none undeclared),
every declared key written somewhere."""

from __future__ import annotations

import json
import math
import types
import typing
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest
from test_statistics import _models
from test_trials import record, trial

from engine import cost as ct
from engine.contract import dumps_json
from engine.contract.settings import ListPrice
from engine.reports import records
from engine.stats import AVERAGE_KEY, StatsSettings, bootstrap_stats, threshold_robustness, trial_intervals
from engine.stats.cost import CostDocument, ModelCost, cost_document
from engine.stats.document import SettingsRecord, StatsDocument, Thresholds
from engine.trials import SuccessRule, Trial, trials_document
from engine.trials_document import TrialsDocument

PAIRS = [(StatsDocument, records.Stats), (CostDocument, records.Cost), (TrialsDocument, records.TrialsDoc)]
"""Each document's writer's shape and the reader's."""


def _hints(shape: type) -> dict[str, object]:
    return typing.get_type_hints(shape)


def _is_union(tp: object) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


def shape_drift(writer: object, reader: object, where: str = "") -> list[str]:
    """Where a reader's type departs from its writer's: a key one declares and the other does not, a key the
    reader requires that the writer may leave out, a different type; TypedDicts compared key by key."""
    if writer is reader:
        return []
    if typing.is_typeddict(writer) and typing.is_typeddict(reader):
        w, r = _hints(typing.cast(type, writer)), _hints(typing.cast(type, reader))
        out = [f"{where}.{k}: written ({writer.__name__}), not declared by the reader ({reader.__name__})"
               for k in w if k not in r]
        out += [f"{where}.{k}: declared by the reader ({reader.__name__}), never written ({writer.__name__})"
                for k in r if k not in w]
        out += [f"{where}.{k}: required by the reader ({reader.__name__}), optional in the writer's"
                for k in typing.cast(typing.Any, reader).__required_keys__
                - typing.cast(typing.Any, writer).__required_keys__]
        return out + [d for k in w if k in r for d in shape_drift(w[k], r[k], f"{where}.{k}")]
    if _is_union(writer) and _is_union(reader):
        w_args, r_args = typing.get_args(writer), typing.get_args(reader)
        w_dicts, r_dicts = [a for a in w_args if typing.is_typeddict(a)], [a for a in r_args if typing.is_typeddict(a)]
        plain_w, plain_r = {a for a in w_args if a not in w_dicts}, {a for a in r_args if a not in r_dicts}
        if plain_w != plain_r or len(w_dicts) != len(r_dicts):
            return [f"{where}: written as {writer}, read as {reader}"]
        return [d for a, b in zip(w_dicts, r_dicts) for d in shape_drift(a, b, where)]
    origin = typing.get_origin(writer)
    if origin is not None and origin is typing.get_origin(reader):
        w_args, r_args = typing.get_args(writer), typing.get_args(reader)
        if len(w_args) == len(r_args):
            return [d for a, b in zip(w_args, r_args) for d in shape_drift(a, b, f"{where}[]")]
    return [f"{where}: written as {writer}, read as {reader}"]


@pytest.mark.parametrize(("writer", "reader"), PAIRS, ids=lambda t: t.__name__)
def test_the_reader_declares_what_the_writer_writes(writer: type, reader: type) -> None:
    assert shape_drift(writer, reader, reader.__name__) == []


class _Block(typing.TypedDict):
    value: float
    low: float | None


class _Renamed(typing.TypedDict, total=False):
    value: float
    lower: float | None


class _Retyped(typing.TypedDict, total=False):
    value: float
    low: float


class _Outer(typing.TypedDict):
    metrics: dict[str, _Block]


class _OuterRenamed(typing.TypedDict, total=False):
    metrics: dict[str, _Renamed]


def test_a_renamed_key_is_drift() -> None:
    """The comparison finds a key renamed on either side, deep in a block, and a type changed."""
    assert shape_drift(_Outer, _OuterRenamed) == [
        ".metrics[].low: written (_Block), not declared by the reader (_Renamed)",
        ".metrics[].lower: declared by the reader (_Renamed), never written (_Block)"]
    assert shape_drift(_Block, _Retyped) == [".low: written as float | None, read as <class 'float'>"]


def test_the_recorded_settings_are_the_settings_fields() -> None:
    assert set(_hints(SettingsRecord)) == {f.name for f in fields(StatsSettings)} | {"clusters"}


# --- documents the code writes -------------------------------------------------------------------------------


class Seen:
    """The keys of each TypedDict met in the documents checked."""

    def __init__(self) -> None:
        self.keys: dict[type, set[str]] = {}

    def unwritten(self) -> dict[str, list[str]]:
        """Per shape met, the keys it declares that no document checked wrote."""
        out = {}
        for shape, keys in self.keys.items():
            missing = sorted(set(_hints(shape)) - keys)
            if missing:
                out[shape.__name__] = missing
        return out


def conforms(value: object, tp: object, where: str, seen: Seen) -> list[str]:
    """Where a JSON value departs from a declared type: a missing required key, an undeclared key, a value of
    another type."""
    if typing.is_typeddict(tp):
        shape = typing.cast(typing.Any, tp)
        if not isinstance(value, dict):
            return [f"{where}: {type(value).__name__}, expected an object ({shape.__name__})"]
        hints = _hints(shape)
        out = [f"{where}.{k}: required by {shape.__name__}, not written" for k in shape.__required_keys__
               if k not in value]
        out += [f"{where}.{k}: written, not declared by {shape.__name__}" for k in value if k not in hints]
        seen.keys.setdefault(shape, set()).update(k for k in value if k in hints)
        return out + [d for k, v in value.items() if k in hints for d in conforms(v, hints[k], f"{where}.{k}", seen)]
    if _is_union(tp):
        tries = [conforms(value, arg, where, seen) for arg in typing.get_args(tp)]
        return [] if any(not t for t in tries) else min(tries, key=len)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where}: {type(value).__name__}, expected an object"]
        return [d for k, v in value.items() for d in conforms(v, args[1], f"{where}[{k!r}]", seen)]
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: {type(value).__name__}, expected a list"]
        return [d for i, v in enumerate(value) for d in conforms(v, args[0], f"{where}[{i}]", seen)]
    kinds = {type(None): (type(None),), bool: (bool,), int: (int,), float: (int, float), str: (str,)}
    ok = isinstance(value, kinds[typing.cast(type, tp)]) and (tp is bool or not isinstance(value, bool))
    return [] if ok else [f"{where}: {value!r}, expected {getattr(tp, '__name__', tp)}"]


def as_written(document: object) -> object:
    """A document as its JSON file reads back."""
    return json.loads(dumps_json(document, indent=None))


SETTINGS = StatsSettings(resamples=200, seed=3, min_clusters=2)


def _stats_documents() -> list[object]:
    """stats.json of three models with robustness and trial rates; two models of one family (no interval, no
    test)."""
    models = _models()
    document = bootstrap_stats(models, SETTINGS)
    document["robustness"] = threshold_robustness(document, (0.5, 0.7), [((0.4, 0.7), _models(seed=1))], SETTINGS)
    counts = [(4, c % 5) for c in range(10)]
    document["trials"] = {"m0": trial_intervals(counts, [f"f{i % 5}" for i in range(10)], SETTINGS),
                          "m1": trial_intervals(counts[:1], ["f0"], SETTINGS)}
    few = bootstrap_stats(_models(families=1)[:2], StatsSettings(resamples=50, min_clusters=2))
    return [as_written(document), as_written(few)]


def _cost_documents(tmp_path: Path) -> list[object]:
    """usage.json with and without statistics: a priced model with wall times, an unpriced one, one without
    usage, the judges' usage of an evaluator file (one judge priced, one not)."""
    units = _models()
    for unit in units:
        unit.published[AVERAGE_KEY] = float(np.mean([unit.published[k] for k in ("recall", "precision")]))
    judged = tmp_path / "m_taskcompletion.json"
    judged.write_text(json.dumps({"meta": {"usage": {
        "a": {"model": "j1", "requests": 3, "cached": 1, "prompt_tokens": 90, "completion_tokens": 9, "cost_usd": 0.1},
        "b": {"model": "j2", "requests": 2, "prompt_tokens": 40, "completion_tokens": 4}}}}))
    rng = np.random.default_rng(0)
    costs = []
    for i, unit in enumerate(units):
        n = len(unit.ids)
        wall = rng.random(n) * 30
        wall[::3] = math.nan
        usage = None if i == 2 else ct.TaskUsage(list(unit.ids), rng.integers(100, 900, n).astype(float),
                                                 rng.integers(10, 90, n).astype(float),
                                                 rng.integers(1, 5, n).astype(float), wall)
        price = ListPrice(1.25, 10.0, "2025-10-15", "list price") if i == 0 else None
        costs.append(ModelCost(unit.name, list(unit.ids), list(unit.clusters), usage, price,
                               ct.judge_usage({"m3_judges": judged}), unit.published[AVERAGE_KEY]))
    made = [cost_document(costs, units, settings) for settings in (SETTINGS, None)]
    made.append(cost_document(costs[:1], units[:1], StatsSettings(resamples=50, min_clusters=99)))
    return [as_written(d) for d in made]


def _trials_documents() -> list[object]:
    """A model's trials document with both peer conventions: a finished trial, one with an agent failure and a
    lost task, a missing trial file; and one with every slot there (MCPMark's figures, not its refusal)."""
    rule = SuccessRule()
    full = [trial("m_trial1.json", [record("a"), record("b")], {"a": 0.9, "b": 0.2}),
            trial("m_trial2.json", [record("a"), record("b", error={"kind": "agent", "reason": "bad reply"})],
                  {"a": 1.0})]
    lost = [*full, trial("m_trial3.json", [record("a")], {"a": 0.4}), Trial(Path("m_trial4.json"), None, {})]
    aggregates = [{"recall": 0.5, "num_ids": 2}, {"recall": 0.7, "num_ids": 2}]
    return [as_written(trials_document(["a", "b"], items, rule, aggregates, ["task_completion"],
                                       conventions=("tau2", "mcpmark"))) for items in (full, lost)]


UNWRITTEN = {"PairBlock": ["implied"]}
"""Keys the small documents here never write: a pair separable only through a third model (implied) needs a
chain a > c > b of separable pairs around an untested one."""


def test_written_documents_hold_exactly_their_declared_keys(tmp_path: Path) -> None:
    seen = Seen()
    problems = [d for doc in _stats_documents() for d in conforms(doc, StatsDocument, "stats.json", seen)]
    problems += [d for doc in _cost_documents(tmp_path) for d in conforms(doc, CostDocument, "usage.json", seen)]
    problems += [d for doc in _trials_documents() for d in conforms(doc, TrialsDocument, "trials.json[model]", seen)]
    assert problems == []
    assert seen.unwritten() == UNWRITTEN


def test_a_written_document_with_a_renamed_key_does_not_conform() -> None:
    """The check finds a key the document lacks, one it has undeclared, and a value of another type."""
    seen = Seen()
    good = {"tau_weak": 0.5, "tau_strong": 0.7}
    assert conforms(good, Thresholds, "default", seen) == []
    assert conforms({"tau_weak": 0.5, "strong": 0.7}, Thresholds, "default", seen) == [
        "default.tau_strong: required by Thresholds, not written",
        "default.strong: written, not declared by Thresholds"]
    assert conforms({"tau_weak": 0.5, "tau_strong": None}, Thresholds, "default", seen) == [
        "default.tau_strong: None, expected float"]
