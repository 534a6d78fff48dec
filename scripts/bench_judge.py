"""Overhead of the judge harness and of the call outcome rules.

    python scripts/bench_judge.py [--tasks 200] [--judges 4] [--concurrency 8] [--models 14]

1. Judging: scripted judges in their own process (``python -m rollout.judges.scripted``) answer at
   once, so the time is the harness's: payloads, cache keys and writes, HTTP through the openai SDK,
   the trimmed means and the resumable output (each verdict appended to the file's journal and synced;
   the file written whole, atomically, once the journal holds 64 verdicts and as many as the file, and
   at the end: rollout/judges/journal.py). Target: >= 200 judged tasks/min with 4 judges and 8 tasks at
   once.
2. A fully cached rerun of the same tasks into a new output, timed as a whole process
   (scripts/judge.py, start-up included). Target: <= 10 s for 200 tasks.
3. The call outcome rules over a demo sweep of the 14 leaderboard models (synthetic predictions whose
   call results are drawn from error shapes recorded from real servers), with a tool catalogue, timed
   after start-up. Target: < 1 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.contract import read_trajectories, write_trajectories
from engine.judging import decide
from engine.synthetic import PROFILES, make_reference, perturb
from rollout.judges.catalogue import load_catalogue
from rollout.judges.cli import compose_config, judges_of
from rollout.judges.run import run

ROOT = Path(__file__).resolve().parent.parent
LEADERBOARD = ("gpt5", "gpt5_mini", "gpt5_nano", "gemini25_pro", "gemini25_flash", "gemini25_flash_lite",
               "claude45_sonnet", "claude45_haiku", "grok4", "grok4_fast", "llama4_scout", "qwen25vl_72b",
               "internvl35", "glm45v")
# Call results as real servers give them (see tests/rollout/test_judge_outcomes.py), by weight.
SHAPES = [
    (60, lambda tool: (json.dumps({"status": "ok", "items": [1, 2, 3]}), False)),
    (8, lambda tool: (f"Error executing tool {tool}: 1 validation error for {tool}Arguments\nquery\n  Field required "
                      "[type=missing, input_value={}, input_type=dict]", True)),
    (6, lambda tool: (json.dumps({"error": "404 Not Found: no such record"}), False)),
    (5, lambda tool: (f"Error: MCP error -32602: Invalid arguments for tool {tool}: expected string", True)),
    (5, lambda tool: (f"Error executing tool {tool}: file 'media/missing.png' not found in the task workspace", True)),
    (4, lambda tool: (f"Unknown tool: {tool}_v2", True)),
    (6, lambda tool: (f"Error executing tool {tool}: the upstream service gave up", True)),
    (6, lambda tool: ("No results found for this query.", False)),
]


def with_results(tasks: list[dict], seed: int) -> list[dict]:
    """The tasks with a result drawn from SHAPES for every call."""
    rng = random.Random(seed)
    weights = [w for w, _ in SHAPES]
    for task in tasks:
        for step in task["steps"]:
            for call in step["calls"]:
                shape = rng.choices(SHAPES, weights)[0][1]
                call["result"], call["is_error"] = shape(call["name"].split("/", 1)[-1])
        task["final_reply"] = task.get("final_reply") or "Done."
    return tasks


def tools_file(reference: list[dict], path: Path) -> Path:
    """A tools JSON of the reference's tools, each with an input schema of the argument types it was called with."""
    kinds = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}
    tools: dict[str, dict] = {}
    for task in reference:
        for step in task["steps"]:
            for call in step["calls"]:
                props = tools.setdefault(call["name"], {})
                for key, value in (call.get("arguments") or {}).items():
                    props.setdefault(key, {"type": kinds[type(value)]} if type(value) in kinds else {})
    items = [{"name": n, "input_schema": {"type": "object", "properties": p}} for n, p in tools.items()]
    path.write_text(json.dumps(items))
    return path


def write_sweep(directory: Path, n_tasks: int, models: int) -> tuple[Path, list[Path], Path]:
    """The reference, one prediction file per leaderboard model, and the tools JSON."""
    reference = make_reference(n_tasks, seed=7)
    gt = directory / "reference.json"
    write_trajectories(gt, reference)
    profiles = [PROFILES[k] for k in ("strong", "medium", "weak", "chaotic")]
    paths = []
    for i, name in enumerate(LEADERBOARD[:models]):
        path = directory / f"{name}_test_mcp_fuzzy.json"
        write_trajectories(path, with_results(perturb(reference, profiles[i % 4], seed=i), seed=i))
        paths.append(path)
    return gt, paths, tools_file(reference, directory / "tools.json")


def pool_config(directory: Path, base_url: str, judges: int) -> Path:
    """A config folder with the judges group option `bench`: `judges` scripted judges behind base_url."""
    pool = {f"j{i}": {"provider": "scripted", "api_name": f"scripted-judge-{i}", "base_url": base_url,
                      "api_key_env": None, "params": {}, "timeout": 30, "max_retries": 2,
                      "backoff": {"initial": 0.05, "max": 0.5}} for i in range(1, judges + 1)}
    (directory / "conf" / "judges").mkdir(parents=True)
    (directory / "conf" / "judges" / "bench.yaml").write_text(json.dumps({"max_requests": 8, "pool": pool}))
    return directory / "conf"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=200, help="tasks judged")
    parser.add_argument("--judges", type=int, default=4, help="judges in the pool")
    parser.add_argument("--concurrency", type=int, default=8, help="tasks judged at once")
    parser.add_argument("--models", type=int, default=14, help="models of the call outcome sweep")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        gt, preds, tools = write_sweep(d, args.tasks, args.models)
        server = subprocess.Popen([sys.executable, "-m", "rollout.judges.scripted"], cwd=ROOT, text=True,
                                  stdout=subprocess.PIPE)
        try:
            assert server.stdout is not None, "started with stdout=PIPE"
            base_url = server.stdout.readline().strip()
            conf = pool_config(d, base_url, args.judges)
            overrides = [f"predictions={preds[0]}", f"data.gt={gt}", "stage=judge", f"cache_dir={d / 'cache'}",
                         f"run_dir={d / 'run'}", f"concurrency={args.concurrency}"]
            cfg = compose_config([*overrides, f"evaluators.m3_judges.output={d / 'first.json'}"])
            cfg.judges = judges_of(json.loads((conf / "judges" / "bench.yaml").read_text()))
            start = time.perf_counter()
            status = run(cfg)
            seconds = time.perf_counter() - start
            judged = len(json.loads((d / "first.json").read_text())["pre_id"])
            print(f"judging: {judged} task(s) x {args.judges} judge(s) x 2 questions, {args.concurrency} at once: "
                  f"{seconds:.2f} s, {judged / seconds * 60:.0f} tasks/min, "
                  f"{judged * args.judges * 2 / seconds:.0f} requests/s (status {status})")
            command = [sys.executable, str(ROOT / "scripts" / "judge.py"), "--config-dir", str(conf), "judges=bench",
                       *overrides, f"evaluators.m3_judges.output={d / 'again.json'}"]
            start = time.perf_counter()
            proc = subprocess.run(command, capture_output=True, text=True)
            seconds = time.perf_counter() - start
            print(f"cached rerun, whole process: {seconds:.2f} s ({proc.stdout.strip().splitlines()[-1]})")
        finally:
            server.terminate()
            server.wait()

        start = time.perf_counter()
        catalogue = asyncio.run(load_catalogue(tools))
        files = [read_trajectories(p) for p in preds]
        loaded = time.perf_counter() - start
        start = time.perf_counter()
        decisions = [decide(call, catalogue) for f in files for t in f.tasks.values()
                     for step in t.raw.get("steps") or [] for call in step.get("calls") or []]
        seconds = time.perf_counter() - start
        calls = len(decisions)
        settled = sum(1 for d in decisions if d is not None)
        print(f"call outcome rules: {len(files)} model(s), {calls} call(s), {settled} settled by rules "
              f"({settled / calls:.1%}): {seconds:.3f} s after start-up (reading the files: {loaded:.2f} s)")


if __name__ == "__main__":
    main()
