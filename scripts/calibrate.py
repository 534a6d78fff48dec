"""Calibrate the similarity thresholds on labelled call pairs (strong / medium / weak).

    python scripts/calibrate.py pairs.json [--out DIR] [--cache-dir DIR]

pairs.json: a list of {"gt": {"name", "arguments"}, "pred": {"name", "arguments"}, "label"}.
Prints the agreement of every (tau_strong, tau_weak) with the labels and the best pair, and
writes calibration.json and calibration.csv.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.calibration import best_point, calibrate, load_pairs, pair_similarities  # noqa: E402
from engine.encode import TextEncoder  # noqa: E402
from engine.contract import InputError  # noqa: E402
from engine.contract import atomic_write_csv, atomic_write_json  # noqa: E402

GRID = [round(float(v), 2) for v in np.arange(0.30, 0.951, 0.05)]


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pairs", type=Path)
    parser.add_argument("--out", type=Path, default=Path("."), help="folder for calibration.{json,csv}")
    parser.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "m3bench" / "embeddings"))
    parser.add_argument("--encoder", default=None, help="local sentence-transformers folder")
    parser.add_argument("--profile", default="reference", choices=["reference", "paper"])
    parser.add_argument("--tau-weak-grid", type=float, nargs="+", default=GRID)
    parser.add_argument("--tau-strong-grid", type=float, nargs="+", default=GRID)
    args = parser.parse_args(argv)
    try:
        pairs = load_pairs(args.pairs)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    similarity = pair_similarities(pairs, TextEncoder(args.encoder), args.cache_dir, args.profile)
    rows = calibrate(similarity, pairs.labels, args.tau_weak_grid, args.tau_strong_grid)
    best = best_point(rows)
    columns = ["tau_strong", "tau_weak", "accuracy", "recall_weak", "recall_medium", "recall_strong"]
    atomic_write_csv(args.out / "calibration.csv", columns, rows)
    atomic_write_json(args.out / "calibration.json", {"pairs": len(pairs.labels), "best": best, "grid": rows})
    print("  ".join(f"{c:>13}" for c in columns))
    for r in sorted(rows, key=lambda r: -r["accuracy"])[:10]:
        print("  ".join(f"{'' if r[c] is None else round(r[c], 4):>13}" for c in columns))
    print(f"best: tau_weak={best['tau_weak']} tau_strong={best['tau_strong']} accuracy={best['accuracy']:.4f} "
          f"over {len(pairs.labels)} pairs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
