"""Tasks per minute of a rollout split into 1, 2 and 4 shards against a model API with latency.

    python scripts/bench_shards.py [--copies 6] [--latency 1.0] [--concurrency 4] [--shards 1 2 4]

The demo tasks, `copies` times over (ids suffixed), run against one scripted model server in its own process
(``python -m rollout.scripted``) that waits `latency` seconds before each reply, as a remote API does. For
each shard count n, the n shards start at once as separate processes (each with `concurrency` tasks at
once and its own MCP servers, as jobs of a launcher would), and the time runs until the last one has ended
and merged the parts. Every merged file must be the same bytes; the figures include each shard's process
and server start.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "rollout" / "demo"
PREDICTIONS = "scripted_test_mcp_fuzzy.json"


def task_set(folder: Path, copies: int) -> tuple[Path, Path, int]:
    """The demo tasks and references `copies` times over in `folder`; their paths and the task count."""
    count = 0
    paths = []
    for name in ("tasks.json", "reference.json"):
        records = json.loads((DEMO / name).read_text())
        out = [{**r, "id": f"{r['id']}-c{k}"} for k in range(copies) for r in records]
        (folder / name).write_text(json.dumps(out))
        paths.append(folder / name)
        count = len(out)
    return paths[0], paths[1], count


def run_shards(n: int, settings: list[str], results: Path) -> float:
    """Start the n shards at once; the seconds until every one has ended (the last merging the parts)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, str(ROOT / "scripts" / "rollout.py"), *settings,
                               f"results_dir={results}", f"shard={i}/{n}"], cwd=results.parent, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for i in range(n)]
    outputs = [p.communicate()[0] for p in procs]
    seconds = time.perf_counter() - start
    for p, out in zip(procs, outputs):
        if p.returncode:
            sys.exit(f"a shard failed (exit {p.returncode}):\n{out[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=6, help="copies of the 4 demo tasks (default 6: 24 tasks)")
    parser.add_argument("--latency", type=float, default=1.0, help="seconds before each model reply")
    parser.add_argument("--concurrency", type=int, default=4, help="tasks at once in each shard")
    parser.add_argument("--shards", type=int, nargs="+", default=[1, 2, 4], help="shard counts to measure")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-shards-") as tmp:
        base = Path(tmp)
        tasks, reference, count = task_set(base, args.copies)
        server = subprocess.Popen([sys.executable, "-m", "rollout.scripted", "--plans", str(reference), "--delay",
                                   str(args.latency)], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert server.stdout is not None
            url = server.stdout.readline().strip()
            settings = ["model=scripted", "tasks=demo", f"tasks.file={tasks}", f"tasks.reference={reference}",
                        f"tasks.images_dir={DEMO}", f"model.base_url={url}", f"concurrency={args.concurrency}"]
            print(f"{count} tasks, {args.latency} s per model request, {args.concurrency} tasks at once per shard")
            merged = set()
            for n in args.shards:
                results = base / f"shards{n}"
                seconds = run_shards(n, settings, results)
                merged.add((results / PREDICTIONS).read_bytes())
                print(f"{n} shard(s): {seconds:6.1f} s, {count / seconds * 60:6.1f} tasks/min")
            assert len(merged) == 1, "the merged predictions differ between shard counts"
            print("merged predictions: the same bytes for every shard count")
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
