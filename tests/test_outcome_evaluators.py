"""Outcome checks on the engine side: the verdict parser and the majority, SR per level and its macro
mean, the verifiers' accuracy (against plain per-task versions written here), the check modules run in
their own processes (raising, hanging, dying, returning junk), their paths, and the files' readers."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from engine.contract import InputError, read_trajectories
from engine.evaluators import answer_equivalence as ae
from engine.evaluators import verifiers as vf
from engine.evaluators.base import TaskInputs
from engine.evaluators.protocol import JudgeContext, ReadSettings, RunFiles
from engine.judging import reducer


def test_parse_verdict_takes_the_last_score_after_the_reasoning() -> None:
    assert ae.parse_verdict('The values differ ("score": 1 would be wrong).\n{"score": 0}') == 0
    assert ae.parse_verdict("Same number.\n```json\n{ \"score\" : 1 }\n```") == 1
    assert ae.parse_verdict("{'score': '1'}") == 1
    assert ae.parse_verdict('{"score": 1.0}') == 1
    for bad in ("", "Looks right.", '{"score": 2}', '{"score": 0.5}', '{"verdict": 1}'):
        with pytest.raises(ValueError):
            ae.parse_verdict(bad)


def test_strict_majority_ties_are_zero() -> None:
    majority = reducer(ae.REDUCERS["strict"])
    assert [majority(v) for v in ([1], [0], [1, 0], [1, 1, 0], [0, 0, 1], [1, 1, 0, 0], [1, 1, 1, 0])] == \
        [1, 0, 0, 1, 0, 0, 1]


def plain_sr(tasks: list[tuple[str, int | None]]) -> tuple[float | None, float | None, dict[str, float]]:
    """Macro SR, micro SR and SR per level, one task at a time."""
    totals: dict[str, list[int]] = {}
    judged = []
    for level, score in tasks:
        if score is None:
            continue
        judged.append(score)
        totals.setdefault(level, []).append(score)
    per_level = {level: sum(v) / len(v) for level, v in totals.items()}
    macro = sum(per_level.values()) / len(per_level) if per_level else None
    return macro, (sum(judged) / len(judged) if judged else None), per_level


@pytest.mark.parametrize("seed", range(6))
def test_success_rates_match_a_plain_version(seed: int) -> None:
    rng = random.Random(seed)
    levels = ae.LEVELS if seed % 3 else ("L1", "L2")  # some draws leave a level out
    tasks = [(rng.choice(levels), rng.choice([0, 1, 1, None])) for _ in range(rng.randint(1, 30))]
    ids = [f"t{i}" for i in range(len(tasks))]
    out = ae.success_rates({i: t[0] for i, t in zip(ids, tasks)}, {i: t[1] for i, t in zip(ids, tasks)})
    macro, micro, per_level = plain_sr(tasks)
    assert out["answer_sr"] == pytest.approx(macro) if macro is not None else out["answer_sr"] is None
    assert out["answer_sr_micro"] == pytest.approx(micro) if micro is not None else out["answer_sr_micro"] is None
    for level in ae.LEVELS:
        expected = per_level.get(level)
        got = out[f"answer_sr_{level.lower()}"]
        assert got is None if expected is None else got == pytest.approx(expected)
    assert out["answer_judged"] + out["answer_skipped"] == len(tasks)
    assert out["answer_skipped"] == sum(1 for _, s in tasks if s is None)


def test_success_rates_are_summed_as_mcpverse_sums_them() -> None:
    """MCPVerse's statistics are pandas means (a level's a compensated sum, the column's and the levels'
    NumPy's pairwise sum, the levels from the highest rate down): thirty fractional scores give its
    numbers to the last digit, which plain sums in order miss (L2 0.3999999999999999, micro
    0.38000000000000017)."""
    spec = ["0.1"] * 10 + ["0.7"] * 11 + ["0.3"] * 9
    ids = [f"Q{i}" for i in range(len(spec))]
    levels = {i: ("L1", "L2", "L3")[k % 3] for k, i in enumerate(ids)}
    out = ae.success_rates(levels, {i: float(v) for i, v in zip(ids, spec)})
    assert (out["answer_sr_l1"], out["answer_sr_l2"], out["answer_sr_l3"]) == (0.33999999999999997, 0.4, 0.4)
    assert (out["answer_sr"], out["answer_sr_micro"]) == (0.38000000000000006, 0.38000000000000006)


def test_macro_over_levels_differs_from_micro() -> None:
    # L1: 3 of 3; L2: 0 of 1; L3: no judged task (skipped only) -> macro (1 + 0) / 2, micro 3 / 4
    levels = {"a": "L1", "b": "L1", "c": "L1", "d": "L2", "e": "L3"}
    out = ae.success_rates(levels, {"a": 1, "b": 1, "c": 1, "d": 0, "e": None})
    assert out["answer_sr"] == 0.5 and out["answer_sr_micro"] == 0.75 and out["answer_sr_l3"] is None
    assert (out["answer_judged"], out["answer_skipped"]) == (4, 1)


@pytest.mark.parametrize("seed", range(4))
def test_accuracy_matches_a_plain_version(seed: int) -> None:
    rng = random.Random(seed)
    runs = [None if rng.random() < 0.2 else [rng.choice([0, 1, 1, 1]) for _ in range(rng.randint(1, 5))]
            for _ in range(rng.randint(1, 25))]
    successes = []
    for checks in runs:
        if checks is None:
            successes.append(None)
            continue
        s = 1
        for e in checks:
            s *= e
        successes.append(s)
    out = vf.accuracy(successes)
    passed = sum(s for s in successes if s is not None)
    evaluated = sum(1 for s in successes if s is not None)
    assert out["check_accuracy"] == pytest.approx(passed / len(runs))
    assert out["check_tasks"] == len(runs) and out["check_errors"] == len(runs) - evaluated
    if evaluated:
        assert out["check_accuracy_evaluated"] == pytest.approx(passed / evaluated)
    else:
        assert out["check_accuracy_evaluated"] is None


def write_check(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text(body, encoding="utf-8")
    return path


CHECKS = {
    "good.py": "def check(trajectory, workspace, tool_log):\n"
               "    return [True, (workspace / 'out.txt').read_text() == 'ok', len(tool_log) == 1,"
               " trajectory['final_reply'] == 'done']\n",
    "failing.py": "def check(trajectory, workspace, tool_log):\n    return [1, 0]\n",
    "raises.py": "def check(trajectory, workspace, tool_log):\n    raise RuntimeError('no\\nsuch sheet')\n",
    "hangs.py": "import time\ndef check(trajectory, workspace, tool_log):\n    time.sleep(60)\n    return [1]\n",
    "dies.py": "import os, sys\ndef check(trajectory, workspace, tool_log):\n"
               "    print('fatal: gone', file=sys.stderr)\n    os._exit(3)\n",
    "empty.py": "def check(trajectory, workspace, tool_log):\n    return []\n",
    "junk.py": "def check(trajectory, workspace, tool_log):\n    return [1, 'yes']\n",
    "two.py": "def check(trajectory, workspace, tool_log):\n    return [1, 2]\n",
    "notlist.py": "def check(trajectory, workspace, tool_log):\n    return 1\n",
    "object.py": "def check(trajectory, workspace, tool_log):\n    return [object()]\n",
    "nofunc.py": "x = 1\n",
    "syntax.py": "def check(:\n",
}


@pytest.fixture
def task_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "set"
    (folder / "checks").mkdir(parents=True)
    for name, body in CHECKS.items():
        write_check(folder / "checks", name, body)
    (folder / "tasks.json").write_text("[]", encoding="utf-8")
    (tmp_path / "outside.py").write_text(CHECKS["good.py"], encoding="utf-8")
    return folder


def run_judge(folder: Path, check: str | None, workspace: Path | None, timeout: float = 20.0,
              prediction: bool = True) -> dict:
    preds = folder / "preds.json"
    preds.write_text(json.dumps([{"id": "t1", "steps": [], "final_reply": "done"}]), encoding="utf-8")
    trajectory = read_trajectories(preds).tasks["t1"] if prediction else None
    ctx = JudgeContext(pool=None, attempts=1, options=vf.CheckOptions(timeout=timeout),
                       files=RunFiles(preds, tasks=folder / "tasks.json"))
    task = {"id": "t1", "question": "q", "check": check}
    log = [{"step": 1, "index": 1, "server": "s", "tool": "t", "arguments": {}, "result": "", "is_error": False}]
    return asyncio.run(vf.judge(ctx, TaskInputs("t1", prediction=trajectory, task=task, workspace=workspace,
                                                tool_log=log)))


def test_check_modules_run_apart_and_errors_are_reported(task_folder: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "out.txt").write_text("ok", encoding="utf-8")
    good = run_judge(task_folder, "checks/good.py", ws)
    assert good == {"check": "checks/good.py", "checks": [1, 1, 1, 1], "passed": True, "error": None}
    assert run_judge(task_folder, "checks/failing.py", ws)["passed"] is False
    expected = {
        "raises.py": "RuntimeError: no such sheet",
        "dies.py": "the check process exited with status 3: fatal: gone",
        "empty.py": "returned [], expected a non-empty list of 0/1",
        "junk.py": 'returned [1, "yes"]: "yes" is not 0/1',
        "two.py": "returned [1, 2]: 2 is not 0/1",
        "notlist.py": "returned 1, expected a non-empty list of 0/1",
        "object.py": "returned list [<object object",
        "nofunc.py": "AttributeError: the module defines no function check",
        "syntax.py": "SyntaxError",
    }
    for name, reason in expected.items():
        entry = run_judge(task_folder, f"checks/{name}", ws)
        assert entry["passed"] is None and entry["checks"] is None, name
        assert entry["error"].startswith(reason), (name, entry["error"])
        assert "\n" not in entry["error"]
    hung = run_judge(task_folder, "checks/hangs.py", ws, timeout=1.0)
    assert hung["error"] == "timed out after 1 s"
    # no prediction: an agent failure, the check is not run; no check: skipped
    assert run_judge(task_folder, "checks/raises.py", ws, prediction=False)["passed"] is False
    assert run_judge(task_folder, None, ws)["passed"] is None


def test_check_paths_must_stay_beside_the_tasks(task_folder: Path) -> None:
    for bad, problem in (("../outside.py", "leaves the tasks folder"), (str(task_folder.parent / "outside.py"),
                                                                         "leaves the tasks folder"),
                         ("checks/missing.py", "no Python file"), ("tasks.json", "no Python file"),
                         ("", "must be a path"), (3, "must be a path")):
        with pytest.raises(InputError, match=rf"tasks.json: id t1: field 'check': .*{problem}"):
            run_judge(task_folder, bad, None)


def test_readers_check_the_files(tmp_path: Path) -> None:
    answers = tmp_path / "p_answers.json"
    answers.write_text(json.dumps(ae.AnswerEquivalence().export({
        "a": {"level": "L1", "score": 1, "judges": {"m": 1}},
        "b": {"level": "L2", "score": 0, "judges": {}, "reason": "no final answer"},
        "c": {"level": None, "score": None, "judges": {}, "reason": "no ground truth (skipped)"}}, {})))
    verdicts = ae.AnswerEquivalence().read(answers, ReadSettings())
    assert verdicts.per_id["a"] == {"answer_level": "L1", "answer_success": 1}
    assert "answer_success" not in verdicts.per_id["c"]
    assert ae.AnswerEquivalence().aggregate(verdicts, ["a", "b", "c"])["answer_sr"] == 0.5
    answers.write_text(json.dumps({"per_id": {"a": {"level": 4, "score": 1}}}))
    with pytest.raises(InputError, match="id a: field 'level'"):
        ae.AnswerEquivalence().read(answers, ReadSettings())
    answers.write_text(json.dumps({"per_id": {"a": {"level": "L1", "score": True}}}))
    with pytest.raises(InputError, match="id a: field 'score'"):
        ae.AnswerEquivalence().read(answers, ReadSettings())

    checks = tmp_path / "p_checks.json"
    document = vf.Verifiers().export({"x": {"checks": [1, 1], "passed": True, "error": None},
                            "y": {"checks": None, "passed": None, "error": "KeyError: 'a'"},
                            "z": {"checks": None, "passed": None, "error": None, "reason": "skipped"}}, {})
    assert document["aggregate"] == {"check_accuracy": 0.5, "check_accuracy_evaluated": 1.0, "check_tasks": 2,
                                     "check_errors": 1, "error_ids": ["y"], "skipped": 1}
    checks.write_text(json.dumps(document))
    assert vf.Verifiers().read(checks, ReadSettings()).per_id == {"x": {"check_success": 1, "check_error": None},
                                      "y": {"check_success": None, "check_error": "KeyError: 'a'"}}
    checks.write_text(json.dumps({"per_id": {"x": {"checks": [1, 0], "passed": True, "error": None}}}))
    with pytest.raises(InputError, match="id x: field 'passed'"):
        vf.Verifiers().read(checks, ReadSettings())


def test_outcomes_table_shows_the_columns_some_model_has() -> None:
    from engine.reports.read import ModelResult
    from engine.reports.tables import outcomes_table

    a = ModelResult(name="a", path=Path("a.json"), aggregate={"answer_sr": 0.5, "answer_sr_l1": 1.0,
                                                              "answer_sr_l2": 0.0, "answer_sr_micro": 0.75},
                    by_type={}, meta={})
    b = ModelResult(name="b", path=Path("b.json"), aggregate={"check_accuracy": 0.4, "check_errors": 1},
                    by_type={}, meta={})
    none = ModelResult(name="c", path=Path("c.json"), aggregate={}, by_type={}, meta={})
    table = outcomes_table([a, b, none])
    assert table is not None
    assert table.columns == ["Model", "SR", "SR L1", "SR L2", "SR (micro)", "Accuracy (errors as failures)",
                             "Evaluator Errors"]
    assert table.rows == [["a", 0.5, 1.0, 0.0, 0.75, None, None], ["b", None, None, None, None, 0.4, 1]]
    assert outcomes_table([none]) is None


@pytest.mark.slow
def test_a_partial_answers_file_is_scored_with_a_warning_naming_what_is_missing(tmp_path: Path,
                                                                                embedding_cache: Path) -> None:
    """A judge run that stopped after one task left one entry of seven: the score names the six without an
    answer and says that nothing in the file can be scored (its one entry is skipped)."""
    root = Path(__file__).resolve().parents[1]
    reference = root / "rollout" / "demo" / "mcpverse" / "reference.json"
    preds = tmp_path / "m_test_mcp_fuzzy.json"
    preds.write_text(reference.read_text())
    ids = list(read_trajectories(reference).tasks)
    (tmp_path / "m_test_mcp_fuzzy_answers.json").write_text(json.dumps(ae.AnswerEquivalence().export(
        {ids[-1]: {"level": "L3", "score": None, "judges": {}, "reason": "no ground truth (skipped)"}}, {})))
    done = subprocess.run([sys.executable, str(root / "scripts" / "score.py"), f"data.gt={reference}",
                           f"inputs.file={preds}", f"output_dir={tmp_path / 'out'}",
                           f"encoder.cache_dir={embedding_cache}", "device=cpu", "reports=false", "progress=false"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    answers = tmp_path / "m_test_mcp_fuzzy_answers.json"
    assert (f"{answers}: 1 of 7 scored task(s) have an entry, 6 have none (judge them: run the judge app again): "
            + ", ".join(sorted(ids)[:-1])) in done.stderr
    assert f"{answers}: nothing in it can be scored: answer_sr is null (1 entr(ies), none with a score)" in done.stderr


def test_replies_the_published_judger_reads_otherwise_are_counted_in_the_aggregate() -> None:
    fenced = "Same.\n```json\n{\"score\": %s}\n```"
    assert ae.published_oddity(fenced % "true") == "score_boolean" and ae.parse_published(fenced % "true") == 1
    assert ae.published_oddity(fenced % "2") == "score_out_of_range"
    with pytest.raises(ValueError, match="outside"):
        ae.parse_published(fenced % "2")
    assert ae.published_oddity(fenced % "1") is None and ae.published_oddity("no block") is None
    per_id = {"a": {"level": "L1", "score": 1, "judges": {"j": 1}, "odd_scores": {"score_boolean": 1}},
              "b": {"level": "L1", "score": 0, "judges": {"j": 0},
                    "odd_scores": {"score_out_of_range": 2, "score_boolean": 1}},
              "c": {"level": "L2", "score": 1, "judges": {"j": 1}}}
    agg = ae.AnswerEquivalence().export(per_id, {})["aggregate"]
    assert (agg["score_boolean"], agg["score_out_of_range"]) == (2, 2)
