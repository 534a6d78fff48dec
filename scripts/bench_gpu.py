"""scripts/bench.py --gpu-report: on a CUDA machine, the CUDA tests (golden parity among them), cold and warm
scoring processes on the device, and the align and metrics stages timed in this process with their
synchronizations; gpu_report.json, gpu_report.md and cuda_tests.log in --report-dir."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import torch
from bench_process import ROOT, score_command

from engine.align import candidate_pairs, match
from engine.contract import read_trajectories
from engine.encode import embed_distinct
from engine.encoders import TextEncoder
from engine.metrics import task_scores
from engine.pipeline import ScoreSettings
from engine.serialize import flatten_sweep
from engine.thresholds import Thresholds

T = TypeVar("T")

def gpu_stage_times(args: argparse.Namespace, settings: ScoreSettings, thresholds: Thresholds) -> dict:
    """Align and metrics of the sweep on CUDA, in this process: seconds per stage (each under
    torch.cuda.synchronize), synchronizations per stage and device-solver shapes compiled."""
    import warnings

    from engine.metrics import match_structure
    from kernels.assignment import compiled_shapes

    gt, preds = read_trajectories(args.gt), [read_trajectories(p, lenient=True) for p in args.predictions]
    tables = flatten_sweep(gt, preds, settings.profile)
    embeddings, _ = embed_distinct(tables.texts, TextEncoder(settings.encoder_model, device="cuda"), settings.cache_dir)
    out: dict = {"seconds": {}, "synchronizations": {}}

    def stage(name: str, run: Callable[[], T]) -> T:
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("warn")
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                start = time.perf_counter()
                value = run()
                torch.cuda.synchronize()
                seconds = time.perf_counter() - start
        finally:
            torch.cuda.set_sync_debug_mode("default")
        out["seconds"][name] = round(seconds, 4)
        out["synchronizations"][name] = sum("synchroniz" in str(w.message) for w in caught)
        return value

    cuda = torch.device("cuda")
    candidates = stage("candidates", lambda: candidate_pairs(tables, embeddings, cuda))
    matches = stage("align", lambda: match(candidates, thresholds.tau_weak))
    structure = stage("structure", lambda: match_structure(tables, matches))
    stage("metrics", lambda: task_scores(tables, matches, thresholds.tau_strong, settings.profile, structure))
    stage("align again", lambda: match(candidates, thresholds.tau_weak))
    out["shape_groups"] = {"host": len(candidates.plan.host_groups), "device": len(candidates.plan.device_groups)}
    out["compiled_shapes"] = compiled_shapes()
    return out


def gpu_report(args: argparse.Namespace, settings: ScoreSettings, thresholds: Thresholds) -> tuple[int, dict]:
    """The --gpu-report run (see the module's docstring); 0 when every check passed or no GPU is present,
    and the report (empty without a GPU)."""
    if not torch.cuda.is_available():
        print("gpu report: torch sees no CUDA device, so there is nothing to measure here")
        return 0, {}
    if not args.gt:
        golden = ROOT.parent / "shared" / "golden"
        args.gt = str(ROOT.parent / "shared" / "data" / "m3bench" / "test_mcp_GT.json")
        args.predictions = [str(p) for p in sorted(golden.glob("m*/pred.json"))]
    report_dir = Path(args.report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    report: dict = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                    "predictions": args.predictions}
    start = time.perf_counter()
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            str(ROOT / "tests" / "test_cuda.py")],
                           cwd=ROOT, capture_output=True, text=True)
    summary = (tests.stdout.strip().splitlines() or [""])[-1]
    (report_dir / "cuda_tests.log").write_text(tests.stdout + tests.stderr)
    report["cuda_tests"] = {"returncode": tests.returncode, "summary": summary,
                            "seconds": round(time.perf_counter() - start, 1)}
    cuda = dataclasses.replace(settings, device="cuda")
    with tempfile.TemporaryDirectory() as tmp:
        runs = {}
        for kind in ("cold", "warm"):
            warm_settings = dataclasses.replace(cuda, cache_dir=f"{tmp}/embeddings")
            env = {**os.environ, "TRITON_CACHE_DIR": f"{tmp}/triton"}
            begin = time.perf_counter()
            proc = subprocess.run(score_command(args, warm_settings, thresholds, Path(tmp) / kind), capture_output=True,
                                  text=True, env=env)
            stages = next((line for line in proc.stdout.splitlines() if line.startswith("texts:")), proc.stderr[-300:])
            runs[kind] = {"seconds": round(time.perf_counter() - begin, 3), "returncode": proc.returncode,
                          "stages": stages}
        report["sweep"] = runs
        report["in_process"] = gpu_stage_times(args, dataclasses.replace(cuda, cache_dir=f"{tmp}/embeddings"),
                                               thresholds)
    (report_dir / "gpu_report.json").write_text(json.dumps(report, indent=2) + "\n")
    rows = [("card", report["device"]), ("CUDA tests (golden parity included)", summary),
            *((f"{kind} sweep process", f"{r['seconds']:.2f} s ({r['stages']})")
              for kind, r in report["sweep"].items()),
            *((f"{name} (synchronized)", f"{sec:.4f} s, {report['in_process']['synchronizations'][name]} syncs")
              for name, sec in report["in_process"]["seconds"].items()),
            ("device-solver shapes compiled", str(report["in_process"]["compiled_shapes"]))]
    table = "| measure | value |\n|---|---|\n" + "".join(f"| {k} | {v} |\n" for k, v in rows)
    (report_dir / "gpu_report.md").write_text(table)
    print(table)
    ok = tests.returncode == 0 and all(r["returncode"] == 0 for r in report["sweep"].values())
    return (0 if ok else 1), report
