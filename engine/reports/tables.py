"""Report tables: the paper's leaderboard (Table 2), per-family (Tables 5-32) and budget (Table 4), and
the outcome checks (answer equivalence's SR, the verifiers' accuracy)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from engine.contract import JsonObject, JsonValue, csv_text
from engine.evaluators.call_outcomes import CALL_CLASSES, CALL_KEYS
from engine.evaluators.tool_use import KEY as TOOL_USE
from engine.evaluators.tool_use import METRICS as TOOL_USE_METRICS
from engine.metricspec import (
    AVERAGE,
    CORE_SOURCES,
    Column,
    evaluator_columns,
    label_of,
    leaderboard_columns,
    metric_value,
    metrics_of,
)
from engine.reports.read import ModelResult, number, real
from engine.reports.records import Interval, Quantity, RunSettings, stats_of

BUDGET_KEYS: tuple[str, ...] = tuple(m.key for m in metrics_of("budget"))
OUTCOME_SOURCES: tuple[str, ...] = ("answer_equivalence", "verifiers")
"""The outcome checks' evaluators, whose rows make the outcome checks table."""
OUTCOME_KEYS: tuple[str, ...] = tuple(m.key for source in OUTCOME_SOURCES for m in metrics_of(source))
TOOL_USE_KEYS: tuple[str, ...] = tuple(m.key for m in TOOL_USE_METRICS)


@dataclass
class Table:
    """A small table of a first text column and numeric (or missing) cells."""

    columns: list[str]
    rows: Sequence[Sequence[object]]
    title: str = ""
    digits: int = 4
    note: str = ""

    def column(self, name: str) -> list[object]:
        """The cells of one column, top to bottom."""
        i = self.columns.index(name)
        return [row[i] for row in self.rows]

    def names(self) -> list[str]:
        """The first column (the models, or what else names the rows), top to bottom, as text."""
        return [str(row[0]) for row in self.rows]

    def records(self) -> list[dict[str, object]]:
        """The rows as {column: cell} dicts."""
        return [dict(zip(self.columns, row)) for row in self.rows]

    def _cell(self, value: object) -> str:
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
        return "\n".join([header, rule, *body]) + "\n" + (f"\n{self.note}\n" if self.note else "")

    def to_text(self) -> str:
        """Aligned plain text for a terminal: a header line, then one line per row (missing cells as '-')."""
        cells = [list(self.columns)] + [["-" if v is None else self._cell(v) for v in row] for row in self.rows]
        widths = [max(len(row[i]) for row in cells) for i in range(len(self.columns))]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells)

    def to_csv(self) -> str:
        """CSV text with full-precision numbers and empty missing cells."""
        return csv_text(self.columns, self.rows)

    def to_json(self) -> dict[str, object]:
        """{"title", "columns", "rows": [{column: cell}], "note"} with missing cells as null."""
        return {"title": self.title, "columns": list(self.columns), "rows": self.records(), "note": self.note}


def score_table(entries: list[tuple[str, JsonObject]], title: str, sort_by: str = AVERAGE) -> Table:
    """Rows of the alignment columns, the judge and rubric columns some entry has, and the Average Score.

    The Average Score is the plain mean of a row's cells whose metric is in the average (the six
    alignment columns and Information Grounding; Task Completion is shown, not averaged).
    """
    judges = [c for c in evaluator_columns()
              if any(metric_value(block, c.keys[0]) is not None for _, block in entries)]
    columns = [*leaderboard_columns("alignment"), *judges]
    labels = ["Model", *(c.label for c in columns), AVERAGE]
    if sort_by not in labels[1:]:
        raise ValueError(f"cannot sort by {sort_by!r}: expected one of {', '.join(labels[1:])}")
    rows: list[list[JsonValue]] = []
    for name, block in entries:
        cells = [_cell(block, c) for c in columns]
        averaged = [v for v, c in zip(cells, columns) if c.in_average and v is not None]
        rows.append([name, *cells, sum(averaged) / len(averaged) if averaged else None])
    key = labels.index(sort_by)
    rows.sort(key=lambda row: (row[key] is None, -(number(row[key]) or 0.0), str(row[0])))
    in_average = [c.label for c in columns if c.in_average]
    note = f"{AVERAGE}: mean of {', '.join(in_average)}"
    if not any(c.source not in CORE_SOURCES for c in columns if c.in_average):
        shown = [c.label for c in judges if not c.in_average]
        note += (f" (the alignment metrics only: {', '.join(shown)} shown, not averaged)" if shown
                 else " (no judge results: the alignment metrics only)")
    return Table(columns=labels, rows=rows, title=title, note=note + ".")


def _cell(block: JsonObject, column: Column) -> float | None:
    key = next((k for k in column.keys if metric_value(block, k) is not None), None)
    value = None if key is None else number(metric_value(block, key))
    return None if value is None else float(value)


def leaderboard_table(results: list[ModelResult], sort_by: str = AVERAGE) -> Table:
    """Paper Table 2: one row per model, best first by `sort_by` (a column label, e.g. 'Recall').

    The judge columns (Task Completion, Information Grounding) appear only when some model has
    them; Average Score is the plain mean of a row's metric cells that are present.
    """
    return score_table([(r.name, r.aggregate) for r in results], "Leaderboard", sort_by)


def family_tables(results: list[ModelResult], sort_by: str = AVERAGE) -> dict[str, Table]:
    """Paper Tables 5-32: per task family (sorted by name), the leaderboard of the models that have it."""
    families = sorted({family for r in results for family in r.by_type})
    return {family: score_table([(r.name, r.by_type[family]) for r in results if family in r.by_type],
                                 family, sort_by) for family in families}


def budget_table(results: list[ModelResult]) -> Table:
    """Paper Table 4: per model (in the given order), average steps and tool calls per task,
    overall and per family (missing where a model has no task of that family)."""
    families = sorted({family for r in results for family in r.by_type})
    columns = ["Model", *(f"Avg {label_of(key)}" for key in BUDGET_KEYS)]
    columns += [f"{family} {label_of(key)}" for family in families for key in BUDGET_KEYS]
    rows = []
    for r in results:
        row: list[JsonValue] = [r.name, *(real(r.aggregate[key]) for key in BUDGET_KEYS)]
        for family in families:
            block = r.by_type.get(family)
            row += [None if block is None else real(block[key]) for key in BUDGET_KEYS]
        rows.append(row)
    return Table(columns=columns, rows=rows, title="Budget", digits=2)


def calls_table(results: list[ModelResult]) -> Table | None:
    """Paper Figure 6 as a table: per model (in the given order) with call outcomes, the illegal calling
    format count, the count of each call class and its share of the classified calls; None when no
    model has call outcomes."""
    judged = [r for r in results if any(r.aggregate.get(key) is not None for key in CALL_KEYS)]
    if not judged:
        return None
    columns = ["Model", "Calls", *(label_of(key) for key in CALL_KEYS),
               *(f"{label_of(key)} %" for key in CALL_CLASSES)]
    rows: list[list[JsonValue]] = []
    for r in judged:
        counts = [number(r.aggregate.get(key)) for key in CALL_KEYS]
        total = sum(c or 0 for c in counts[1:])
        shares = [c / total if total and c is not None else None for c in counts[1:]]
        rows.append([r.name, total, *counts, *shares])
    note = ("Illegal Calling Format counts samples (a model reply that could not be turned into calls); "
            "the classes count predicted calls, their shares are of the classified calls.")
    return Table(columns=columns, rows=rows, title="Call outcomes", note=note)


def _tool_use_cells(block: JsonObject | None) -> list[JsonValue]:
    values = [number(metric_value(block or {}, key)) for key in TOOL_USE_KEYS]
    return [None if value is None else float(value) for value in values]


def tool_use_table(results: list[ModelResult]) -> Table | None:
    """Tool-use analytics per model (in the given order): Proactivity, Success Rate (both readings) and
    Volume overall and per family (missing where a model has no task of the family, a Success Rate
    where it has no call to divide by); None when no model has them."""
    used = [r for r in results if isinstance(r.aggregate.get(TOOL_USE), dict)]
    if not used:
        return None
    families = sorted({family for r in used for family in r.by_type})
    columns = ["Model", *(label_of(key) for key in TOOL_USE_KEYS)]
    columns += [f"{family} {label_of(key)}" for family in families for key in TOOL_USE_KEYS]
    rows: list[list[JsonValue]] = [[r.name, *_tool_use_cells(r.aggregate), *(cell for family in families
                                                      for cell in _tool_use_cells(r.by_type.get(family)))]
            for r in used]
    note = ("Proactivity: share of tasks with at least one call; Success Rate: calls not reporting an error over "
            "all calls (VisualToolBench eq. 4), over all tasks' calls (micro); Success Rate (flagged calls): calls "
            "with is_error false over the calls that carry is_error; Volume: calls per task, all tasks.")
    return Table(columns=columns, rows=rows, title="Tool use", note=note)


def families_markdown(tables: dict[str, Table]) -> str:
    """All per-family tables as one markdown document, one section per family."""
    return "\n".join(f"## {family}\n\n{table.to_markdown()}" for family, table in tables.items())


OUTCOME_NOTES = (
    ("answer_sr", "SR: mean over the complexity levels present of each level's success rate (macro)."),
    ("answer_sr_micro", "SR (micro): mean over the judged answers."),
    ("answer_skipped", "Answers Skipped: tasks without ground truth, left out of SR."),
    ("check_accuracy_evaluated", "Accuracy: tasks whose checks all pass over the tasks without an evaluator error "
                                 "(TOBench's Avg)."),
    ("check_accuracy", "Accuracy (errors as failures): over every checked task, an evaluator error counted as a "
                       "failure."))
"""The outcome checks table's notes, each shown when its column is."""


def outcomes_table(results: list[ModelResult]) -> Table | None:
    """Per model (in the given order) the outcome checks it has: SR per level, SR (the macro mean over
    the levels present), SR (micro), the answers judged and skipped, Accuracy over the evaluated tasks
    and over every checked task (evaluator errors counted as failures), the tasks checked and the
    evaluator errors; None when no model has any. Columns no model has are left out."""
    keys = [k for k in OUTCOME_KEYS if any(r.aggregate.get(k) is not None for r in results)]
    if not keys:
        return None
    rows: list[list[JsonValue]] = [[r.name, *(r.aggregate.get(k) for k in keys)] for r in results
            if any(r.aggregate.get(k) is not None for k in keys)]
    note = " ".join(text for key, text in OUTCOME_NOTES if key in keys)
    return Table(columns=["Model", *(label_of(k) for k in keys)], rows=rows, title="Outcome checks", note=note)


def interval_cell(block: Interval | Quantity | None, digits: int = 4) -> str | None:
    """`value [low, high]` of a stats.json metric block or a usage.json quantity (None without one; the value alone
    where it has no interval: the document gives the reason)."""
    if block is None or block.get("value") is None:
        return None
    if block.get("low") is None and block.get("high") is None:
        return f"{block['value']:.{digits}f}"
    ends = ["–" if block.get(end) is None else f"{block[end]:.{digits}f}" for end in ("low", "high")]
    return f"{block['value']:.{digits}f} [{ends[0]}, {ends[1]}]"


METHOD_NAMES = {"logit": "t intervals on the logit scale (the log of a volume)", "percentile": "percentile intervals",
                "bca": "BCa intervals"}


def intervals_note(settings: RunSettings) -> str:
    """What a stats.json's intervals are and what the tie mark means, in a sentence or two."""
    level = settings.get("level", 0.95)
    method = METHOD_NAMES.get(settings.get("method", "logit"), str(settings.get("method")))
    if settings.get("correction") == "expanded":
        method = f"{method}, small-sample expanded (sqrt(C/(C-1)), Student's t)"
    return (f"{level:.0%} {method}, from a cluster bootstrap over {settings.get('clusters')} "
            f"{'task families' if settings.get('cluster') == 'family' else 'ids'} ({settings.get('resamples')} "
            f"resamples, seed {settings.get('seed')}); a value without an interval has a reason in stats.json. Rank "
            f"interval by the {AVERAGE}, and * tied with the top (its rank interval reaches 1), from Holm's "
            "decisions over every pair (simultaneous: they hold jointly).")


def intervals_table(board: Table, document: Mapping[str, object]) -> Table:
    """The leaderboard with intervals (stats.json): per model in the leaderboard's order its rank and
    rank interval by the Average Score, and `value [low, high]` for each column of the leaderboard the
    statistics cover; the models tied with the top are marked with `*`."""
    stats = stats_of(document)
    settings = stats.get("settings", {})
    key_of = {label: key for key, label in stats.get("metrics", {}).items()}
    labels = [c for c in board.columns[1:] if c in key_of]
    tied = set(stats.get("tied_with_top", {}).get("average_score", []))
    rows: list[list[JsonValue]] = []
    for name in board.names():
        record = stats.get("models", {}).get(name, {})
        metrics = record.get("metrics", {})
        span = (f"{record['rank_low']}–{record['rank_high']}" if record.get("rank_low") is not None else None)
        rows.append([name + (" *" if name in tied else ""), record.get("rank"), span,
                     *(interval_cell(metrics.get(key_of[label])) for label in labels)])
    level = settings.get("level", 0.95)
    return Table(columns=["Model", "Rank", f"Rank {level:.0%}", *labels], rows=rows,
                 title="Leaderboard with intervals", note=intervals_note(settings))
