"""scripts/bench.py --stats: the statistics step of a warm scoring process against the same warm pass without it."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from bench_process import ROOT, score_command, spread, stage_line, timed, write_json

from engine.pipeline import ScoreSettings
from engine.synthetic import demo_models, perturb
from engine.thresholds import Thresholds


def bench_stats(args: argparse.Namespace, settings: ScoreSettings, thresholds: Thresholds) -> dict:
    """The statistics step against a warm scoring pass: --rounds alternating warm processes of the sweep with
    stats=off and with stats=on (reports off); the step's time is the `stats` stage the second one prints."""
    with tempfile.TemporaryDirectory() as tmp:
        if not args.predictions:
            args.gt = args.gt or str(ROOT.parent / "shared" / "data" / "m3bench" / "test_mcp_GT.json")
            if not Path(args.gt).is_file():
                sys.exit(f"no reference at {args.gt}: give --gt GT.json (the published M3-Bench reference)")
            reference = json.loads(Path(args.gt).read_text(encoding="utf-8"))
            profiles = list(demo_models().values())
            args.predictions = [write_json(Path(tmp) / f"model{m:02d}.json",
                                           perturb(reference, profiles[m % len(profiles)], seed=m))
                                for m in range(args.models)]
        timed(score_command(args, settings, thresholds, Path(tmp) / "fill", "stats=off"))
        plain, stages, step = [], [], []
        for round_ in range(args.rounds):
            seconds, out = timed(score_command(args, settings, thresholds, Path(tmp) / f"off{round_}", "stats=off"))
            plain.append(seconds)
            stages.append(sum(float(part.split()[-1].rstrip("s")) for part in stage_line(out).split(": ", 1)[1]
                              .split(", ")))
            _, out = timed(score_command(args, settings, thresholds, Path(tmp) / f"on{round_}", "stats=on"))
            step.append(float(stage_line(out).split(" stats ")[1].split("s")[0]))
            print(f"round {round_ + 1}: warm scoring pass {plain[-1]:.3f} s (its stages, load to write, "
                  f"{stages[-1]:.3f} s), statistics step {step[-1]:.3f} s ({step[-1] / plain[-1]:.3f}x)", flush=True)
    n = len(args.predictions)
    print(f"{n} models, {n * (n - 1) // 2} pairs, 10000 resamples, device {settings.device}: warm scoring pass "
          f"{spread(plain)}; its stages {spread(stages)}; statistics step {spread(step)}")
    print(f"ratio statistics step / warm scoring pass: {statistics.median(step) / statistics.median(plain):.3f} "
          f"(median), {min(s / p for s, p in zip(step, plain)):.3f}-{max(s / p for s, p in zip(step, plain)):.3f} "
          f"(per round); target <= 0.25. Against the scoring stages alone: "
          f"{statistics.median(step) / statistics.median(stages):.3f} (median)")
    return {"models": n, "pairs": n * (n - 1) // 2, "warm_pass_s": [round(v, 3) for v in plain],
            "warm_stages_s": [round(v, 3) for v in stages], "stats_step_s": [round(v, 3) for v in step],
            "ratio_median": round(statistics.median(step) / statistics.median(plain), 4)}
