"""Repeated runs: the estimators against a plain version, the slot inventory (losses in both
conventions, duplicate and missing slots), the success rule, and trials.json from the score command."""

from __future__ import annotations

import json
import subprocess
from math import comb
from pathlib import Path

import pytest
from hydra.errors import ConfigCompositionException
from preloaded import run_python

from engine.apps.compose import compose
from engine.apps.config import check_ranges, typed
from engine.contract import ConfigError, InputError, parse_trajectories
from engine.trial_estimators import pass_at_k, pass_hat_k, rate
from engine.trials import (
    AGENT_FAILURE,
    FINISHED,
    INFRASTRUCTURE,
    SuccessRule,
    Trial,
    check_distinct,
    check_trial_files,
    find_trials,
    inventory,
    mean_std,
    rates,
    slot_state,
    trial_path,
    trials_document,
)

ROOT = Path(__file__).resolve().parents[1]

# tau-bench's airline figures (pass^1 0.460, pass^4 0.225) from per-task success counts: 50 tasks, 8
# trials each (with 4 trials over 50 tasks pass^4 is a multiple of 0.02 and cannot be 0.225).
# {successful trials c: number of tasks}
AIRLINE = {0: 13, 1: 4, 2: 4, 3: 4, 4: 3, 5: 3, 6: 7, 7: 5, 8: 7}
AIRLINE_COUNTS = [(8, c) for c, tasks in AIRLINE.items() for _ in range(tasks)]


def plain_rates(counts: list[tuple[int, int]], k: int) -> tuple[float, float, float]:
    """pass@k, pass^k, avg@k straight from the formulas: means over tasks of combinations."""
    tasks = [(n, c) for n, c in counts if n >= k]
    at = sum(1 - comb(n - c, k) / comb(n, k) for n, c in tasks) / len(tasks)
    hat = sum(comb(c, k) / comb(n, k) for n, c in tasks) / len(tasks)
    avg = sum(c / n for n, c in tasks) / len(tasks)
    return at, hat, avg


def test_airline_example() -> None:
    assert len(AIRLINE_COUNTS) == 50
    assert round(rate(AIRLINE_COUNTS, 1, "pass_hat_k")[0], 3) == 0.460
    assert round(rate(AIRLINE_COUNTS, 4, "pass_hat_k")[0], 3) == 0.225
    assert rate(AIRLINE_COUNTS, 1, "pass_hat_k") == (92 / 200, 50)
    assert rate(AIRLINE_COUNTS, 4, "pass_hat_k")[0] == pytest.approx(788 / 3500, abs=0, rel=1e-15)


@pytest.mark.parametrize("k", range(1, 9))
def test_estimators_match_the_plain_formulas(k: int) -> None:
    counts = AIRLINE_COUNTS + [(5, 2), (3, 3), (2, 0)]
    at, hat, avg = plain_rates(counts, k)
    assert rate(counts, k, "pass_at_k")[0] == pytest.approx(at, rel=1e-12)
    assert rate(counts, k, "pass_hat_k")[0] == pytest.approx(hat, rel=1e-12)
    assert rate(counts, k, "avg_at_k")[0] == pytest.approx(avg, rel=1e-12)
    assert rate(counts, k, "pass_at_k")[1] == sum(1 for n, _ in counts if n >= k)


def test_estimator_edges() -> None:
    assert pass_at_k(4, 0, 2) == 0.0 and pass_at_k(4, 3, 2) == 1.0 and pass_at_k(4, 1, 1) == 0.25
    assert pass_hat_k(4, 4, 4) == 1.0 and pass_hat_k(4, 3, 4) == 0.0 and pass_hat_k(4, 2, 2) == 1 / 6
    with pytest.raises(ValueError):
        pass_hat_k(3, 1, 4)
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)


def record(tid: str, **extra) -> dict:
    return {"id": tid, "steps": [{"step": 1, "calls": [{"name": "s/t", "arguments": {"q": tid},
                                                         "result": "ok"}]}], **extra}


def trial(path: str, records: list[dict], tc: dict[str, float]) -> Trial:
    return Trial(Path(path), parse_trajectories(Path(path), records),
                 {tid: {"task_completion": v} for tid, v in tc.items()})


def test_slot_states() -> None:
    assert slot_state(record("a")) == (FINISHED, None)
    assert slot_state(None)[0] == INFRASTRUCTURE
    assert slot_state(record("a", error="API error after 5 retries"))[0] == INFRASTRUCTURE
    assert slot_state(record("a", error={"kind": "agent", "reason": "gave up", "attempts": 2})) == (
        AGENT_FAILURE, "error (agent): gave up")
    down = record("a")
    down["steps"][0]["calls"][0]["result"] = "Error: MCP server 'maps' is not running (exit status 1)"
    assert slot_state(down) == (INFRASTRUCTURE, "MCP server 'maps' did not start")


def test_infrastructure_loss_in_both_conventions() -> None:
    """Task a: 3 of 4 trials finished and successful, one lost; task b: one success of 4 finished."""
    rule = SuccessRule("task_completion", 0.5)
    trials = [trial("t1.json", [record("a"), record("b")], {"a": 0.9, "b": 0.8}),
              trial("t2.json", [record("a"), record("b")], {"a": 0.7, "b": 0.2}),
              trial("t3.json", [record("a", error="server down"), record("b")], {"b": 0.1}),
              trial("t4.json", [record("a"), record("b", error={"kind": "agent", "reason": "no answer",
                                                                 "attempts": 2})],
                    {"a": 1.0})]
    slots = inventory(["a", "b"], trials, rule)
    assert [(s.task_id, s.trial, s.state, s.success) for s in slots if s.state != FINISHED] == [
        ("a", 3, INFRASTRUCTURE, None), ("b", 4, AGENT_FAILURE, False)]
    out = rates(slots, ["a", "b"], 4)
    failures, excluded = out["pass_hat_k"]["losses_as_failures"], out["pass_hat_k"]["losses_excluded"]
    assert failures["1"] == {"value": (3 / 4 + 1 / 4) / 2, "tasks": 2}
    assert excluded["1"] == {"value": (3 / 3 + 1 / 4) / 2, "tasks": 2}
    assert failures["3"]["value"] == (comb(3, 3) / comb(4, 3) + 0) / 2
    assert excluded["3"] == {"value": (1.0 + 0.0) / 2, "tasks": 2}
    assert failures["4"] == {"value": 0.0, "tasks": 2}
    assert excluded["4"] == {"value": 0.0, "tasks": 1}  # task a has 3 trials left: not defined at k = 4
    assert out["pass_at_k"]["losses_as_failures"]["1"]["value"] == 0.5
    assert out["avg_at_k"]["losses_excluded"]["2"]["value"] == (1.0 + 0.25) / 2


def test_missing_slots_are_named() -> None:
    rule = SuccessRule()
    trials = [trial("t1.json", [record("a"), record("b")], {"a": 0.9, "b": 0.9}),
              trial("t2.json", [record("a")], {"a": 0.9}),
              Trial(Path("t3.json"), None, {})]
    doc = trials_document(["a", "b"], trials, rule, [{"recall": 0.5}, {"recall": 0.7}], ["task_completion"])
    inv = doc["inventory"]
    assert (inv["slots"], inv[FINISHED], inv[INFRASTRUCTURE]) == (6, 3, 3)
    assert [(m["id"], m["trial"]) for m in inv["missing"]] == [("b", 2), ("a", 3), ("b", 3)]
    assert "missing file t3.json" in inv["missing"][1]["reason"]
    assert doc["pass_hat_k"]["losses_as_failures"]["1"]["value"] == (2 / 3 + 1 / 3) / 2
    assert doc["pass_hat_k"]["losses_excluded"]["2"] == {"value": 1.0, "tasks": 1}
    assert doc["aggregate"]["recall"] == {"mean": pytest.approx(0.6), "std": pytest.approx(0.02 ** 0.5), "n": 2}
    assert doc["per_task"]["a"]["task_completion"]["n"] == 2


def test_duplicate_slots_are_refused() -> None:
    rule = SuccessRule()
    repeated = trial("t1.json", [record("a"), record("a")], {"a": 0.9})
    with pytest.raises(InputError, match=r"t1.json: id a: field 'id': .*duplicate slot"):
        inventory(["a"], [repeated], rule)
    misplaced = trial("t2.json", [record("a", trial=1)], {"a": 0.9})
    with pytest.raises(InputError, match=r"t2.json: id a: field 'trial': record says trial 1"):
        inventory(["a"], [trial("t1.json", [record("a", trial=1)], {"a": 0.9}), misplaced], rule)
    with pytest.raises(InputError, match="named as trial 1 and trial 3"):
        check_distinct([Path("x.json"), Path("y.json"), Path("./x.json")])


def test_success_needs_a_declared_verdict() -> None:
    with pytest.raises(InputError, match=r"t1.json: id b: field 'task_completion': a finished trial needs"):
        inventory(["a", "b"], [trial("t1.json", [record("a"), record("b")], {"a": 0.9})], SuccessRule())
    rubric = SuccessRule("critical_rubrics")
    fraction = Trial(Path("t1.json"), parse_trajectories(Path("t1.json"), [record("a")]), {"a": {"pass_rate": 0.75}})
    with pytest.raises(InputError, match=r"field 'pass_rate': must be a pass/fail verdict"):
        inventory(["a"], [fraction], rubric)
    verdict = Trial(Path("t1.json"), parse_trajectories(Path("t1.json"), [record("a")]), {"a": {"ok": True}})
    assert inventory(["a"], [verdict], SuccessRule("outcome_checks", key="ok"))[0].success is True
    assert SuccessRule("outcome_checks").field == "check_success"
    assert SuccessRule("critical_rubrics").field == "pass_rate"
    errored = Trial(Path("t1.json"), parse_trajectories(Path("t1.json"), [record("a")]), {"a": {"check_success": None}})
    assert inventory(["a"], [errored], SuccessRule("outcome_checks"))[0].success is False  # an evaluator error
    with pytest.raises(ConfigCompositionException, match="sum_of_fractions"):  # a choice: trials.success.rule's enum
        compose("score", ["trials.success.rule=sum_of_fractions"])
    with pytest.raises(ConfigError, match=r"^trials.success.threshold=2.0: must be a number in \[0, 1\]$"):
        check_ranges("score", compose("score", ["trials.success.threshold=2"]))
    with pytest.raises(ConfigError, match="^trials.success.key=: must be a per_id key or null$"):
        typed("score", compose("score", ["trials.success.key=''"]))



def test_mean_std() -> None:
    assert mean_std([0.5]) == {"mean": 0.5, "std": 0.0, "n": 1}
    out = mean_std([0.47, 0.49, 0.48])
    assert out["mean"] == pytest.approx(0.48) and out["std"] == pytest.approx(0.01, rel=1e-12)


def test_trial_files_are_found_by_name(tmp_path: Path) -> None:
    pred = tmp_path / "m_test_mcp_fuzzy.json"
    for i in (1, 2, 4):
        trial_path(pred, i).write_text("[]")
    (tmp_path / "m_test_mcp_fuzzy_trial3_taskcompletion.json").write_text("{}")
    assert [p.name for p in find_trials(pred)] == [f"m_test_mcp_fuzzy_trial{i}.json" for i in (1, 2, 3, 4)]
    assert len(find_trials(pred, 5)) == 5 and find_trials(tmp_path / "other.json") == []
    assert find_trials(tmp_path / "other.json", 4) == []  # trials.n does not make a model without trials one
    check_trial_files(find_trials(pred), "predictions")  # trial 3 has no file: its slots are lost, not refused
    trial_path(pred, 3).mkdir()
    with pytest.raises(InputError, match=r"m_test_mcp_fuzzy_trial3.json: field 'predictions': not a file: a trial is a "
                                         r"prediction file$"):
        check_trial_files(find_trials(pred), "predictions")


def score(*overrides: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_python([str(ROOT / "scripts" / "score.py"), *overrides], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_score_four_trials(tmp_path: Path, embedding_cache: Path) -> None:
    """Four trials of one model from `model=...` found by name, with a lost slot and judge files."""
    gt = [{"id": str(i), "steps": [{"step": 1, "calls": [{"name": "maps/search",
                                                           "arguments": {"query": f"cafe {i}"}}]}]}
          for i in range(3)]
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    pred = tmp_path / "m_test_mcp_fuzzy.json"
    tcs = [{"0": 0.9, "1": 0.2, "2": 0.6}, {"0": 0.8, "1": 0.6, "2": 0.1}, {"0": 0.7, "2": 0.9},
           {"0": 1.0, "1": 0.3, "2": 0.2}]
    for i, tc in enumerate(tcs, 1):
        records = [dict(g, steps=[{"step": 1, "calls": [{"name": "maps/search",
                                                         "arguments": {"query": f"cafe {g['id']}" if i % 2 else
                                                                       f"a bakery {g['id']}"}}]}])
                   for g in gt if g["id"] in tc]
        trial_path(pred, i).write_text(json.dumps(records))
        trial_path(pred, i).with_name(f"m_test_mcp_fuzzy_trial{i}_taskcompletion.json").write_text(
            json.dumps([{"id": k, "task_completion": v, "information_grounding": 0.5} for k, v in tc.items()]))
    out = tmp_path / "out"
    proc = score(f"data.gt={tmp_path / 'gt.json'}", f"inputs.file={pred}", f"output_dir={out}",
                 f"encoder.cache_dir={embedding_cache}", "device=cpu", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "trials.json").read_text())["models"]["m_test_mcp_fuzzy"]
    assert doc["meta"]["trials"] == 4 and doc["inventory"]["missing"][0]["id"] == "1"
    assert doc["inventory"]["missing"][0]["trial"] == 3
    assert doc["pass_hat_k"]["losses_as_failures"]["1"]["value"] == pytest.approx((1 + 1 / 4 + 2 / 4) / 3)
    assert doc["pass_hat_k"]["losses_excluded"]["1"]["value"] == pytest.approx((1 + 1 / 3 + 2 / 4) / 3)
    assert doc["pass_hat_k"]["losses_excluded"]["4"]["tasks"] == 2
    assert doc["aggregate"]["task_completion"]["n"] == 4 and doc["aggregate"]["avg_sim_all_cov"]["std"] > 0
    assert doc["per_task"]["1"]["task_completion"]["n"] == 3
    assert {f"m_test_mcp_fuzzy_trial{i}" for i in range(1, 5)} <= {p.name for p in out.iterdir()}
    board = (out / "leaderboard_trials.md").read_text()
    assert "m_test_mcp_fuzzy | 4 | 1.000 ± 0.000 |" in board and "pass^k" in board
    closing = proc.stdout.splitlines()
    header = next(line for line in closing if line.startswith("Model") and "pass^1" in line)
    assert header.split()[:4] == ["Model", "Trials", "Average", "Score"] and "pass^k" in header
    assert any(line.startswith("m_test_mcp_fuzzy ") and " 4 " in line and "0.583 (0.611)" in line for line in closing)
    # the main table names its success rule in its header; the default threshold (0.5, not the peers' 1) is
    # said once, as information, not as a warning a user of the default cannot act on
    assert "| pass^1 [success: task_completion >= 0.5] | pass^k [success: task_completion >= 0.5] |" in board
    said = [line for line in proc.stdout.splitlines() if "a trial succeeds at Task Completion >= 0.5" in line]
    assert len(said) == 1 and "[INFO]" in said[0] and "succeeds at Task Completion" not in proc.stderr
    assert "| m_test_mcp_fuzzy | 3 | 2 | 0 | 1 |" in (out / "trial_inventory.md").read_text()
    # tau2-bench: the lost slot dropped, success only at Task Completion 1, pass^k up to 3 (task 1 has 3 slots)
    tau2 = doc["conventions"]["tau2"]
    assert (tau2["max_k"], tau2["simulations"]) == (3, 11) and tau2["avg_reward"] == pytest.approx(6.3 / 11)
    assert tau2["pass_hat_k"]["1"] == pytest.approx((1 / 4) / 3) and set(tau2["pass_hat_k"]) == {"1", "2", "3"}
    assert doc["conventions"]["mcpmark"] == {"refused": "1 slot(s) missing: 1#3"}  # MCPMark refuses the model
    conventions = (out / "trial_conventions.md").read_text()
    assert "refused: 1 slot(s) missing: 1#3" in conventions and "(max_k 3)" in conventions
    assert (out / "pass_k.png").stat().st_size > 0 and (out / "task_spread.png").stat().st_size > 0
    # with stats=on, stats.json holds the rates' intervals (tasks resampled with their trials)
    on = score(f"data.gt={tmp_path / 'gt.json'}", f"inputs.file={pred}", f"output_dir={tmp_path / 'on'}",
               f"encoder.cache_dir={embedding_cache}", "device=cpu", "stats=on", "stats.resamples=200",
               "stats.cluster=sample", "stats.min_clusters=2", cwd=tmp_path)  # three tasks of no family: 3 clusters
    assert on.returncode == 0, on.stderr
    rates = json.loads((tmp_path / "on" / "stats.json").read_text())["trials"]["m_test_mcp_fuzzy"]
    shown = 0
    for name in ("pass_at_k", "pass_hat_k", "avg_at_k"):
        for k, block in rates[name].items():
            assert block["value"] == doc[name]["losses_as_failures"][k]["value"]
            if "reason" not in block:  # a rate the same in every resample says so instead
                assert block["low"] <= block["value"] <= block["high"]
                shown += 1
    assert shown
    # a leaderboard sweep finds the trials by name beside a model with one plain file
    (tmp_path / "plain_test_mcp_fuzzy.json").write_text(json.dumps(gt))
    sweep = score(f"data.gt={tmp_path / 'gt.json'}", "inputs.models=[m,plain]", f"results_dir={tmp_path}",
                  f"output_dir={tmp_path / 'sweep'}", f"encoder.cache_dir={embedding_cache}", "device=cpu",
                  cwd=tmp_path)
    assert sweep.returncode == 0, sweep.stderr
    models = json.loads((tmp_path / "sweep" / "trials.json").read_text())["models"]
    assert list(models) == ["m"] and models["m"]["pass_hat_k"] == doc["pass_hat_k"]
    assert {"m_trial1", "m_trial4", "plain"} <= {p.name for p in (tmp_path / "sweep").iterdir()}
    dup = score(f"data.gt={tmp_path / 'gt.json'}", f"inputs.trials=[{trial_path(pred, 1)},{trial_path(pred, 1)}]",
                f"output_dir={tmp_path / 'dup'}", f"encoder.cache_dir={embedding_cache}", "device=cpu", cwd=tmp_path)
    assert dup.returncode == 2 and "duplicate trial" in dup.stderr and "Traceback" not in dup.stderr


def test_calls_never_made_are_counted_per_slot_and_trial() -> None:
    """A record's calls the rollout never made (``"made": false``, or an earlier record's not-made result)
    are counted in its slot, per trial and overall; the trial inventory table shows them."""
    from engine.reports.trials import inventory_table

    def illegal(tid: str, n: int, legacy: bool = False) -> dict:
        out = record(tid, illegal_calls=n)
        bad = {"name": "s/t", "arguments": "{q", "is_error": True,
               "result": "Error: Invalid arguments: not JSON (the call was not made)"}
        out["steps"][0]["calls"] += [bad if legacy else {**bad, "made": False} for _ in range(n)]
        return out

    trials = [trial("t1.json", [illegal("a", 2), record("b")], {"a": 0.9, "b": 0.9}),
              trial("t2.json", [illegal("a", 1, legacy=True), illegal("b", 3)], {"a": 0.9, "b": 0.1})]
    doc = trials_document(["a", "b"], trials, SuccessRule(), [{"recall": 0.5}] * 2, ["task_completion"])
    inv = doc["inventory"]
    assert [(r["id"], r["trial"], r["illegal_calls"]) for r in inv["records"]] == [
        ("a", 1, 2), ("b", 1, 0), ("a", 2, 1), ("b", 2, 3)]
    assert inv["illegal_calls"] == 6 and [b["illegal_calls"] for b in inv["per_trial"]] == [2, 4]
    table = inventory_table({"m": doc})
    assert table.columns[-1] == "Calls not made" and [row[-1] for row in table.rows] == [2, 4]
