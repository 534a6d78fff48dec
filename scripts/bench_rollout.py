"""Overhead of the rollout harness itself: a scripted model on loopback and the shipped MCP servers.

    python scripts/bench_rollout.py [--tasks 100] [--steps 3] [--calls 2] [--concurrency 8] [--mode live]

The scripted model runs in its own process (``python -m rollout.scripted``) and answers at once,
so the times measured are the harness's: prompts, HTTP round trips through the openai SDK, MCP
calls over stdio, workspace bookkeeping, cache and output writing. Targets: <= 20 ms per tool
call and >= 50 tasks/min with 8 concurrent tasks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from PIL import Image

from rollout.cli import compose_config
from rollout.mcp.host import MCPHost
from rollout.record import CachedModel
from rollout.runner import run_rollout
from rollout.toolrunner import ToolRunner

ROOT = Path(__file__).resolve().parent.parent
STEP_CALLS = [
    lambda i: [{"name": "math/mean", "arguments": {"numbers": [i, i + 1, i + 5]}},
               {"name": "math/median", "arguments": {"numbers": [i, 3, 9, i + 2]}},
               {"name": "math/stdev", "arguments": {"numbers": [i, 2, 4]}}],
    lambda i: [{"name": "images/crop", "arguments": {"input_path": f"media/b{i}.png", "x1": 0, "y1": 0, "x2": 32,
                                                     "y2": 24, "output_path": "media/crop.png"}},
               {"name": "math/evaluate", "arguments": {"expression": f"{i} * 2 + sqrt(16)"}},
               {"name": "math/mode", "arguments": {"numbers": [i, i, 2]}}],
    lambda i: [{"name": "images/rotate", "arguments": {"input_path": "media/crop.png", "angle": 90}},
               {"name": "math/describe", "arguments": {"numbers": [i, 1, 2, 3]}},
               {"name": "math/variance", "arguments": {"numbers": [i, 7, 8]}}],
]


def make_tasks(directory: Path, n: int, steps: int, calls: int) -> tuple[Path, Path]:
    """n tasks with an image each, and plans of `steps` steps of `calls` parallel calls."""
    (directory / "images").mkdir(parents=True)
    tasks, plans = [], []
    for i in range(n):
        Image.new("RGB", (64, 48), (i % 256, 80, 160)).save(directory / "images" / f"b{i}.png")
        question = f"Benchmark task {i}: run the planned calls."
        tasks.append({"id": f"b{i:04d}", "image": f"images/b{i}.png", "type": "bench", "question": question})
        plan = [{"step": s + 1, "calls": STEP_CALLS[s % len(STEP_CALLS)](i)[:calls]} for s in range(steps)]
        plans.append({"id": f"b{i:04d}", "question": question, "steps": plan, "final_reply": f"Task {i} done."})
    tasks_file, plans_file = directory / "tasks.json", directory / "plans.json"
    tasks_file.write_text(json.dumps(tasks))
    plans_file.write_text(json.dumps(plans))
    return tasks_file, plans_file


class Timings:
    """Wall times of host calls, tool steps and model requests, gathered by wrapping their methods."""

    def __init__(self) -> None:
        self.tool_calls: list[float] = []
        self.steps: list[tuple[float, int]] = []
        self.model: list[float] = []
        self.startup: list[float] = []

    def install(self) -> None:
        """Wrap MCPHost.start and .call, ToolRunner.run_step and CachedModel.complete."""
        def timed(cls: type, name: str, sink: list, per_call: bool = False) -> None:
            original = getattr(cls, name)

            async def wrapper(self_, *args, **kwargs):
                start = time.perf_counter()
                result = await original(self_, *args, **kwargs)
                elapsed = time.perf_counter() - start
                sink.append((elapsed, len(args[0])) if per_call else elapsed)
                return result

            setattr(cls, name, wrapper)

        timed(MCPHost, "start", self.startup)
        timed(MCPHost, "call", self.tool_calls)
        timed(ToolRunner, "run_step", self.steps, per_call=True)
        timed(CachedModel, "complete", self.model)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _ms(values: list[float]) -> str:
    values = sorted(values)
    p95 = values[min(len(values) - 1, int(0.95 * len(values)))]
    return f"mean {1000 * statistics.fmean(values):6.2f} ms   p50 {1000 * statistics.median(values):6.2f} ms   " \
           f"p95 {1000 * p95:6.2f} ms   (n={len(values)})"


def main() -> None:
    """Run the benchmark and print the numbers."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--calls", type=int, default=2, help="parallel calls per step (at most 3)")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--mode", default="live", choices=["live", "record"])
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench_rollout_"))
    tasks_file, plans_file = make_tasks(work / "data", args.tasks, args.steps, args.calls)
    model = subprocess.Popen([sys.executable, "-m", "rollout.scripted", "--plans", str(plans_file)], cwd=ROOT,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert model.stdout is not None, "started with stdout=PIPE"
        base_url = model.stdout.readline().strip()
        timings = Timings()
        timings.install()
        cfg = compose_config(["model=local", "model.name=scripted", f"model.base_url={base_url}",
                              "model.max_retries=0", "model.image_max_side=null", f"tasks.file={tasks_file}",
                              f"results_dir={work / 'out'}", f"mode={args.mode}", f"concurrency={args.concurrency}",
                              f"max_step={args.steps}", f"max_concurrent={max(args.calls, 1)}"])
        start, cpu = time.perf_counter(), time.process_time()
        status = asyncio.run(run_rollout(cfg))
        total, cpu = time.perf_counter() - start, time.process_time() - cpu
        servers_cpu = _children_cpu()
    finally:
        model.terminate()
        model.wait()
    model_cpu = _children_cpu() - servers_cpu
    preds = json.loads(Path(cfg.predictions).read_text())
    calls = [c for p in preds for s in p["steps"] for c in s["calls"]]
    errors = sum(c["is_error"] for c in calls)
    startup = sum(timings.startup)
    step_per_call = [elapsed / n for elapsed, n in timings.steps]
    print(f"\nrollout harness benchmark: {len(preds)} tasks x {args.steps} steps x {args.calls} calls, "
          f"{args.concurrency} concurrent tasks, mode={args.mode}, exit status {status}")
    print(f"  tool calls: {len(calls)} ({errors} errors); model requests: {len(timings.model)}")
    print(f"  wall time {total:.2f} s, of which MCP servers' start {startup:.2f} s")
    print(f"  throughput: {60 * len(preds) / total:.1f} tasks/min ({60 * len(preds) / (total - startup):.1f} "
          "after the servers' start)")
    print(f"  wall time per tool call after the servers' start: {1000 * (total - startup) / len(calls):.2f} ms "
          "(model requests included)")
    print(f"  CPU per tool call: harness {1000 * cpu / len(calls):.2f} ms (model requests included), "
          f"MCP servers {1000 * servers_cpu / len(calls):.2f} ms (their start included); "
          f"scripted model {model_cpu:.2f} s in all")
    print(f"  MCP tool call, host.call under load:     {_ms(timings.tool_calls)}")
    print(f"  tool step per call (calls, files, cache): {_ms(step_per_call)}")
    print(f"  model request, HTTP round trip:          {_ms(timings.model)}")
    print(f"  outputs under {work}")


if __name__ == "__main__":
    main()
