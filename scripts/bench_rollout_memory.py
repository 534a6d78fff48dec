"""Memory of a multi-turn rollout by its length: one task of N turns, the scripted model, the shipped MCP servers.

    python scripts/bench_rollout_memory.py [--turns 30 100 300] [--mode record]

For each N (and a 1-turn task first, the baseline: it runs as a single question) the script writes a tasks file
with one task of N turns (each turn asks for one math call) and its reference trajectory, and runs
``scripts/rollout.py model=scripted max_step=1`` on it in a process of its own, fully offline (the scripted
model is a loopback server inside that process). It reports that process's peak resident set size (VmHWM,
read as it exits; the MCP servers, processes of their own, are not in it), its growth above the baseline's
peak, and that growth per added turn (divided by N - 1), so the interpreter's and the libraries' fixed cost
drops out. Target: a 300-turn task's growth per turn within 2x of a 30-turn task's (memory
linear in turns; each request carries the whole dialogue, so keeping every request would make it quadratic).
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

# Run in the child: scripts/rollout.py as __main__, its peak RSS written to $BENCH_VMHWM as it exits.
CHILD = """
import atexit, os, runpy, sys
def report():
    hwm = next(line for line in open('/proc/self/status') if line.startswith('VmHWM:'))
    open(os.environ['BENCH_VMHWM'], 'w').write(hwm.split()[1])
atexit.register(report)
sys.argv = [sys.argv[1], *sys.argv[2:]]
runpy.run_path(sys.argv[0], run_name='__main__')
"""


def make_task(directory: Path, turns: int) -> tuple[Path, Path]:
    """A tasks file with one task of `turns` turns (each asking for the mean of three numbers) and the reference
    trajectory the scripted model follows (one math/mean call a step, so a step a turn)."""
    directory.mkdir(parents=True)
    prompts = [f"Turn {k}: what is the mean of {k}, {k + 1} and {k + 5}?" for k in range(1, turns + 1)]
    question = "\n".join(prompts)
    tasks = [{"id": "long", "type": "bench", "question": question, "turns": [{"prompt": p} for p in prompts]}]
    steps = [{"step": k, "calls": [{"name": "math/mean", "arguments": {"numbers": [k, k + 1, k + 5]}}]}
             for k in range(1, turns + 1)]
    reference = [{"id": "long", "type": "bench", "question": question, "steps": steps, "final_reply": "Done."}]
    tasks_file, reference_file = directory / "tasks.json", directory / "reference.json"
    tasks_file.write_text(json.dumps(tasks), encoding="utf-8")
    reference_file.write_text(json.dumps(reference), encoding="utf-8")
    return tasks_file, reference_file


def run_once(directory: Path, turns: int, mode: str) -> tuple[int, float]:
    """Peak RSS in KiB and wall time of the rollout of one `turns`-turn task, in a process of its own."""
    tasks_file, reference = make_task(directory, turns)
    hwm = directory / "vmhwm"
    command = [sys.executable, "-c", CHILD, str(ROOT / "scripts" / "rollout.py"), "model=scripted",
               f"tasks.file={tasks_file}", f"tasks.reference={reference}", f"model.script={reference}",
               "tasks.images_dir=null", f"results_dir={directory / 'out'}", f"mode={mode}", "max_step=1",
               "concurrency=1"]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=directory, env={**os.environ, "BENCH_VMHWM": str(hwm)},
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"bench_rollout_memory: the {turns}-turn rollout failed (exit {done.returncode}):\n"
                 f"{done.stderr[-2000:]}")
    record, = json.loads((directory / "out" / "scripted_test_mcp_fuzzy.json").read_text(encoding="utf-8"))
    if "error" in record or (turns > 1 and len(record["turns"]) != turns):
        sys.exit(f"bench_rollout_memory: the {turns}-turn task did not run all its turns: {record.get('error')}")
    return int(hwm.read_text()), wall


def main() -> None:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[30, 100, 300], help="task lengths to measure")
    parser.add_argument("--mode", default="record", choices=["live", "record"],
                        help="record also writes the model and tool cache")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench_rollout_memory_"))
    base, base_wall = run_once(work / "t1", 1, args.mode)
    print(f"rollout memory by turns (one task, scripted model, max_step=1, mode={args.mode}); peak RSS of the "
          "rollout process")
    print(f"  {'turns':>6} {'peak MiB':>9} {'above 1-turn MiB':>17} {'KiB per turn':>13} {'wall s':>8}")
    print(f"  {1:>6} {base / 1024:>9.1f} {'(baseline)':>17} {'':>13} {base_wall:>8.1f}")
    per_turn: dict[int, float] = {}
    for turns in args.turns:
        peak, wall = run_once(work / f"t{turns}", turns, args.mode)
        per_turn[turns] = (peak - base) / (turns - 1) if turns > 1 else 0.0
        print(f"  {turns:>6} {peak / 1024:>9.1f} {(peak - base) / 1024:>17.1f} {per_turn[turns]:>13.1f} {wall:>8.1f}")
    shortest, longest = min(per_turn), max(per_turn)
    if shortest != longest and per_turn[shortest] > 0:
        ratio = per_turn[longest] / per_turn[shortest]
        verdict = "met" if ratio <= 2 else "NOT met"
        print(f"  growth per turn, {longest} turns / {shortest} turns: {ratio:.2f} (target <= 2: {verdict})")
    print(f"  outputs under {work}")


if __name__ == "__main__":
    main()
