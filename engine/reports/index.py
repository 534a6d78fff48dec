"""The run index: one folder's index.json listing every scoring run with its settings and headline.

Each score run appends its entry (run folder, time, models, compared settings, Average Score per
model); the report app prints it (`report.py --list`) and the viewer lists it. Appends from concurrent
runs are serialised by a lock file beside the index (waited on for at most `LOCK_WAIT_S`), and the
index is replaced atomically. An entry that is not one the index writes (a hand edit) is skipped with
a warning naming it, and kept in the file as it is.
"""

from __future__ import annotations

import html
import logging
import numbers
import time
from pathlib import Path
from typing import Any, TypedDict

from filelock import FileLock, Timeout

from engine.contract import InputError, atomic_write_json, atomic_write_text, read_json
from engine.metricspec import AVERAGE
from engine.reports.groups import COMPARED, group_results
from engine.reports.read import collect_run
from engine.reports.tables import Table, leaderboard_table

INDEX_FILE = "index.json"
LOCK_FILE = ".index.lock"
SITE = "viewer/index.html"
PAGE = "runs.html"
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
    scores = dict(zip(board.column("Model"), board.column(AVERAGE))) if AVERAGE in board.columns else {}
    settings = group_results(results, run_dir)[0].settings
    return {"run": str(run_dir), "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "models": [r.name for r in results], "settings": settings,
            "average_score": {r.name: scores.get(r.name) for r in results}}


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


def _entries(path: Path) -> list[Any]:
    """The list index.json holds (none when there is no index), its entries as they are."""
    if not path.is_file():
        return []
    entries = read_json(path, "run index")
    if not isinstance(entries, list):
        raise InputError(path, "expected a list of run entries")
    return entries


def read_index(index_dir: Path) -> list[IndexEntry]:
    """The entries of index_dir/index.json (none when there is no index; InputError when it is not a list);
    an entry that is not one the index writes (entry_problem) is skipped with a warning naming it."""
    path = Path(index_dir) / INDEX_FILE
    good = []
    for i, entry in enumerate(_entries(path)):
        problem = entry_problem(entry)
        if problem is None:
            good.append(entry)
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


def index_table(entries: list[IndexEntry]) -> Table:
    """One row per run and model: run folder, time, model, Average Score, the compared settings, and the
    run's viewer site when built."""
    rows = []
    for entry in entries:
        settings = recorded if isinstance(recorded := entry.get("settings"), dict) else {}
        scores = averages if isinstance(averages := entry.get("average_score"), dict) else {}
        site = Path(entry["run"]) / SITE
        for model in entry.get("models") or ["–"]:
            rows.append([entry["run"], entry.get("time"), model, scores.get(model),
                         *(settings.get(key) for key in COMPARED), str(site) if site.is_file() else None])
    return Table(["Run", "Time", "Model", AVERAGE, *COMPARED, "Site"], rows, title="Scoring runs")


def write_index_page(index_dir: Path, out: Path | None = None) -> Path:
    """A static page listing every run of index_dir/index.json with its settings and Average Scores, each
    run's viewer site linked when built; written to out (default: index_dir)/runs.html, returned."""
    index_dir = Path(index_dir)
    entries = read_index(index_dir)
    if not entries:
        raise InputError(index_dir / INDEX_FILE, "no run index here (score runs add to <index_dir>/index.json, "
                                                 "by default <home>/runs)")
    table = index_table(entries)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in table.columns)
    body = []
    for row in table.rows:
        cells = [html.escape("–" if v is None else f"{v:.4f}" if isinstance(v, float) else str(v)) for v in row[:-1]]
        site = row[-1]
        link = f'<a href="{html.escape(Path(site).as_uri())}">site</a>' if site else "not built"
        body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + f"<td>{link}</td></tr>")
    page = ("<!doctype html><meta charset=\"utf-8\"><title>Scoring runs</title>"
            "<style>body{font-family:sans-serif}td,th{padding:2px 8px;text-align:left}</style>"
            f"<h1>Scoring runs ({len(entries)})</h1><p>{html.escape(str(index_dir / INDEX_FILE))}; runs are "
            "comparable when reference, tau_weak, tau_strong, profile and encoder agree.</p>"
            f"<table><tr>{head}</tr>{''.join(body)}</table>\n")
    path = Path(out or index_dir) / PAGE
    atomic_write_text(path, page)
    return path
