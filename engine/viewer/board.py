"""The site's leaderboard (`board`): the reports' leaderboard (Table 2) of a run with the extra aggregate
columns (tool use and the like) and, with the run's stats.json, each row's intervals, rank and tie."""

from __future__ import annotations

from typing import TypedDict

from engine.contract import JsonObject, JsonValue, is_number
from engine.metricspec import AVERAGE, BY_KEY, label_of
from engine.reports.intervals import read_stats
from engine.reports.read import ModelResult
from engine.reports.tables import intervals_table, leaderboard_table
from engine.stats import AVERAGE_KEY, STATS_FILE
from engine.viewer.data import COUNT_KEYS, Run
from engine.viewer.text import number_or_none


class _Column(TypedDict):
    key: str
    label: str
    path: list[str]


class ExtraColumn(_Column, total=False):
    """An aggregate key beyond the metric table's: its label, its path in the aggregate, whether a {mean, std}."""

    std: bool


class BoardColumn(TypedDict):
    """An extra column as the site's leaderboard names it."""

    key: str
    label: str
    std: bool


class _BoardRow(TypedDict):
    model: str
    slug: str
    cells: list[object]
    extra: list[object]
    tasks: JsonValue


class BoardRow(_BoardRow, total=False):
    """A model's row of the site's leaderboard; with stats.json its intervals, reasons, rank and tie."""

    intervals: list[list[float | None] | None]
    reasons: list[str | None]
    rank: list[int | None] | None
    tied: bool


class _Board(TypedDict):
    columns: list[str]
    average: str
    note: str
    extra: list[BoardColumn]
    rows: list[BoardRow]


class Board(_Board, total=False):
    """The site's leaderboard (`board`); with stats.json the intervals' note (`stats`)."""

    stats: str


def _extra_columns(results: list[ModelResult]) -> list[ExtraColumn]:
    """Columns for aggregate keys beyond the metric table's: numbers, {mean, std} and objects of numbers."""
    columns: dict[str, ExtraColumn] = {}
    for r in results:
        for key, value in r.aggregate.items():
            if key in BY_KEY or key in COUNT_KEYS:
                continue
            if is_number(value):
                columns.setdefault(key, {"key": key, "label": label_of(key), "path": [key]})
            elif isinstance(value, dict) and is_number(value.get("mean")):
                columns.setdefault(key, {"key": key, "label": label_of(key), "path": [key], "std": True})
            elif isinstance(value, dict):
                for sub, inner in value.items():
                    if is_number(inner) or (isinstance(inner, dict) and is_number(inner.get("mean"))):
                        full = f"{key}.{sub}"
                        label = label_of(full) if full in BY_KEY else f"{label_of(key)}: {sub}"
                        columns.setdefault(full, {"key": full, "label": label, "path": [key, sub],
                                                  "std": isinstance(inner, dict)})
    return list(columns.values())


def _extra_cell(aggregate: JsonObject, column: ExtraColumn) -> list[float | None] | float | None:
    value: JsonValue = aggregate
    for part in column["path"]:
        value = value.get(part) if isinstance(value, dict) else None
    if column.get("std"):
        return [number_or_none(value.get("mean")), number_or_none(value.get("std"))] if isinstance(value, dict) \
            else None
    return number_or_none(value)


def board(run: Run, slugs: dict[str, str]) -> Board:
    """The leaderboard as the reports compute it (Table 2), plus the extra aggregate columns; with the run's
    stats.json, each row's [low, high] per column, the extra ones (tool use) included (null where it has none),
    the reason a value has no interval, its rank interval and whether it is tied with the top, and the
    intervals' note."""
    table = leaderboard_table(run.results)
    extra = _extra_columns(run.results)
    by_name = {r.name: r for r in run.results}
    stats = read_stats(run.folder / STATS_FILE)
    rows: list[BoardRow] = []
    for name, row in zip(table.names(), table.rows):
        result = by_name[name]
        rows.append({"model": name, "slug": slugs[name], "cells": list(row[1:]),
                     "extra": [_extra_cell(result.aggregate, c) for c in extra],
                     "tasks": result.aggregate.get("num_ids")})
    out: Board = {"columns": table.columns[1:], "average": AVERAGE, "note": table.note,
                  "extra": [{"key": c["key"], "label": c["label"], "std": bool(c.get("std"))} for c in extra],
                  "rows": rows}
    if stats is not None:
        key_of = {label: key for key, label in stats.get("metrics", {}).items()}
        tied = set(stats.get("tied_with_top", {}).get(AVERAGE_KEY, []))
        for model_row in rows:
            record = stats["models"].get(model_row["model"], {})
            blocks = [record.get("metrics", {}).get(key_of.get(label, "")) for label in table.columns[1:]]
            blocks += [record.get("metrics", {}).get(c["key"]) for c in extra]   # tool use and the other extras
            model_row["intervals"] = [[number_or_none(b.get("low")), number_or_none(b.get("high"))]
                                      if isinstance(b, dict) else None for b in blocks]
            model_row["reasons"] = [b.get("reason") if b is not None else None for b in blocks]
            model_row["rank"] = [record.get("rank"), record.get("rank_low"), record.get("rank_high")] \
                if "rank" in record else None
            model_row["tied"] = model_row["model"] in tied
        out["stats"] = intervals_table(table, stats).note
    return out
