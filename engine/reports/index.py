"""The run index: one folder's index.json listing every scoring run with its settings and headline.

Each score run appends its entry (run folder, time, models, compared settings, Average Score per
model); the report app prints it (`report.py --list`, one row per run) and the viewer lists it
(engine.viewer.runs: runs.html, or served as runs land). Appends from concurrent
runs are serialised by a lock file beside the index (waited on for at most `LOCK_WAIT_S`), and the
index is replaced atomically. An entry that is not one the index writes (a hand edit) is skipped with
a warning naming it, and kept in the file as it is.
"""

from __future__ import annotations

import json
import logging
import numbers
import os
import time
from pathlib import Path
from typing import TypedDict, cast

from filelock import FileLock, Timeout

from engine.contract import InputError, JsonValue, atomic_write_json, read_json, shown
from engine.metricspec import AVERAGE
from engine.reports.groups import COMPARED, group_results, settings_digest
from engine.reports.read import collect_run, number
from engine.reports.tables import Table, leaderboard_table

INDEX_FILE = "index.json"
LOCK_FILE = ".index.lock"
SITE = "viewer/index.html"
LOCK_WAIT_S = 60.0
"""How long a run waits for the index's lock (another run adding itself takes milliseconds)."""

log = logging.getLogger(__name__)


class _Run(TypedDict):
    run: str


class IndexEntry(_Run, total=False):
    """One run of index.json (`run_entry` writes every key; a hand-edited entry may lack the others, and
    `entry_problem` says when one is not such an entry)."""

    time: str | None
    models: list[str] | None
    settings: dict[str, object] | None
    average_score: dict[str, float | None] | None


class IndexBusy(InputError):
    """The index's lock stayed held for LOCK_WAIT_S: the run is not added."""


def run_entry(run_dir: Path) -> IndexEntry:
    """The index entry of a finished scoring run: its folder, the time, its models with their Average
    Score, and its compared settings (engine.reports.groups)."""
    run_dir = Path(run_dir).resolve()
    results = collect_run(run_dir)
    board = leaderboard_table(results)
    scores = dict(zip(board.names(), board.column(AVERAGE))) if AVERAGE in board.columns else {}
    settings = group_results(results, run_dir)[0].settings
    return {"run": str(run_dir), "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "models": [r.name for r in results], "settings": settings,
            "average_score": {r.name: number(scores.get(r.name)) for r in results}}


def entry_problem(entry: object) -> str | None:
    """Why an index entry is not one `run_entry` writes (None when it is): an object with a 'run' folder,
    'models' a list of names, 'time' text, 'settings' an object, 'average_score' an object of numbers."""
    if not isinstance(entry, dict):
        return f"not an object ({type(entry).__name__})"
    if not isinstance(entry.get("run"), str) or not entry["run"]:
        return "no 'run' folder"
    models = entry.get("models")
    if models is not None and (not isinstance(models, list) or not all(isinstance(m, str) for m in models)):
        return f"'models' must be a list of model names, got {str(models)[:60]}"
    if entry.get("time") is not None and not isinstance(entry["time"], str):
        return "'time' must be text"
    for key in ("settings", "average_score"):
        if entry.get(key) is not None and not isinstance(entry[key], dict):
            return f"'{key}' must be an object"
    scores = entry.get("average_score") or {}
    if not all(v is None or (isinstance(v, numbers.Real) and not isinstance(v, bool)) for v in scores.values()):
        return "'average_score' must map each model to a number or null"
    return None


def _entries(path: Path) -> list[JsonValue]:
    """The list index.json holds (none when there is no index), its entries as they are."""
    if not path.is_file():
        return []
    entries: JsonValue = read_json(path, "run index")
    if not isinstance(entries, list):
        raise InputError(path, "expected a list of run entries")
    return entries


def read_index(index_dir: Path) -> list[IndexEntry]:
    """The entries of index_dir/index.json (none when there is no index; InputError when it is not a list);
    an entry that is not one the index writes (entry_problem) is skipped with a warning naming it."""
    path = Path(index_dir) / INDEX_FILE
    good: list[IndexEntry] = []
    for i, entry in enumerate(_entries(path)):
        problem = entry_problem(entry)
        if problem is None:
            good.append(cast(IndexEntry, entry))  # entry_problem checked every key of the shape
        else:
            log.warning("%s: entry [%d] skipped: %s", path, i, problem)
    return good


def append_run(index_dir: Path, entry: IndexEntry) -> Path:
    """Add (or replace, for the same run folder) one entry of index_dir/index.json, keeping the others as
    they are (those it cannot read too); returns its path. IndexBusy when the index's lock stays held for
    LOCK_WAIT_S."""
    index_dir = Path(index_dir)
    index_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(index_dir / LOCK_FILE))
    try:
        lock.acquire(timeout=LOCK_WAIT_S)
    except Timeout:
        raise IndexBusy(index_dir / LOCK_FILE, f"held by another process for {LOCK_WAIT_S:g} s (a run stuck "
                        f"while adding itself?): this run is not in {index_dir / INDEX_FILE}") from None
    try:
        path = index_dir / INDEX_FILE
        entries = [e for e in _entries(path) if not (isinstance(e, dict) and e.get("run") == entry["run"])]
        atomic_write_json(path, [*entries, entry])
    finally:
        lock.release()
    return index_dir / INDEX_FILE


def index_run(index_dir: Path | None, run_dir: Path) -> None:
    """Add the finished run `run_dir` to the run index of index_dir (none when it is None); a failure is a
    warning: the run's outputs stand without it."""
    if index_dir is None:
        return
    try:
        append_run(index_dir, run_entry(run_dir))
    except (InputError, OSError) as exc:
        log.warning("run not added to the run index: %s", exc)


def short_paths(runs: list[str], index_dir: Path) -> tuple[Path, list[str]]:
    """(the folder the runs are shown under, each run's path relative to it): the index folder when it holds
    every run, else the folder common to them all (absolute paths when that is the root)."""
    paths = [Path(r) for r in runs]
    base = Path(index_dir).resolve()
    if not all(p.is_relative_to(base) and p != base for p in paths):
        base = Path(os.path.commonpath([str(p.parent) for p in paths])) if paths else base
    if base == Path(base.anchor):
        return base, [str(p) for p in paths]
    return base, [p.relative_to(base).as_posix() for p in paths]


def _scores(entry: IndexEntry) -> list[tuple[str, float | None]]:
    """(model, Average Score) of each model of an entry, in its order."""
    scores = averages if isinstance(averages := entry.get("average_score"), dict) else {}
    return [(m, scores.get(m)) for m in entry.get("models") or []]


def best_model(entry: IndexEntry) -> tuple[str | None, float | None]:
    """The model of an entry with the highest Average Score, and that score (None, None without one)."""
    scored = [(m, v) for m, v in _scores(entry) if v is not None]
    return max(scored, key=lambda mv: mv[1]) if scored else (None, None)


def entry_settings(entry: IndexEntry) -> dict[str, object]:
    """The compared settings an entry records (each of COMPARED; None when absent)."""
    recorded = settings if isinstance(settings := entry.get("settings"), dict) else {}
    return {key: recorded.get(key) for key in COMPARED}


def entry_set(entry: IndexEntry) -> str:
    """The digest of an entry's compared settings: runs of the same digest are comparable, as the report app
    groups results (engine.reports.groups.settings_digest)."""
    return settings_digest(settings) if isinstance(settings := entry.get("settings"), dict) else "unrecorded"


def index_table(entries: list[IndexEntry], index_dir: Path) -> Table:
    """One row per run (its texts on one line, `shown`): its folder (relative, `short_paths`), time, how many
    models, the best of them with its Average Score, its set of compared settings (runs of one set are
    comparable), the compared settings that differ between runs, and whether its viewer site is built; the
    note names the folder and the settings every run shares."""
    base, labels = short_paths([e["run"] for e in entries], index_dir)
    settings = [entry_settings(e) for e in entries]
    varying = [k for k in COMPARED if len({json.dumps(s[k], sort_keys=True) for s in settings}) > 1]
    rows = []
    for entry, label, recorded in zip(entries, labels, settings):
        name, score = best_model(entry)
        when = entry.get("time")
        rows.append([shown(label), shown(when[:16].replace("T", " ")) if isinstance(when, str) else None,
                     len(entry.get("models") or []), shown(name) if name is not None else None, score, entry_set(entry),
                     *(recorded[k] for k in varying), "yes" if (Path(entry["run"]) / SITE).is_file() else None])
    same = [f"{k} {settings[0][k]}" for k in COMPARED if k not in varying] if entries else []
    note = f"paths under {base}" + (f"; every run: {', '.join(same)}" if same else "") + \
        "; runs of one set are comparable (report.py RUN_DIR compares them)"
    return Table(["Run", "Time", "Models", "Best model", AVERAGE, "Set", *varying, "Site"], rows,
                 title=f"Scoring runs ({len(entries)})", note=note)
