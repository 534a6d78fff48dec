"""The judge pool through the real OpenAI-compatible driver against a scripted judge server on loopback:
boxed, bare, malformed, out-of-range and rate-limited replies, a task whose judge keeps failing, the
resumed, cached and re-pooled reruns (requests counted at the server), usage and cost."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter
from pathlib import Path

from rollout_helpers import compose_judge, write_json

from engine.judging import COMPLETION
from rollout.judges.cli import judges_of
from rollout.judges.run import run
from rollout.models.loopback import Reply

IDS = ("t1", "t2", "t3")


def task_files(tmp_path: Path) -> tuple[Path, Path]:
    """A reference file and a prediction file of three tasks with their questions."""
    gt, preds = [], []
    for i, tid in enumerate(IDS):
        question = f"Question {tid}: what is the mean of 1 and {i}?"
        gt.append({"id": tid, "question": question, "steps": [
            {"step": 1, "calls": [{"name": "math/mean", "arguments": {"numbers": [1, i]}}]}]})
        preds.append({"id": tid, "question": question, "steps": [{"step": 1, "calls": [
            {"name": "math/mean", "arguments": {"numbers": [1, i]}, "result": f"{(1 + i) / 2}", "is_error": False}]}],
            "final_reply": f"The mean is {(1 + i) / 2}."})
    return write_json(tmp_path / "gt.json", gt), write_json(tmp_path / "preds_test_mcp_fuzzy.json", preds)


class JudgeServerPolicy:
    """Scripted replies per judge model; counts requests and the requests each model has in flight."""

    def __init__(self) -> None:
        self.asked: Counter = Counter()       # (model, purpose, task id) -> requests
        self.by_model: Counter = Counter()    # model -> requests
        self.in_flight: Counter = Counter()
        self.most_in_flight: Counter = Counter()
        self.lock = threading.Lock()

    def __call__(self, request: dict) -> str | Reply:
        model = request["model"]
        purpose = "tc" if request["messages"][0]["content"] == COMPLETION.system else "ig"
        tid = json.loads(request["messages"][-1]["content"])["prediction"]["id"]
        with self.lock:
            self.asked[model, purpose, tid] += 1
            self.by_model[model] += 1
            self.in_flight[model] += 1
            self.most_in_flight[model] = max(self.most_in_flight[model], self.in_flight[model])
            n, total = self.asked[model, purpose, tid], self.by_model[model]
        time.sleep(0.02)
        with self.lock:
            self.in_flight[model] -= 1
        return getattr(self, model)(purpose, tid, n, total)

    @staticmethod
    def boxed(purpose: str, tid: str, n: int, total: int) -> str:
        return "\\boxed{8}" if purpose == "tc" else "\\boxed{0.75}"

    @staticmethod
    def bare(purpose: str, tid: str, n: int, total: int) -> str:
        return "I would give it 6 out of 10." if purpose == "tc" else "0.5"

    @staticmethod
    def flaky(purpose: str, tid: str, n: int, total: int) -> str:
        if purpose == "ig":
            return "\\boxed{1.5}" if n == 1 else "\\boxed{1}"       # out of range, then right
        if tid == "t3":
            return "Looks fine." if n <= 5 else "\\boxed{5}"      # five malformed replies, then right
        return "Looks good to me." if n == 1 else "\\boxed{9}"

    @staticmethod
    def limited(purpose: str, tid: str, n: int, total: int) -> str | Reply:
        if total == 1:
            return Reply(status=429, error="slow down", headers={"Retry-After": "0"})
        return "\\boxed{7}" if purpose == "tc" else "\\boxed{0.25}"

    @staticmethod
    def fresh(purpose: str, tid: str, n: int, total: int) -> str:
        return "\\boxed{10}" if purpose == "tc" else "\\boxed{0.9}"


def judge(base_url: str, model: str, price: dict | None = None) -> dict:
    """A pool entry for a model of the loopback judge server."""
    return {"provider": "openai", "api_name": model, "base_url": base_url, "api_key_env": None, "params": {},
            "timeout": 10, "max_retries": 3, "backoff": {"initial": 0.01, "max": 0.05}, "price": price}


def config(tmp_path: Path, base_url: str, models: list[str], output: Path) -> dict:
    gt, preds = task_files(tmp_path)
    cfg = compose_judge(f"predictions={preds}", f"data.gt={gt}", f"evaluators.m3_judges.output={output}", "stage=judge",
                        f"cache_dir={tmp_path / 'cache'}", f"run_dir={tmp_path / 'run'}", "concurrency=3")
    prices = {"boxed": {"input": 1.0, "output": 2.0}}
    cfg.judges = judges_of({"max_requests": 2, "pool": {m: judge(base_url, m, prices.get(m)) for m in models}})
    return cfg


def oracle(values: list[float]) -> float:
    ordered = sorted(values)[1:-1]
    return sum(ordered) / len(ordered)


def test_pool_arithmetic_failures_resume_cache_and_pool_change(tmp_path, chat_server, caplog) -> None:
    caplog.set_level(logging.INFO, logger="judge")
    policy = JudgeServerPolicy()
    server = chat_server(policy)
    output = tmp_path / "out" / "taskcompletion.json"
    pool = ["boxed", "bare", "flaky", "limited"]

    # 1. t3's flaky judge never gives a usable Task Completion: t3 is reported, not scored
    assert run(config(tmp_path, server.base_url, pool, output)) == 1
    first = json.loads(output.read_text())
    assert list(first["pre_id"]) == ["t1", "t2"]
    tc, ig = oracle([0.8, 0.6, 0.9, 0.7]), oracle([0.75, 0.5, 1.0, 0.25])
    for tid in ("t1", "t2"):
        entry = first["pre_id"][tid]
        assert entry["final"] == tc and entry["info_grounding"]["final"] == ig
        assert [j["name"] for j in entry["judges"]] == pool
        assert [j["score"] for j in entry["judges"]] == [0.8, 0.6, 0.9, 0.7]
    assert first["aggregate"] == {"num_total": 3, "num_scored": 2, "completion_rate": tc,
                                  "information_grounding_rate": ig}
    assert "no usable task_completion answer in 5 attempt(s)" in first["meta"]["failed"]["t3"]
    assert dict(policy.by_model) == {"boxed": 6, "bare": 6, "flaky": 2 * 4 + 5 + 2, "limited": 6 + 1}
    assert max(policy.most_in_flight.values()) == 2  # judges.max_requests bounds each judge's requests
    usage = first["meta"]["usage"]
    assert usage["boxed"]["requests"] == 6 and usage["boxed"]["cached"] == 0
    boxed = usage["boxed"]
    assert boxed["prompt_tokens"] > 0 and boxed["cost_usd"] == (boxed["prompt_tokens"] * 1.0
                                                                 + boxed["completion_tokens"] * 2.0) / 1e6
    assert usage["bare"]["cost_usd"] is None

    # 2. a rerun judges only t3: its failed judge gets fresh attempts, everything else is cached
    before = sum(policy.by_model.values())
    assert run(config(tmp_path, server.base_url, pool, output)) == 0
    second = json.loads(output.read_text())
    assert sum(policy.by_model.values()) - before == 1 and policy.asked["flaky", "tc", "t3"] == 6
    assert list(second["pre_id"]) == ["t1", "t2", "t3"] and second["pre_id"]["t1"] == first["pre_id"]["t1"]
    assert second["pre_id"]["t3"]["final"] == oracle([0.8, 0.6, 0.5, 0.7]) and second["meta"]["failed"] == {}
    assert second["meta"]["usage"]["boxed"]["requests"] == 6  # usage adds up over the runs of one file

    # 3. the whole file again from the cache: zero requests, the same numbers
    before = sum(policy.by_model.values())
    again = tmp_path / "again.json"
    assert run(config(tmp_path, server.base_url, pool, again)) == 0
    assert sum(policy.by_model.values()) == before
    assert json.loads(again.read_text())["pre_id"] == second["pre_id"]

    # 4. one judge replaced: the file's tasks are judged again, only the new judge is asked
    before = Counter(policy.by_model)
    assert run(config(tmp_path, server.base_url, ["boxed", "fresh", "flaky", "limited"], output)) == 0
    assert policy.by_model - before == Counter({"fresh": 6})
    fourth = json.loads(output.read_text())
    assert fourth["pre_id"]["t1"]["final"] == oracle([0.8, 1.0, 0.9, 0.7])
    assert fourth["pre_id"]["t1"]["info_grounding"]["final"] == oracle([0.75, 0.9, 1.0, 0.25])
    assert "3 task(s) were judged by other models" in caplog.text
    agreement = fourth["meta"]["agreement"]
    assert agreement["task_completion"]["judges"] == ["boxed", "flaky", "fresh", "limited"]
    assert len(agreement["information_grounding"]["spearman"]) == 6


def test_a_published_file_drops_in(tmp_path, chat_server) -> None:
    """An existing taskcompletion.json whose judges are the pool's models is resumed, not judged again."""
    policy = JudgeServerPolicy()
    server = chat_server(policy)
    output = tmp_path / "taskcompletion.json"
    judges = [{"name": m, "score": 0.5} for m in ("boxed", "bare", "fresh", "limited")]
    published = {"aggregate": {"num_total": 3, "num_scored": 2, "completion_rate": 0.45,
                               "information_grounding_rate": 0.5},
                 "pre_id": {"t1": {"final": 0.5, "judges": judges, "info_grounding": {"final": 0.5, "judges": judges}},
                            "t2": 0.4}}
    output.write_text(json.dumps(published))
    assert run(config(tmp_path, server.base_url, ["boxed", "bare", "fresh", "limited"], output)) == 0
    assert sum(policy.by_model.values()) == 4 * 2 + 1 and {tid for _, _, tid in policy.asked} == {"t3"}
    result = json.loads(output.read_text())
    assert result["pre_id"]["t1"] == published["pre_id"]["t1"] and result["pre_id"]["t2"] == {"final": 0.4,
                                                                                               "judges": []}
    assert result["aggregate"]["num_scored"] == 3
    assert result["aggregate"]["completion_rate"] == (0.5 + 0.4 + oracle([0.8, 0.6, 1.0, 0.7])) / 3
