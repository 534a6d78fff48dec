"""The scoring processes the benchmarks time (scripts/bench.py and its modes): their command line, their clock,
the timings line they print, and the spread of a list of seconds."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.pipeline import ScoreSettings  # noqa: E402
from engine.thresholds import Thresholds  # noqa: E402


def score_command(args: argparse.Namespace, settings: ScoreSettings, thresholds: Thresholds, out: Path,
                  *overrides: str) -> list[str]:
    """The scoring process of the benchmark's files (reports off unless an override turns them on)."""
    preds = "[" + ",".join(str(Path(p).resolve()) for p in args.predictions) + "]"
    return [sys.executable, str(ROOT / "scripts" / "score.py"), f"data.gt={Path(args.gt).resolve()}",
            f"inputs.files={preds}", f"output_dir={out}", f"encoder.cache_dir={settings.cache_dir}",
            f"device={settings.device}", f"align.tau_weak={thresholds.tau_weak}",
            f"align.tau_strong={thresholds.tau_strong}", f"metrics.profile={settings.profile}",
            f"encoder.backend={settings.encoder_backend}", "reports=false", "progress=false", *overrides]


def timed(command: list[str]) -> tuple[float, str]:
    """Wall seconds of a whole process and its stdout; exits with its stderr if it fails."""
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode:
        sys.exit(proc.stderr)
    return seconds, proc.stdout


def spread(values: list[float]) -> str:
    """min / median / max of a list of seconds."""
    return f"min {min(values):.3f} s, median {statistics.median(values):.3f} s, max {max(values):.3f} s"


def write_json(path: Path, value: object) -> Path:
    """Write a JSON file and return its path."""
    path.write_text(json.dumps(value))
    return path


def stage_line(out: str) -> str:
    """The `stages:` part of the line a scoring process ends its timings with."""
    return next(line for line in out.splitlines() if line.startswith("texts:")).split("; ", 1)[1]


def timings_line(out: str) -> str:
    """The line a scoring process prints its counts and stage times on (`texts: ...; stages: ...`)."""
    return next(line for line in out.splitlines() if line.startswith("texts:"))
