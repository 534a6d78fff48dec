"""Validity of the statistics step by simulation (docs/statistics.md): coverage of the 95% intervals of
recall (a ratio), a judge mean and the Average Score, and the paired test's false positive rate under no
difference, over many benchmarks of C families drawn from a synthetic population shaped like the real
reference (engine/synthetic/population.py).

    python scripts/stats_simulation.py [--gt PATH] [--draws 2000] [--resamples 2000] [--clusters 10 31 100]
                                       [--methods percentile bca] [--corrections expanded none] [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.synthetic.population import family_shapes, make_population, simulate


def main(argv: list[str] | None = None) -> int:
    """Print one line per (method, correction, C): coverage per metric and the false positive rate."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gt", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "m3bench"
                                            / "test_mcp_GT.json"), help="reference whose family shapes are copied")
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--clusters", type=int, nargs="+", default=[10, 31, 100])
    parser.add_argument("--methods", nargs="+", default=["percentile", "bca"])
    parser.add_argument("--corrections", nargs="+", default=["expanded", "none"])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    population = make_population(family_shapes(args.gt), seed=args.seed)
    print(f"population: {population.families} families, {len(population.n_gt)} ids; truth {population.truth()}")
    for method in args.methods:
        for correction in args.corrections:
            for c in args.clusters:
                r = simulate(population, clusters=c, draws=args.draws, resamples=args.resamples, method=method,
                             correction=correction, seed=args.seed + 1)
                cover = ", ".join(f"{k} {v:.3f}" for k, v in r.coverage.items())
                fp = ", ".join(f"{k} {v:.3f}" for k, v in r.false_positive.items())
                print(f"{method:10s} {correction:8s} C={c:3d} draws={r.draws}: coverage {cover}; "
                      f"false positives (p < 0.05) {fp}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
