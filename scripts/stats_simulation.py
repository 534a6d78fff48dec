"""Validity of the statistics step by simulation against known truth (docs/statistics.md), on a population built
from a real run's per-task outcomes (engine.synthetic.population: the golden cases of ../shared on the published
reference by default; families of their real sizes, every metric of every model kept together).

    python scripts/stats_simulation.py coverage [--clusters 10 30] [--draws 2000] [--resamples 1000] [--full]
    python scripts/stats_simulation.py null [--clusters 10 30] [--models 14] [--draws 2000]
    python scripts/stats_simulation.py table2 [--large 200000] [--seeds 10]
    python scripts/stats_simulation.py coverage --methods logit/expanded --clusters 4 5 6 8   # the minimum

coverage: per interval method and cluster count, the share of draws whose 95% interval holds the population value,
for every metric and the Average Score of every base model (the real files), and for the differences of every
pair (the step's t interval). null: 14 exchangeable models (each task's outcome one of the base models' at random):
the paired test's unadjusted false positives and the family-wise rate after Holm. table2: 14 models on the real
ids, model j taking the strongest file's outcome with probability j/13, the weakest's otherwise: what the step
concludes at its defaults, and how often its Holm decisions equal those of `--large` resamples.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from engine.stats import AVERAGE_KEY, StatsSettings, bootstrap_stats
from engine.stats.document import ModelRecord, StatsDocument
from engine.synthetic.population import METRICS, exchangeable, ladder, make_population, real_outcomes
from engine.synthetic.simulation import METHODS, benchmark_units, coverage, null_rates

LABELS = (*METRICS, AVERAGE_KEY)


def _worst(values: np.ndarray, names: list[str]) -> str:
    r, q = np.unravel_index(np.argmin(values), values.shape)
    return f"{names[r]} {LABELS[q]}"


def run_coverage(args: argparse.Namespace) -> None:
    """One line per method and cluster count: the coverage's range over the models' quantities and its worst,
    the weakest model's Order Consistency (truth below / above the interval), and the differences' range."""
    outcomes = real_outcomes(args.gt)
    pop = make_population(outcomes, seed=args.seed)
    truth = pop.truth(np.eye(len(outcomes.models)))
    oc = LABELS.index("order_consistency_cov")
    print(f"population: {len(pop.tasks)} families of {len(outcomes.families)} real ones; base models "
          f"{', '.join(outcomes.models)}; Order Consistency of {outcomes.models[0]} {truth[0, oc]:.3f}")
    methods = tuple(tuple(m.split("/")) for m in args.methods) if args.methods else METHODS
    pairs = [f"{a}-{b}" for i, a in enumerate(outcomes.models) for b in outcomes.models[i + 1:]]
    for c in args.clusters:
        start = time.perf_counter()
        result = coverage(pop, np.eye(len(outcomes.models)), c, args.draws, args.resamples, methods,
                          seed=args.seed + 1)
        for name, cover in result.models.items():
            worst = _worst(cover, outcomes.models)
            print(f"C={c:3d} {name:22s} models {cover.min():.3f}-{cover.max():.3f} (worst {worst}); "
                  f"{outcomes.models[0]} Order Consistency {cover[0, oc]:.3f} (truth below "
                  f"{result.below[name][0, oc]:.3f}, above {result.above[name][0, oc]:.3f})", flush=True)
            if args.full:
                print(np.array2string(cover, precision=3, max_line_width=200))
        print(f"C={c:3d} {'pairs: t interval':22s} differences {result.pairs.min():.3f}-{result.pairs.max():.3f} "
              f"(worst {_worst(result.pairs, pairs)}); {result.draws} draws, {args.resamples} resamples, "
              f"{time.perf_counter() - start:.0f} s", flush=True)
        if args.full:
            print(np.array2string(result.pairs, precision=3, max_line_width=200))


def run_null(args: argparse.Namespace) -> None:
    """Per cluster count: the unadjusted false positive rate per metric and the family-wise rate after Holm."""
    outcomes = real_outcomes(args.gt)
    pop = make_population(outcomes, seed=args.seed)
    for c in args.clusters:
        r = null_rates(pop, exchangeable(args.models, len(outcomes.models)), c, args.draws, args.resamples,
                       seed=args.seed + 2)
        pairs = args.models * (args.models - 1) // 2
        print(f"C={c:3d} {args.models} exchangeable models ({pairs} pairs), {r.draws} draws: false positives per "
              f"pair (p < 0.05) {r.per_pair.min():.3f}-{r.per_pair.max():.3f} (Average Score "
              f"{r.per_pair[-1]:.3f}); family-wise after Holm {r.family_wise.min():.3f}-{r.family_wise.max():.3f} "
              f"(Average Score {r.family_wise[-1]:.3f})", flush=True)


def _decisions(document: StatsDocument, key: str) -> dict[tuple[str, str], bool]:
    return {(p["a"], p["b"]): bool(p["metrics"][key]["separable"]) for p in document["pairs"]
            if key in p["metrics"] and p["metrics"][key]["separable"] is not None}


def _rank(record: ModelRecord) -> float:
    """A model's rank by the Average Score (last without one)."""
    rank = record.get("rank")
    return math.inf if rank is None else rank


def run_table2(args: argparse.Namespace) -> None:
    """The 14-model leaderboard: separable pairs, tied with the top, rank intervals; agreement with --large."""
    outcomes = real_outcomes(args.gt)
    units = benchmark_units(outcomes, ladder(args.models, 0, len(outcomes.models) - 1, len(outcomes.models)),
                            seed=args.seed)
    start = time.perf_counter()
    doc = bootstrap_stats(units, StatsSettings())
    seconds = time.perf_counter() - start
    records = sorted(doc["models"].items(), key=lambda kv: _rank(kv[1]))
    print(f"{len(units)} models on {len(outcomes.family)} real ids in {doc['settings']['clusters']} families, "
          f"{doc['settings']['resamples']} resamples ({seconds:.1f} s):")
    for name, record in records:
        block = record["metrics"][AVERAGE_KEY]
        tied = " *" if name in doc["tied_with_top"][AVERAGE_KEY] else ""
        print(f"  {name}{tied:2s} {block['value']:.4f} [{block['low']:.4f}, {block['high']:.4f}] rank "
              f"{record['rank']} ({record['rank_low']}-{record['rank_high']})")
    pairs = [p["metrics"][AVERAGE_KEY] for p in doc["pairs"]]
    print(f"Average Score: {sum(p['p'] is not None and p['p'] < 0.05 for p in pairs)} of {len(pairs)} pairs with "
          f"p < 0.05, {sum(bool(p['separable']) for p in pairs)} separable after Holm; tied with the top: "
          f"{len(doc['tied_with_top'][AVERAGE_KEY])} ({', '.join(doc['tied_with_top'][AVERAGE_KEY])})")
    if not args.large:
        return
    large = bootstrap_stats(units, StatsSettings(resamples=args.large))
    keys = list(doc["metrics"])
    limit = {k: _decisions(large, k) for k in keys}
    print(f"at {args.large} resamples: {sum(limit[AVERAGE_KEY].values())} of {len(pairs)} separable by the Average "
          f"Score; {sum(sum(v.values()) for v in limit.values())} of {sum(len(v) for v in limit.values())} "
          "pair-metrics over every metric")
    for seed in range(args.seeds):
        at = bootstrap_stats(units, StatsSettings(seed=seed))
        same = [at_d == limit[k][pair] for k in keys for pair, at_d in _decisions(at, k).items()]
        avg = [at_d == limit[AVERAGE_KEY][pair] for pair, at_d in _decisions(at, AVERAGE_KEY).items()]
        print(f"  seed {seed}: Holm decisions equal to the large-B limit for {np.mean(avg):.1%} of the Average "
              f"Score's pairs, {np.mean(same):.1%} of every metric's", flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run one mode (coverage, null, table2) and print its lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", nargs="?", default="coverage", choices=("coverage", "null", "table2"))
    parser.add_argument("--gt", default=None, help="reference whose ids and families are used (default: ../shared's)")
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--resamples", type=int, default=1000, help="resamples per draw (coverage, null)")
    parser.add_argument("--clusters", type=int, nargs="+", default=[10, 30])
    parser.add_argument("--methods", nargs="+", default=None,
                        help="method/correction pairs (default: logit, percentile, bca, studentized expanded; "
                             "plain percentile)")
    parser.add_argument("--models", type=int, default=14)
    parser.add_argument("--large", type=int, default=0, help="table2: resamples of the large-B limit")
    parser.add_argument("--seeds", type=int, default=10, help="table2: seeds compared with the large-B limit")
    parser.add_argument("--full", action="store_true", help="coverage: every quantity's figure")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    {"coverage": run_coverage, "null": run_null, "table2": run_table2}[args.mode](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
