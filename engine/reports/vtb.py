"""VisualToolBench report tables: APR and ARS per model overall and single-turn vs multi-turn, per domain
(chemistry, maths, biology, engineering and physics as STEM) and per evaluation focus, and the paper's
Tables 3 (APR) and 7 (ARS) as printed: Overall, then the five domains over the single-turn tasks, then
the same five over the multi-turn tasks; read from each model's ``rubrics`` block
(engine.evaluators.vtb_scoring). Every table is ordered by APR, the paper's headline metric, best first."""

from __future__ import annotations

from engine.contract import JsonObject, JsonValue
from engine.evaluators.vtb_records import MULTI_TURN, SINGLE_TURN
from engine.reports.read import ModelResult, block_of, number
from engine.reports.tables import Table

RUBRICS = "rubrics"
_NOTE = ("APR: share of tasks with no critical rubric failed; ARS: mean weighted rubric score; both over the "
         "scored tasks (fractions, the paper prints percentages). Profile: {profile}.")


def _block(result: ModelResult) -> JsonObject | None:
    block = result.aggregate.get(RUBRICS)
    return block if isinstance(block, dict) else None


def _profile(used: list[ModelResult]) -> str:
    names = sorted({str(block_of(r.aggregate.get(RUBRICS)).get("profile")) for r in used})
    return ", ".join(names)


def _pair(block: JsonObject | None) -> list[float | None]:
    block = block or {}
    return [number(block.get("APR")), number(block.get("ARS"))]


def _breakdown_table(used: list[ModelResult], group: str, title: str, order: list[str] | None = None) -> Table:
    names = order or sorted({n for r in used for n in block_of((_block(r) or {}).get(f"by_{group}", {}))})
    columns = ["Model", "APR", "ARS", *(f"{n} {k}" for n in names for k in ("APR", "ARS"))]
    rows = []
    for r in used:
        block = _block(r) or {}
        parts = block_of(block.get(f"by_{group}"))
        rows.append([r.name, *_pair(block), *(cell for n in names for cell in _pair(block_of(parts.get(n))))])
    return Table(columns=columns, rows=rows, title=title, note=_NOTE.format(profile=_profile(used)))


PAPER_DOMAINS: tuple[str, ...] = ("STEM", "Medical", "Finance", "Sports", "Generalist")
"""The domains of Tables 3 and 7, in the paper's order (a task's domain matches one without regard to case)."""
_PAPER_NOTE = ("Laid out as VisualToolBench's Table {number}: {metric} over all scored tasks (Overall), then per "
               "domain (chemistry, maths, biology, engineering and physics as STEM) over its single-turn tasks, "
               "then per domain over its multi-turn tasks; {unit}. Rows by Overall APR, best first. After the "
               "paper's columns: {others}{metric} over all single-turn and all multi-turn tasks, and the tasks "
               "scored. Profile: {profile}.")


def _ranked(used: list[ModelResult]) -> list[ModelResult]:
    """The models by overall APR (then ARS, then name), best first; a model without APR last."""
    def key(r: ModelResult) -> tuple[bool, float, float, str]:
        apr, ars = _pair(_block(r))
        return (apr is None, -(apr or 0.0), -(ars or 0.0), r.name)
    return sorted(used, key=key)


def _domains(used: list[ModelResult]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(label, name in the data) of every domain some model has: the paper's five in its order, and the
    others by name."""
    names = sorted({n for r in used for n in block_of((_block(r) or {}).get("by_domain_turncase"))})
    known = {n.casefold(): n for n in names}
    paper = [(label, known.pop(label.casefold())) for label in PAPER_DOMAINS if label.casefold() in known]
    return paper, [(n, n) for n in names if n.casefold() in known]


def paper_table(used: list[ModelResult], metric: str) -> Table:
    """Table 3 (``metric`` "APR", in % to 2 decimals) or Table 7 ("ARS", 4 decimals) as printed: Overall, the
    paper's domains over the single-turn tasks, the same over the multi-turn tasks; after them the cells of
    any other domain (single-turn, then multi-turn), the single-turn and multi-turn totals and the tasks."""
    paper, others = _domains(used)
    percent = metric == "APR"
    scale = 100.0 if percent else 1.0
    turns = ((SINGLE_TURN, "Single-turn"), (MULTI_TURN, "Multi-turn"))
    # (turncase, domain name in the data) per column, the paper's grid first
    grid = [(turn, name) for domains in (paper, others) for turn, _ in turns for _, name in domains]

    def cell(block: JsonValue) -> float | None:
        value = number(block_of(block).get(metric))
        return None if value is None else scale * value

    rows: list[list[JsonValue]] = []
    for r in _ranked(used):
        block = _block(r) or {}
        cells = block_of(block.get("by_domain_turncase"))
        by_turn = block_of(block.get("by_turncase"))
        rows.append([r.name, cell(block), *(cell(block_of(cells.get(name)).get(turn)) for turn, name in grid),
                     *(cell(by_turn.get(turn)) for turn, _ in turns), block.get("tasks")])
    columns = ["Model", "Overall",
               *(f"{short} {label}" for domains in (paper, others) for _, short in turns for label, _ in domains),
               *(short for _, short in turns), "Tasks"]
    extra = f"the other domains' cells ({', '.join(label for label, _ in others)}), " if others else ""
    note = _PAPER_NOTE.format(number=3 if percent else 7, metric=metric, profile=_profile(used), others=extra,
                              unit="in %" if percent else "a fraction")
    return Table(columns=columns, rows=rows, title=f"VisualToolBench Table {3 if percent else 7}: {metric}",
                 digits=2 if percent else 4, note=note)


def table8(results: list[ModelResult]) -> Table | None:
    """Table 8 as printed: per model the total tool calls (Total #), then for single-turn and multi-turn
    tasks the Proactivity, Success Rate and Volume (tool_use.by_turncase); after them the tasks of each.
    Models by overall APR where they have it, the others after by name; None when no model has the split."""
    used = [r for r in results if isinstance(block_of(r.aggregate.get("tool_use")).get("by_turncase"), dict)]
    if not used:
        return None
    scored = _ranked([r for r in used if _block(r) is not None])
    used = scored + sorted((r for r in used if r not in scored), key=lambda r: r.name)
    turns = ((SINGLE_TURN, "Single-turn"), (MULTI_TURN, "Multi-turn"))
    metrics = (("proactivity", "Proactivity"), ("success_rate", "Success Rate"), ("volume", "Volume"))
    rows: list[list[JsonValue]] = []
    for r in used:
        split = block_of(block_of(r.aggregate["tool_use"])["by_turncase"])
        parts = [block_of(split.get(turn)) for turn, _ in turns]
        rows.append([r.name, sum(int(number(p.get("calls")) or 0) for p in parts),
                     *(p.get(key) for p in parts for key, _ in metrics), *(p.get("tasks") for p in parts)])
    columns = ["Model", "Total #", *(f"{label} {name}" for _, label in turns for _, name in metrics),
               *(f"{label} Tasks" for _, label in turns)]
    note = ("Laid out as VisualToolBench's Table 8: Total # = tool calls over all tasks; Proactivity = share of "
            "tasks with a call, Success Rate = calls not reporting an error over all calls (micro), Volume = calls "
            "per task, each over the single-turn and the multi-turn tasks (a prediction that does not say counts "
            "as single-turn). After the paper's columns: the tasks of each.")
    return Table(columns=columns, rows=rows, title="VisualToolBench Table 8: tool use", note=note)


def vtb_tables(results: list[ModelResult]) -> dict[str, Table]:
    """The VisualToolBench tables of the models that have rubric verdicts (by APR, best first), by report
    stem: ``vtb_table3`` (APR), ``vtb_table7`` (ARS) and ``vtb_table8`` (tool use, where the predictions say which
    tasks are multi-turn) as the paper prints them, ``vtb_turns`` (overall,
    single-turn, multi-turn), ``vtb_domains`` and ``vtb_focus``; empty when no model has any."""
    used = _ranked([r for r in results if _block(r) is not None])
    tools = table8(results)
    out = {"vtb_table8": tools} if tools is not None else {}
    if not used:
        return out
    return {"vtb_table3": paper_table(used, "APR"), "vtb_table7": paper_table(used, "ARS"), **out,
            "vtb_turns": _breakdown_table(used, "turncase", "VisualToolBench: overall, single-turn and multi-turn",
                                          [SINGLE_TURN, MULTI_TURN]),
            "vtb_domains": _breakdown_table(used, "domain", "VisualToolBench: per domain"),
            "vtb_focus": _breakdown_table(used, "eval_focus", "VisualToolBench: per evaluation focus")}
