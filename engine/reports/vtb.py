"""VisualToolBench report tables: APR and ARS per model overall and single-turn vs multi-turn, per domain
(chemistry, maths, biology, engineering and physics as STEM) and per evaluation focus, the breakdowns the
paper's Tables 3, 7 and 8 report, read from each model's ``rubrics`` block (engine.evaluators.vtb_scoring)."""

from __future__ import annotations

from typing import Any

from engine.evaluators.vtb_records import MULTI_TURN, SINGLE_TURN
from engine.reports.read import ModelResult
from engine.reports.tables import Table

RUBRICS = "rubrics"
_NOTE = ("APR: share of tasks with no critical rubric failed; ARS: mean weighted rubric score; both over the "
         "scored tasks (fractions, the paper prints percentages). Profile: {profile}.")


def _block(result: ModelResult) -> dict[str, Any] | None:
    block = result.aggregate.get(RUBRICS)
    return block if isinstance(block, dict) else None


def _profile(used: list[ModelResult]) -> str:
    names = sorted({str(_block(r).get("profile")) for r in used})  # type: ignore[union-attr]
    return ", ".join(names)


def _pair(block: dict[str, Any] | None) -> list[Any]:
    block = block or {}
    return [block.get("APR"), block.get("ARS")]


def _breakdown_table(used: list[ModelResult], group: str, title: str, order: list[str] | None = None) -> Table:
    names = order or sorted({n for r in used for n in (_block(r) or {}).get(f"by_{group}", {})})
    columns = ["Model", "APR", "ARS", *(f"{n} {k}" for n in names for k in ("APR", "ARS"))]
    rows = []
    for r in used:
        block = _block(r) or {}
        parts = block.get(f"by_{group}") or {}
        rows.append([r.name, *_pair(block), *(cell for n in names for cell in _pair(parts.get(n)))])
    return Table(columns=columns, rows=rows, title=title, note=_NOTE.format(profile=_profile(used)))


def vtb_tables(results: list[ModelResult]) -> dict[str, Table]:
    """The VisualToolBench tables of the models that have rubric verdicts (in the given order), by report
    stem: ``vtb_turns`` (overall, single-turn, multi-turn), ``vtb_domains`` and ``vtb_focus``; empty when no
    model has any."""
    used = [r for r in results if _block(r) is not None]
    if not used:
        return {}
    return {"vtb_turns": _breakdown_table(used, "turncase", "VisualToolBench: overall, single-turn and multi-turn",
                                          [SINGLE_TURN, MULTI_TURN]),
            "vtb_domains": _breakdown_table(used, "domain", "VisualToolBench: per domain"),
            "vtb_focus": _breakdown_table(used, "eval_focus", "VisualToolBench: per evaluation focus")}
