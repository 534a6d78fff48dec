"""The neighbours' tables as their papers print them: VisualToolBench Tables 3, 7 and 8, MCPVerse Table 2
and TOBench Table 2 (layout, order, rounding), from hand-made aggregates whose cells are computed by hand
(the papers' full tables are not in the repository; the headline cells the specification quotes, VTB's
best APR 27.39% and MCPVerse's Oracle SR 68.1 and Standard SR 62.4, are used as inputs)."""

from __future__ import annotations

from pathlib import Path

from engine.evaluators.vtb_records import RubricItem
from engine.evaluators.vtb_scoring import aggregate_values
from engine.reports.mcpverse import mcpverse_table
from engine.reports.read import ModelResult
from engine.reports.tobench import tobench_table
from engine.reports.vtb import table8, vtb_tables


def result(name: str, aggregate: dict, path: str = "", meta: dict | None = None) -> ModelResult:
    return ModelResult(name=name, path=Path(path or f"run/{name}/results_eval.json"), aggregate=aggregate,
                       by_type={}, meta={"model": name, **(meta or {})})


def task(domain: str, turncase: str, score: float, passed: bool) -> dict:
    item = RubricItem("r", 5, True, None, ("Reasoning",))
    return {"rubric_score": score, "pass_rate": 1.0 if passed else 0.0, "rubrics": [(item, passed)], "turns": [],
            "no_critical": False, "unanswered": 0, "other_labels": 0, "dropped_turns": 0, "unanswered_turns": 0,
            "critical_mismatches": 0, "by_category": {"Reasoning": [score, 1.0 if passed else 0.0]},
            "groups": {"domain": domain, "eval_focus": "region_switch_qa", "turncase": turncase},
            "profile": "published"}


def test_vtb_tables_3_and_7_have_overall_then_the_single_turn_then_the_multi_turn_domains_by_apr() -> None:
    # chemistry and maths are reported as STEM; medical matches the paper's Medical without regard to case
    weak = aggregate_values([task("chemistry", "single-turn", 0.5, True), task("maths", "multi-turn", 0.25, False),
                             task("medical", "single-turn", 0.125, False), task("sports", "multi-turn", 1.0, True)])
    strong = aggregate_values([task("physics", "single-turn", 1.0, True), task("finance", "multi-turn", 0.75, True),
                               task("generalist", "single-turn", 0.5, True)])
    tables = vtb_tables([result("weak", {"rubrics": weak}), result("strong", {"rubrics": strong})])
    three, seven = tables["vtb_table3"], tables["vtb_table7"]
    # as the paper groups them: Overall, the five domains over the single-turn tasks, the five over the multi-turn
    assert three.columns == ["Model", "Overall", "Single-turn STEM", "Single-turn Medical", "Single-turn Finance",
                             "Single-turn Sports", "Single-turn Generalist", "Multi-turn STEM", "Multi-turn Medical",
                             "Multi-turn Finance", "Multi-turn Sports", "Multi-turn Generalist", "Single-turn",
                             "Multi-turn", "Tasks"]
    assert three.column("Model") == seven.column("Model") == ["strong", "weak"]
    assert three.rows[1] == ["weak", 50.0, 100.0, 0.0, None, None, None, 0.0, None, None, 100.0, None, 50.0, 50.0, 4]
    assert three.rows[0] == ["strong", 100.0, 100.0, None, None, None, 100.0, None, None, 100.0, None, None, 100.0,
                             100.0, 3]
    assert seven.rows[1][:4] == ["weak", (0.5 + 0.25 + 0.125 + 1.0) / 4, 0.5, 0.125]
    assert "| strong | 100.00 | 100.00 | – |" in three.to_markdown()
    assert "| weak | 0.4688 | 0.5000 | 0.1250 | – | – | – | 0.2500 |" in seven.to_markdown()
    # every VisualToolBench table is ordered by APR, not by the M3 Average Score
    assert tables["vtb_turns"].column("Model") == ["strong", "weak"]


def test_vtb_tables_3_and_7_put_a_domain_outside_the_paper_after_its_columns() -> None:
    rubrics = aggregate_values([task("law", "single-turn", 0.5, True), task("sports", "multi-turn", 0.25, False),
                                task("law", "multi-turn", 1.0, True)])
    three = vtb_tables([result("m", {"rubrics": rubrics})])["vtb_table3"]
    assert three.columns == ["Model", "Overall", "Single-turn Sports", "Multi-turn Sports", "Single-turn law",
                             "Multi-turn law", "Single-turn", "Multi-turn", "Tasks"]
    assert three.rows == [["m", 100 * (2 / 3), None, 0.0, 100.0, 100.0, 100.0, 50.0, 3]]
    assert "the other domains' cells (law)" in three.note


def test_vtb_table3_prints_the_paper_apr_to_two_decimals() -> None:
    best = result("gemini-3-pro", {"rubrics": {"APR": 0.2739, "ARS": 0.5, "tasks": 1204, "profile": "published",
                                               "by_domain_turncase": {}, "by_turncase": {}}})
    assert "| gemini-3-pro | 27.39 |" in vtb_tables([best])["vtb_table3"].to_markdown()


def test_vtb_table8_has_the_total_then_single_and_multi_turn_tool_use() -> None:
    split = {"single-turn": {"calls": 6, "tasks": 4, "proactivity": 0.75, "success_rate": 5 / 6,
                             "success_rate_flagged": 1.0, "volume": 1.5},
             "multi-turn": {"calls": 2, "tasks": 2, "proactivity": 0.5, "success_rate": 1.0,
                            "success_rate_flagged": 1.0, "volume": 1.0}}
    table = table8([result("m", {"tool_use": {"by_turncase": split}})])
    assert table is not None and table.columns == [
        "Model", "Total #", "Single-turn Proactivity", "Single-turn Success Rate", "Single-turn Volume",
        "Multi-turn Proactivity", "Multi-turn Success Rate", "Multi-turn Volume", "Single-turn Tasks",
        "Multi-turn Tasks"]
    assert table.rows == [["m", 8, 0.75, 5 / 6, 1.5, 0.5, 1.0, 1.0, 4, 2]]
    assert table8([result("m", {"tool_use": {"volume": 1.0}})]) is None


def test_mcpverse_table2_groups_the_runs_by_mode_in_percent_to_one_decimal() -> None:
    def rates(l1: float, l2: float, l3: float) -> dict:
        return {"answer_sr": (l1 + l2 + l3) / 3, "answer_sr_l1": l1, "answer_sr_l2": l2, "answer_sr_l3": l3,
                "answer_judged": 10, "answer_skipped": 1}
    runs = [result("gpt-5", rates(0.8, 0.7, 0.543), "run/oracle/gpt-5/results_eval.json"),
            result("claude-4-sonnet", rates(0.7, 0.6, 0.572), "run/standard/claude-4-sonnet/results_eval.json"),
            result("claude-4-sonnet", rates(0.75, 0.65, 0.5), "run/o/c/results_eval.json", {"mode": "Oracle"}),
            result("claude-4-sonnet", rates(0.5, 0.45, 0.376), "run/MAX-SCALE/c/results_eval.json")]
    table = mcpverse_table(runs)
    assert table is not None and table.columns == [
        "Model", "Oracle SR", "Oracle L1", "Oracle L2", "Oracle L3", "Standard SR", "Standard L1", "Standard L2",
        "Standard L3", "Max-Scale SR", "Max-Scale L1", "Max-Scale L2", "Max-Scale L3", "Answers Judged",
        "Answers Skipped"]
    assert table.column("Model") == ["gpt-5", "claude-4-sonnet"]  # by Oracle SR: 68.1 over 63.3
    markdown = table.to_markdown()
    assert "| gpt-5 | 68.1 | 80.0 | 70.0 | 54.3 | – | – | – | – | – | – | – | – | 10 | 1 |" in markdown
    assert "| claude-4-sonnet | 63.3 | 75.0 | 65.0 | 50.0 | 62.4 | 70.0 | 60.0 | 57.2 | 44.2 |" in markdown
    plain = mcpverse_table([result("a", rates(0.5, 0.5, 0.5)), result("b", rates(1.0, 0.5, 0.5))])
    assert plain is not None and plain.columns[:5] == ["Model", "SR", "L1", "L2", "L3"]
    assert plain.column("Model") == ["b", "a"]
    assert mcpverse_table([result("x", {"check_tasks": 3})]) is None


def test_tobench_table2_puts_avg_after_its_six_cells_with_difficulties_easy_medium_hard() -> None:
    def acc(value: float) -> dict:
        return {"check_accuracy_evaluated": value}
    groups = {f"{family} / {level}": acc(v) for family, values in (("Customer Service", (0.6, 0.4, 0.2)),
                                                                   ("Intelligent Creation", (0.5, 0.3, 0.1)))
              for level, v in zip(("easy", "medium", "hard"), values)}
    low = {"check_tasks": 100, "check_errors": 0, "check_accuracy_evaluated": 0.32, "check_by_group": groups}
    high = {**low, "check_accuracy_evaluated": 0.41}
    table = tobench_table([result("gpt", low), result("qwen3.5-plus", high)])
    assert table is not None and table.columns[:8] == [
        "Model", "Customer Service / easy", "Customer Service / medium", "Customer Service / hard",
        "Intelligent Creation / easy", "Intelligent Creation / medium", "Intelligent Creation / hard", "Avg"]
    assert table.column("Model") == ["qwen3.5-plus", "gpt"]
    assert "| qwen3.5-plus | 60.00 | 40.00 | 20.00 | 50.00 | 30.00 | 10.00 | 41.00 |" in table.to_markdown()
