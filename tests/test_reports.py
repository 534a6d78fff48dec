"""Leaderboard, per-family and budget tables and plots from finished runs."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from preloaded import run_python

from engine.contract import InputError
from engine.reports.read import collect_run
from engine.reports.tables import family_tables, leaderboard_table
from engine.reports.write import write_reports

METRICS = ("recall", "precision", "avg_sim_all_cov", "step_coherence_cov", "order_consistency_cov",
           "merge_purity_cov")


def block(base: float, rounds: float = 2.0, calls: float = 5.0, **extra) -> dict:
    out = {m: base + 0.01 * i for i, m in enumerate(METRICS)}
    out.update({"avg_sim_strong_cov": base, "avg_Rounds": rounds, "avg_tool_calls": calls, "num_ids": 3})
    out.update(extra)
    return out


def write_run(run: Path, judged: bool) -> None:
    judge = {"task_completion": 0.9, "information_grounding": 0.7} if judged else {}
    models = {"alpha": 0.5, "beta": 0.7, "gamma": 0.3}
    for name, base in models.items():
        folder = run / name
        folder.mkdir(parents=True)
        extra = judge if name != "gamma" else {}
        result = {"aggregate": block(base, **extra),
                  "by_type": {"maps": block(base + 0.1, 3.0, 6.0, **extra), "shop": block(base - 0.1, 1.0, 2.0)},
                  "per_id": [], "meta": {"model": name, "profile": "reference"}}
        (folder / "results_eval.json").write_text(json.dumps(result))


def test_leaderboard_without_judge(tmp_path: Path) -> None:
    write_run(tmp_path, judged=False)
    table = leaderboard_table(collect_run(tmp_path))
    assert table.columns == ["Model", "Recall", "Precision", "Argument Similarity", "Step Coherence",
                             "Order Consistency", "Merge Purity", "Average Score"]
    assert table.column("Model") == ["beta", "alpha", "gamma"]
    beta = table.rows[0]
    assert beta[1] == pytest.approx(0.7) and beta[3] == pytest.approx(0.72)
    assert beta[-1] == pytest.approx(sum(0.7 + 0.01 * i for i in range(6)) / 6)


def test_judge_columns_only_when_present(tmp_path: Path) -> None:
    write_run(tmp_path, judged=True)
    table = leaderboard_table(collect_run(tmp_path))
    assert table.columns[-3:] == ["Task Completion", "Information Grounding", "Average Score"]
    rows = {r["Model"]: r for r in table.records()}
    assert rows["alpha"]["Task Completion"] == 0.9
    assert rows["gamma"]["Task Completion"] is None  # left out, not zero-filled
    alpha = [0.5 + 0.01 * i for i in range(6)] + [0.7]  # the six alignment columns and IG; TC is not averaged
    assert rows["alpha"]["Average Score"] == pytest.approx(sum(alpha) / 7)
    assert "| gamma |" in table.to_markdown() and "–" in table.to_markdown()
    assert "Information Grounding" in table.note and "Task Completion" not in table.note


def test_average_score_reproduces_the_published_gpt5_row(tmp_path: Path) -> None:
    block = {"recall": 0.627, "precision": 0.264, "avg_sim_all_cov": 0.583, "step_coherence_cov": 0.502,
             "order_consistency_cov": 0.290, "merge_purity_cov": 0.453, "avg_Rounds": 3.0, "avg_tool_calls": 6.0,
             "task_completion": 0.9, "information_grounding": 0.657}
    (tmp_path / "gpt5").mkdir()
    (tmp_path / "gpt5" / "results_eval.json").write_text(json.dumps({"aggregate": block, "meta": {"model": "gpt5"}}))
    table = leaderboard_table(collect_run(tmp_path))
    assert round(table.records()[0]["Average Score"], 3) == 0.482


def test_average_without_judges_says_so(tmp_path: Path) -> None:
    write_run(tmp_path, judged=False)
    table = leaderboard_table(collect_run(tmp_path))
    assert "no judge results" in table.note and table.note in table.to_markdown()


def test_judge_columns_outside_the_average_are_named_not_denied(tmp_path: Path) -> None:
    """A judge's column that the average leaves out (Task Completion) is shown; the note names it rather
    than saying there are no judge results right under it."""
    block = {"recall": 0.6, "precision": 0.5, "avg_sim_all_cov": 0.5, "step_coherence_cov": 0.5,
             "order_consistency_cov": 0.5, "merge_purity_cov": 0.5, "avg_Rounds": 3.0, "avg_tool_calls": 6.0,
             "task_completion": 0.9}
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "results_eval.json").write_text(json.dumps({"aggregate": block, "meta": {"model": "m"}}))
    table = leaderboard_table(collect_run(tmp_path))
    assert "Task Completion" in table.columns and "no judge results" not in table.note
    assert "Task Completion shown, not averaged" in table.note


def test_family_tables_and_files(tmp_path: Path) -> None:
    write_run(tmp_path, judged=False)
    families = family_tables(collect_run(tmp_path))
    assert list(families) == ["maps", "shop"]
    assert families["maps"].rows[0][1] == pytest.approx(0.8)
    written = write_reports(tmp_path)
    names = {p.name for p in written}
    assert {"leaderboard.md", "leaderboard.csv", "leaderboard.json", "families.md", "families.json",
            "budget.md", "budget.csv", "budget.json", "leaderboard.png", "families.png"} <= names
    budget = list(csv.DictReader(io.StringIO((tmp_path / "budget.csv").read_text())))
    assert [b["Model"] for b in budget] == ["beta", "alpha", "gamma"]
    assert float(budget[0]["Avg Steps"]) == 2.0 and float(budget[0]["maps Calls"]) == 6.0
    assert json.loads((tmp_path / "leaderboard.json").read_text())["rows"][0]["Model"] == "beta"
    for png in ("leaderboard.png", "families.png"):
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_threshold_plot_and_run_from_cli(tmp_path: Path, embedding_cache: Path) -> None:
    """A real scoring run with a grid writes the reports and the ablation curves (on the 3-task demo the
    app tests score too, so the session's cache holds its texts)."""

    root = Path(__file__).resolve().parents[1]
    proc = run_python([str(root / "scripts" / "score.py"), f"demo.dir={tmp_path / 'demo'}",
                           "demo.n_tasks=3", f"encoder.cache_dir={embedding_cache}", f"output_dir={tmp_path / 'run'}",
                           "device=cpu", "align.tau_weak_grid=[0.5,0.7]", "align.tau_strong_grid=[0.8,0.9]"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    run = tmp_path / "run"
    grid = json.loads((run / "threshold_grid.json").read_text())
    assert len(grid) == 2 * 2 * 5 and {r["tau_strong"] for r in grid} == {0.8, 0.9}
    assert (run / "threshold_ablation.png").read_bytes()[:4] == b"\x89PNG"
    assert (run / "leaderboard.md").read_text().startswith("| Model |")
    again = run_python([str(root / "scripts" / "report.py"), str(run), "--out",
                            str(tmp_path / "r")],
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and (tmp_path / "r" / "leaderboard.csv").is_file()


def test_bad_results_file(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "results_eval.json").write_text(json.dumps({"aggregate": {"recall": "high"}}))
    with pytest.raises(InputError, match="results_eval.json: field 'aggregate.recall'"):
        collect_run(tmp_path)


def test_call_outcomes_table_and_plot(tmp_path: Path) -> None:
    write_run(tmp_path, judged=True)
    counts = {"alpha": {"illegal_calling": 2, "unknown_tool": 1, "invalid_arguments": 3, "resource_not_found": 0,
                        "success": 16},
              "beta": {"illegal_calling": 0, "unknown_tool": 0, "invalid_arguments": 1, "resource_not_found": 1,
                       "success": 8}}
    for name, extra in counts.items():
        path = tmp_path / name / "results_eval.json"
        result = json.loads(path.read_text())
        result["aggregate"].update(extra)
        path.write_text(json.dumps(result))
    written = {p.name for p in write_reports(tmp_path)}
    assert {"calls.md", "calls.csv", "calls.json", "calls.png"} <= written
    table = json.loads((tmp_path / "calls.json").read_text())
    rows = {r["Model"]: r for r in table["rows"]}
    assert list(rows) == ["beta", "alpha"]  # leaderboard order; gamma has no call outcomes
    assert rows["alpha"]["Calls"] == 20 and rows["alpha"]["Illegal Calling Format"] == 2
    assert rows["alpha"]["Invalid Invocation Arguments %"] == 3 / 20 and rows["beta"]["Successful Call %"] == 0.8
    assert (tmp_path / "calls.png").read_bytes()[:4] == b"\x89PNG"


def test_no_call_outcomes_no_calls_table(tmp_path: Path) -> None:
    write_run(tmp_path, judged=True)
    assert not {"calls.md", "calls.png"} & {p.name for p in write_reports(tmp_path)}


def test_bad_call_count(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "results_eval.json").write_text(json.dumps({"aggregate": block(0.5, success=-1)}))
    with pytest.raises(InputError, match="field 'aggregate.success': expected a count >= 0"):
        collect_run(tmp_path)


def _legend_colors(fig) -> dict[str, tuple]:
    """model -> RGBA of its legend entry, over every legend of a figure."""
    from matplotlib.colors import to_rgba
    from matplotlib.lines import Line2D

    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()] + list(fig.legends)
    out = {}
    for legend in legends:
        for handle, text in zip(legend.legend_handles, legend.get_texts()):
            color = handle.get_color() if isinstance(handle, Line2D) else handle.get_facecolor()
            out[text.get_text()] = to_rgba(color)
    return out


def test_a_model_has_one_colour_in_every_figure_and_families_have_no_lines(tmp_path: Path) -> None:
    """The leaderboard lists models by rank (beta, alpha, gamma), the families and the threshold grid in
    other orders: each model keeps its colour; the per-family figure joins no families with a line."""
    from engine.reports.plots import family_figure, leaderboard_figure, threshold_figure

    write_run(tmp_path, judged=False)
    run = collect_run(tmp_path)
    board = leaderboard_table(run)
    assert board.column("Model") == ["beta", "alpha", "gamma"]
    families = family_tables(run)
    rows = [{"model": m, "tau_weak": w, "tau_strong": 0.8, "recall": 0.5} for m in ("gamma", "alpha", "beta")
            for w in (0.5, 0.7)]
    figures = {"leaderboard": leaderboard_figure(board), "families": family_figure(families, board.column("Model")),
               "families_unordered": family_figure(families), "thresholds": threshold_figure(rows)}
    colors = {name: _legend_colors(fig) for name, fig in figures.items()}
    assert all(set(c) == {"alpha", "beta", "gamma"} for c in colors.values()), colors
    assert len(set(colors["leaderboard"].values())) == 3
    for name, c in colors.items():
        assert c == colors["leaderboard"], name
    for fig in (figures["families"], figures["families_unordered"]):
        lines = fig.axes[0].get_lines()
        assert len(lines) == 3 and all(line.get_linestyle() == "None" for line in lines)


def test_the_outcome_checks_notes_describe_only_the_columns_shown() -> None:
    from engine.reports.read import ModelResult
    from engine.reports.tables import outcomes_table

    checks = ModelResult(name="b", path=Path("b.json"), aggregate={"check_accuracy": 0.4, "check_errors": 1},
                         by_type={}, meta={})
    table = outcomes_table([checks])
    assert table is not None and table.columns == ["Model", "Accuracy (errors as failures)", "Evaluator Errors"]
    assert table.note == ("Accuracy (errors as failures): over every checked task, an evaluator error counted as a "
                          "failure.")
    answers = ModelResult(name="a", path=Path("a.json"), aggregate={"answer_sr": 0.5, "answer_sr_micro": 0.75},
                          by_type={}, meta={})
    table = outcomes_table([answers, checks])
    assert table is not None and table.note.startswith("SR: mean over") and "SR (micro)" in table.note
    assert "Answers Skipped" not in table.note and "Accuracy:" not in table.note


def test_a_name_in_a_script_the_font_lacks_is_plotted_without_a_warning(tmp_path: Path) -> None:
    import warnings

    from matplotlib.figure import Figure

    from engine.reports.plots import save_figure

    fig = Figure()
    fig.add_subplot().set_title("na\u00efve \u6a21\u578b")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        save_figure(fig, tmp_path / "plot.png")
    assert (tmp_path / "plot.png").read_bytes().startswith(b"\x89PNG")


def test_a_threshold_grid_ends_with_its_pivot_and_names_its_files(tmp_path: Path) -> None:
    """The grid's closing lines: Average Score of each model under each threshold pair (the plain mean of
    the six alignment metrics of its row), then the grid's files named."""
    from engine.reports.summary import grid_headline

    keys = ("recall", "precision", "avg_sim_all_cov", "step_coherence_cov", "order_consistency_cov",
            "merge_purity_cov")
    rows = [{"model": m, "tau_weak": w, "tau_strong": 0.8, "avg_Rounds": 1.0, "avg_tool_calls": 1.0,
             **{k: base + w / 10 + i / 100 for i, k in enumerate(keys)}}
            for m, base in (("a", 0.5), ("b", 0.2)) for w in (0.5, 0.7)]
    text = grid_headline(rows, tmp_path).splitlines()
    assert text[1].split() == ["Model", "0.5/0.8", "0.7/0.8"]
    a = text[2].split()
    assert a[0] == "a" and float(a[1]) == pytest.approx(round(0.5 + 0.05 + 0.025, 4))
    assert float(a[2]) == pytest.approx(round(0.5 + 0.07 + 0.025, 4))
    assert str(tmp_path / "threshold_grid.json") in text[-1] and "threshold_ablation.png" in text[-1]
