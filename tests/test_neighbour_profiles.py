"""The neighbours' published profiles: MCPVerse's judge-reply reading and its level groups, the ground
truth refused when it is NaN, MCPVerse's check scripts and answer templates run in their own processes,
and the tau2-bench and MCPMark conventions of repeated runs (against plain versions written here)."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest

from engine.contract import ConfigError, InputError, parse_trajectories
from engine.evaluators import answer_equivalence as ae
from engine.evaluators.base import TaskInputs
from engine.evaluators.protocol import JudgeContext as AnswerContext
from engine.evaluators.protocol import RunFiles
from engine.trial_conventions import conventions_of, mcpmark, tau2


def test_published_reading_takes_the_first_fenced_block_and_fractions() -> None:
    two = 'First ```json\n{"score": 0}\n``` then ```json\n{"score": 1}\n```'
    assert ae.parse_published(two) == 0 and ae.parse_verdict(two) == 1
    assert ae.parse_published('Half right.\n```json\n{"score": 0.5}\n```') == 0.5
    assert ae.parse_published('```json\n{"score": true}\n```') == 1
    assert ae.parse_published('```json {"score": "1"} ```') == 1
    for bad in ('{"score": 1}', "```\n{\"score\": 1}\n```", '```json\n{"verdict": 1}\n```',
                "```json\n{'score': 1}\n```", '```json\n{"score": 2}\n```', '```json\n{"score": "yes"}\n```'):
        with pytest.raises(ValueError):
            ae.parse_published(bad)
    with pytest.raises(ValueError):
        ae.parse_verdict('```json\n{"score": 0.5}\n```')


def test_a_task_without_level_is_its_own_group() -> None:
    levels = {"a": "L1", "b": "L1", "c": None, "d": "L2", "e": "L3"}
    out = ae.success_rates(levels, {"a": 1, "b": 0.5, "c": 1, "d": None, "e": 0})
    # groups: L1 0.75, (no level) 1, L3 0; L2 has no judged task and is left out
    assert out["answer_sr"] == pytest.approx((0.75 + 1 + 0) / 3)
    assert out["answer_sr_l2"] is None and out["answer_sr_micro"] == pytest.approx(2.5 / 4)
    doc = ae.AnswerEquivalence().export({i: {"level": levels[i], "score": s, "judges": {}} for i, s in
                       {"a": 1, "b": 0.5, "c": 1, "d": None, "e": 0}.items()}, {})
    assert doc["aggregate"]["levels"] == {"L1": 0.75, ae.NO_LEVEL: 1.0, "L3": 0.0}
    assert doc["meta"]["parser"] == "published"


def _ctx(tasks: Path, parser: str = "published", timeout: float = 60) -> AnswerContext[ae.AnswerOptions]:
    """The context the judge app gives answer equivalence under these options, its tasks file `tasks`."""
    return AnswerContext(pool=None, attempts=1, options=ae.AnswerOptions(parser, timeout),
                         files=RunFiles(Path("predictions.json"), tasks=tasks))


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "  ", True, ["x"]])
def test_ground_truth_nan_is_refused(tmp_path: Path, bad: object) -> None:
    inputs = TaskInputs("q7", task={"question": "How many?", "level": "L1", "ground_truth": bad})
    with pytest.raises(InputError, match="id q7: field 'ground_truth'"):
        asyncio.run(ae.judge(_ctx(tmp_path), inputs))


def test_strict_reading_refuses_what_published_accepts(tmp_path: Path) -> None:
    inputs = TaskInputs("q1", task={"question": "Q?", "level": None, "ground_truth": None})
    assert asyncio.run(ae.judge(_ctx(tmp_path), inputs))["reason"] == "no ground truth (skipped)"
    inputs = TaskInputs("q1", task={"question": "Q?", "level": "L4", "ground_truth": "x"})
    with pytest.raises(InputError, match="field 'level'"):
        asyncio.run(ae.judge(_ctx(tmp_path, parser="strict"), inputs))
    with pytest.raises(ConfigError, match="parser"):
        ae.parser_of({"parser": "lenient"})


def _prediction(answer: str):
    return parse_trajectories(Path("p.json"), [{"id": "q", "steps": [], "final_reply": answer}]).tasks["q"]


def test_check_scripts_and_templates_run_in_their_own_processes(tmp_path: Path) -> None:
    root = tmp_path / "mcpverse"
    (root / "eval_scripts").mkdir(parents=True)
    (root / "templates").mkdir()
    (root / "eval_scripts" / "__init__.py").write_text("")
    (root / "eval_scripts" / "Q1.py").write_text(
        "import os\n\ndef run_test(pred, file_path):\n"
        "    return os.path.isfile(file_path) and open(file_path).read().strip() == 'hello'\n")
    (root / "eval_scripts" / "Q2.py").write_text("def run_test(pred, file_path):\n    raise KeyError('boom')\n")
    (root / "templates" / "helper.py").write_text("VALUE = 'Chengdu'\n")
    (root / "templates" / "tq1.py").write_text("from .helper import VALUE\n\ndef get_reference():\n    return VALUE\n")
    (root / "templates" / "tq2.py").write_text("import time\n\ndef get_reference():\n    time.sleep(30)\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("hello\n")
    task = {"question": "Write hello", "level": "L1",
            "ground_truth": "./outputs/{OUTPUT_SUB_FOLDER}/task_outputs/a.txt",
            "eval_script": "eval_scripts/Q1.py"}
    ctx = _ctx(root, timeout=5)
    one = asyncio.run(ae.judge(ctx, TaskInputs("Q1", prediction=_prediction("done"), task=task, workspace=workspace)))
    assert one["score"] == 1
    (workspace / "a.txt").write_text("bye")
    assert asyncio.run(ae.judge(ctx, TaskInputs("Q1", prediction=_prediction("done"), task=task,
                                                workspace=workspace)))["score"] == 0
    erred = asyncio.run(ae.judge(ctx, TaskInputs("Q2", prediction=_prediction("done"), workspace=workspace,
                                                 task={**task, "eval_script": "eval_scripts/Q2.py"})))
    assert erred["score"] == 0 and "KeyError" in erred["error"]  # published: counted 0, named
    strict = _ctx(root, "strict", timeout=5)
    assert asyncio.run(ae.judge(strict, TaskInputs("Q2", prediction=_prediction("done"), workspace=workspace,
                                                   task={**task,
                                                         "eval_script": "eval_scripts/Q2.py"})))["score"] is None
    templ = {"question": "Which city?", "level": "L2", "ground_truth": "stale", "answer_template": "templates/tq1.py"}
    fetched = asyncio.run(ae.judge(ctx, TaskInputs("Q3", task=templ)))
    assert fetched["ground_truth"] == "Chengdu" and fetched["score"] == 0 and fetched["reference_fetched_at"]
    ctx_fast = _ctx(root, timeout=1)
    slow = asyncio.run(ae.judge(ctx_fast, TaskInputs("Q4", task={**templ, "answer_template": "templates/tq2.py"})))
    assert slow["score"] is None and "timed out" in slow["error"]


@pytest.mark.parametrize("returned", ["float('nan')", "float('inf')", "['x']"])
def test_a_template_answer_a_tasks_file_could_not_hold_is_not_judged(tmp_path: Path, returned: str) -> None:
    root = tmp_path / "mcpverse"
    (root / "templates").mkdir(parents=True)
    (root / "templates" / "tq.py").write_text(f"def get_reference():\n    return {returned}\n")
    ctx = _ctx(root, timeout=5)
    task = {"question": "Which train?", "level": "L3", "ground_truth": "stale", "answer_template": "templates/tq.py"}
    entry = asyncio.run(ae.judge(ctx, TaskInputs("Q9", task=task)))
    assert entry["score"] is None and "ground_truth" not in entry
    assert entry["error"].startswith("answer template: returned ") and "no answer" in entry["error"]


def plain_tau2(rewards: dict[str, list[float]]) -> dict[str, float]:
    """tau2's figures one simulation at a time."""
    sims = [(t, r) for t, rs in rewards.items() for r in rs]
    max_k = min(len(rs) for rs in rewards.values() if rs)
    out = {"avg_reward": sum(r for _, r in sims) / len(sims)}
    for k in range(1, max_k + 1):
        values = []
        for rs in rewards.values():
            if rs:
                c = sum(1 for r in rs if r == 1)
                values.append(math.comb(c, k) / math.comb(len(rs), k))
        out[str(k)] = sum(values) / len(values)
    return out


def test_tau2_stops_at_the_smallest_count_and_averages_over_trials() -> None:
    rewards = {"a": [1.0, 1.0, 0.5, 1.0], "b": [1.0, 0.0], "c": [], "d": [0.0, 1.0, 1.0]}
    out, plain = tau2(rewards), plain_tau2(rewards)
    assert out["max_k"] == 2 and set(out["pass_hat_k"]) == {"1", "2"} and out["tasks"] == 3
    assert out["avg_reward"] == pytest.approx(plain["avg_reward"]) == pytest.approx(6.5 / 9)
    assert out["avg_success"] == pytest.approx(6 / 9)  # over trials: 0.5 is no success
    assert out["pass_hat_k"]["1"] == pytest.approx(plain["1"]) and out["pass_hat_k"]["2"] == pytest.approx(plain["2"])
    assert tau2({"a": []}) == {"avg_reward": 0.0, "avg_success": None, "pass_hat_k": {}, "max_k": 0,
                               "simulations": 0, "tasks": 0}


def test_mcpmark_reports_k_equal_n_with_the_population_std_and_refuses_missing_tasks() -> None:
    runs = {"a": [True, False, True], "b": [True, True, True], "c": [False, False, True]}
    out = mcpmark(runs, [])
    rates = [2 / 3, 1 / 3, 1.0]
    mean = sum(rates) / 3
    assert out["pass@1"] == {"avg": round(mean, 4), "std": round(math.sqrt(sum((r - mean) ** 2 for r in rates) / 3), 4)}
    assert (out["pass@3"], out["pass^3"], out["k"]) == (1.0, round(1 / 3, 4), 3) and "pass@2" not in out
    assert "a#2" in mcpmark(runs, ["a#2"])["refused"]
    assert conventions_of() == ("tau2", "mcpmark") and conventions_of("project") == ()
    with pytest.raises(ConfigError, match="trials.convention"):
        conventions_of("olmo")


def test_tobench_accuracy_defaults_to_the_evaluated_tasks_and_groups_by_family_and_difficulty(tmp_path: Path) -> None:
    from engine.evaluators import verifiers as vf
    (tmp_path / "ok.py").write_text("def check(trajectory, workspace, tool_log):\n    return [1, 1]\n")
    (tmp_path / "bad.py").write_text("def check(trajectory, workspace, tool_log):\n    raise KeyError('x')\n")
    tasks = tmp_path / "tasks.json"
    ctx = AnswerContext(pool=None, attempts=1, options=vf.CheckOptions(timeout=10),
                        files=RunFiles(Path("predictions.json"), tasks=tasks))
    pred = parse_trajectories(Path("p.json"), [{"id": "t", "steps": []}]).tasks["t"]
    entries = {}
    for tid, check, family, difficulty in (("a", "ok.py", "Customer Service", "easy"),
                                           ("b", "bad.py", "Customer Service", "easy"),
                                           ("c", "ok.py", "Intelligent Creation", "hard")):
        task = {"check": check, "type": family, "task_difficulty": difficulty}
        entries[tid] = asyncio.run(vf.judge(ctx, TaskInputs(tid, prediction=pred, task=task)))
    assert entries["a"]["group"] == {"type": "Customer Service", "task_difficulty": "easy"}
    agg = vf.Verifiers().export(entries, {})["aggregate"]
    assert (agg["check_accuracy_evaluated"], agg["check_accuracy"]) == (1.0, 2 / 3)
    assert agg["check_by_group"]["Customer Service / easy"] == {"check_accuracy": 0.5, "check_accuracy_evaluated": 1.0,
                                                          "check_tasks": 2, "check_errors": 1}
    assert vf.METRICS[0].key == "check_accuracy_evaluated" and vf.METRICS[0].label == "Accuracy"


def test_tobench_usage_per_task_where_the_rollout_recorded_it(tmp_path: Path) -> None:
    from engine.evaluators import verifiers as vf
    (tmp_path / "ok.py").write_text("def check(trajectory, workspace, tool_log):\n    return [1]\n")
    price = {"input": 1.25, "output": 10.0}
    ctx = AnswerContext(pool=None, attempts=1, options=vf.CheckOptions(timeout=10, price=price),
                        files=RunFiles(Path("predictions.json"), tasks=tmp_path / "tasks.json"))
    calls = [{"name": "math/add", "arguments": {"a": 1}}]
    records = [{"id": "a", "steps": [{"calls": calls * 2}, {"calls": calls}],
                "usage": {"prompt_tokens": 3000, "completion_tokens": 1000, "total_tokens": 4000}},
               {"id": "b", "steps": [], "usage": {"prompt_tokens": 1000, "completion_tokens": 0, "total_tokens": 1000}},
               {"id": "c", "steps": []}]
    preds = parse_trajectories(Path("p.json"), records).tasks
    entries = {tid: asyncio.run(vf.judge(ctx, TaskInputs(tid, prediction=preds[tid], task={"check": "ok.py"})))
               for tid in preds}
    assert entries["a"]["usage"] == {"tool_calls": 3, "tokens": 4000, "cost_usd": (3000 * 1.25 + 1000 * 10.0) / 1e6}
    assert "usage" not in entries["c"]
    usage = vf.Verifiers().export(entries, {})["aggregate"]["check_usage"]
    assert usage == {"tool_calls": 1.5, "tokens_k": 2.5, "cost_usd": pytest.approx((0.01375 + 0.00125) / 2)}
