"""Leaderboard reports of a finished scoring run: collected results, paper-style tables, files."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from engine.contract import InputError, is_number, read_json
from engine.contract import atomic_write_json, atomic_write_text, csv_text

log = logging.getLogger(__name__)

RESULTS_FILE = "results_eval.json"
GRID_FILE = "threshold_grid.json"
AVERAGE = "Average Score"
# Column label -> accepted aggregate keys (first present wins: paper profile, reference profile).
METRIC_COLUMNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Recall", ("recall",)),
    ("Precision", ("precision",)),
    ("Argument Similarity", ("arg_sim", "avg_sim_all_cov")),
    ("Step Coherence", ("step_coherence_cov",)),
    ("Order Consistency", ("order_consistency_cov",)),
    ("Merge Purity", ("merge_purity_cov",)),
)
JUDGE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("Task Completion", "task_completion"),
    ("Information Grounding", "information_grounding"),
)
BUDGET_KEYS: tuple[tuple[str, str], ...] = (("Steps", "avg_Rounds"), ("Calls", "avg_tool_calls"))


@dataclass(frozen=True)
class ModelResult:
    """One scored prediction file of a run: its aggregate and per-family aggregates."""

    name: str
    path: Path
    aggregate: dict[str, Any]
    by_type: dict[str, dict[str, Any]]
    meta: dict[str, Any] = field(default_factory=dict)


def _check_number(path: Path, block: dict[str, Any], key: str, where: str) -> None:
    if not is_number(block[key]):
        raise InputError(path, f"expected a number, got {block[key]!r}", field=f"{where}.{key}")


def _check_block(path: Path, block: Any, where: str) -> None:
    """Raise InputError unless block holds every metric the tables read, as numbers."""
    if not isinstance(block, dict):
        raise InputError(path, "expected an object", field=where)
    for _, keys in METRIC_COLUMNS:
        key = next((k for k in keys if k in block), None)
        if key is None:
            expected = " or ".join(repr(k) for k in keys)
            raise InputError(path, f"missing (expected {expected})", field=f"{where}.{keys[-1]}")
        _check_number(path, block, key, where)
    for _, key in BUDGET_KEYS:
        if key not in block:
            raise InputError(path, "missing", field=f"{where}.{key}")
        _check_number(path, block, key, where)
    for _, key in JUDGE_COLUMNS:
        if block.get(key) is not None:
            _check_number(path, block, key, where)
            if not 0.0 <= block[key] <= 1.0:
                raise InputError(path, f"expected a score in [0, 1], got {block[key]!r}", field=f"{where}.{key}")


def load_result(path: Path, name: str | None = None) -> ModelResult:
    """Read and check one results_eval.json.

    The model is named by meta.model, else `name`, else the stem of meta.predictions, else
    the file's folder.
    """
    data = read_json(path, "results file")
    if not isinstance(data, dict):
        raise InputError(path, "expected a JSON object with 'aggregate', 'by_type' and 'meta'")
    if "aggregate" not in data:
        raise InputError(path, "missing", field="aggregate")
    _check_block(path, data["aggregate"], "aggregate")
    by_type = data.get("by_type", {})
    if not isinstance(by_type, dict):
        raise InputError(path, "expected an object of per-family aggregates", field="by_type")
    for family, block in by_type.items():
        _check_block(path, block, f"by_type.{family}")
    meta = data.get("meta", {})
    if not isinstance(meta, dict):
        raise InputError(path, "expected an object", field="meta")
    model = meta.get("model")
    if model is not None and not (isinstance(model, str) and model):
        raise InputError(path, f"expected a non-empty string, got {model!r}", field="meta.model")
    predictions = meta.get("predictions")
    stem = Path(predictions).stem if isinstance(predictions, str) and predictions else None
    return ModelResult(name=model or name or stem or Path(path).parent.name, path=Path(path),
                       aggregate=data["aggregate"], by_type=by_type, meta=meta)


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


@dataclass
class Table:
    """A small table of a first text column and numeric (or missing) cells."""

    columns: list[str]
    rows: list[list[Any]]
    title: str = ""
    digits: int = 4

    def column(self, name: str) -> list[Any]:
        """The cells of one column, top to bottom."""
        i = self.columns.index(name)
        return [row[i] for row in self.rows]

    def records(self) -> list[dict[str, Any]]:
        """The rows as {column: cell} dicts."""
        return [dict(zip(self.columns, row)) for row in self.rows]

    def _cell(self, value: Any) -> str:
        if value is None:
            return "–"
        if isinstance(value, float):
            return f"{value:.{self.digits}f}"
        return str(value).replace("|", "\\|")

    def to_markdown(self) -> str:
        """A GitHub-flavoured markdown table (numbers right-aligned, missing cells as '–')."""
        header = "| " + " | ".join(c.replace("|", "\\|") for c in self.columns) + " |"
        rule = "|" + "|".join(":---" if i == 0 else "---:" for i in range(len(self.columns))) + "|"
        body = ["| " + " | ".join(self._cell(v) for v in row) + " |" for row in self.rows]
        return "\n".join([header, rule, *body]) + "\n"

    def to_csv(self) -> str:
        """CSV text with full-precision numbers and empty missing cells."""
        return csv_text(self.columns, self.rows)

    def to_json(self) -> dict[str, Any]:
        """{"title", "columns", "rows": [{column: cell}]} with missing cells as null."""
        return {"title": self.title, "columns": list(self.columns), "rows": self.records()}


def _metric_cells(block: dict[str, Any], judges: list[tuple[str, str]]) -> list[float | None]:
    cells: list[float | None] = [float(block[next(k for k in keys if k in block)]) for _, keys in METRIC_COLUMNS]
    cells += [None if block.get(key) is None else float(block[key]) for _, key in judges]
    return cells


def _score_table(entries: list[tuple[str, dict[str, Any]]], title: str, sort_by: str) -> Table:
    judges = [(label, key) for label, key in JUDGE_COLUMNS if any(block.get(key) is not None for _, block in entries)]
    columns = ["Model", *(label for label, _ in METRIC_COLUMNS), *(label for label, _ in judges), AVERAGE]
    if sort_by not in columns[1:]:
        raise ValueError(f"cannot sort by {sort_by!r}: expected one of {', '.join(columns[1:])}")
    rows = []
    for name, block in entries:
        cells = _metric_cells(block, judges)
        present = [v for v in cells if v is not None]
        rows.append([name, *cells, sum(present) / len(present)])
    key = columns.index(sort_by)
    rows.sort(key=lambda row: (row[key] is None, -(row[key] or 0.0), row[0]))
    return Table(columns=columns, rows=rows, title=title)


def leaderboard_table(results: list[ModelResult], sort_by: str = AVERAGE) -> Table:
    """Paper Table 2: one row per model, best first by `sort_by` (a column label, e.g. 'Recall').

    The judge columns (Task Completion, Information Grounding) appear only when some model has
    them; Average Score is the plain mean of a row's metric cells that are present.
    """
    return _score_table([(r.name, r.aggregate) for r in results], "Leaderboard", sort_by)


def family_tables(results: list[ModelResult], sort_by: str = AVERAGE) -> dict[str, Table]:
    """Paper Tables 5-32: per task family (sorted by name), the leaderboard of the models that have it."""
    families = sorted({family for r in results for family in r.by_type})
    return {family: _score_table([(r.name, r.by_type[family]) for r in results if family in r.by_type],
                                 family, sort_by) for family in families}


def budget_table(results: list[ModelResult]) -> Table:
    """Paper Table 4: per model (in the given order), average steps and tool calls per task,
    overall and per family (missing where a model has no task of that family)."""
    families = sorted({family for r in results for family in r.by_type})
    columns = ["Model", *(f"Avg {label}" for label, _ in BUDGET_KEYS)]
    columns += [f"{family} {label}" for family in families for label, _ in BUDGET_KEYS]
    rows = []
    for r in results:
        row: list[Any] = [r.name, *(float(r.aggregate[key]) for _, key in BUDGET_KEYS)]
        for family in families:
            block = r.by_type.get(family)
            row += [None if block is None else float(block[key]) for _, key in BUDGET_KEYS]
        rows.append(row)
    return Table(columns=columns, rows=rows, title="Budget", digits=2)


def load_threshold_grid(path: Path) -> list[dict[str, Any]]:
    """Rows of a threshold_grid.json, checked: model (text), tau_weak, tau_strong and metrics (numbers)."""
    rows = read_json(path, "threshold grid")
    if not isinstance(rows, list):
        raise InputError(path, "expected a list of rows {model, tau_weak, tau_strong, metrics...}")
    for i, row in enumerate(rows):
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
    return rows


def families_markdown(tables: dict[str, Table]) -> str:
    """All per-family tables as one markdown document, one section per family."""
    return "\n".join(f"## {family}\n\n{table.to_markdown()}" for family, table in tables.items())


def write_reports(run_dir: Path, out_dir: Path | None = None, sort_by: str = AVERAGE) -> list[Path]:
    """Write the run's leaderboard, family and budget tables (md/csv/json) and plots; returns the paths.

    Files go to out_dir (default: run_dir), each written atomically.
    """
    from engine.plots import family_chart, leaderboard_chart, threshold_chart

    run_dir = Path(run_dir)
    out = Path(out_dir) if out_dir is not None else run_dir
    results = collect_run(run_dir)
    board = leaderboard_table(results, sort_by)
    families = family_tables(results, sort_by)
    rank = {name: i for i, name in enumerate(board.column("Model"))}
    budget = budget_table(sorted(results, key=lambda r: rank[r.name]))
    written: list[Path] = []

    def text(name: str, content: str) -> None:
        atomic_write_text(out / name, content)
        written.append(out / name)

    def obj(name: str, content: Any) -> None:
        atomic_write_json(out / name, content)
        written.append(out / name)

    for stem, table in (("leaderboard", board), ("budget", budget)):
        text(f"{stem}.md", table.to_markdown())
        text(f"{stem}.csv", table.to_csv())
        obj(f"{stem}.json", table.to_json())
    text("families.md", families_markdown(families))
    obj("families.json", {family: table.to_json() for family, table in families.items()})
    written.append(leaderboard_chart(board, out / "leaderboard.png"))
    if families:
        written.append(family_chart(families, out / "families.png", models=board.column("Model")))
    grid = run_dir / GRID_FILE
    if grid.is_file():
        written.append(threshold_chart(load_threshold_grid(grid), out / "threshold_ablation.png"))
    return written
