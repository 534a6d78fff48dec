"""Time every stage of scoring a set of prediction files, and the encoder alone on the same texts.

    python scripts/bench.py --gt GT.json P1.json P2.json ...           # cold cache (fresh temp dir)
    python scripts/bench.py --gt GT.json P*.json --cache-dir DIR       # warm when DIR is filled
    python scripts/bench.py --gt GT.json P*.json --replicate 100 --skip-encoder   # align+metrics throughput

Prints seconds per stage (load, serialize, embed, align, metrics, write), the encoder
alone on the same distinct texts (a fresh model load plus encode, and encode only), and
the ratio of the whole scoring to the encoder alone.
"""

from __future__ import annotations

import argparse
import dataclasses
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from engine.align import candidate_pairs, match  # noqa: E402
from engine.encode import TextEncoder, embed_distinct  # noqa: E402
from engine.load import load_trajectories  # noqa: E402
from engine.metrics import task_scores  # noqa: E402
from engine.pipeline import ScoreSettings, StageTimer, output_dirs, score_sweep, write_sweep  # noqa: E402
from engine.serialize import flatten_sweep  # noqa: E402
from kernels.device import resolve_device  # noqa: E402


def peak_rss_gb() -> float:
    """Peak resident set size of this process in GiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1 << 20)


def bench_pipeline(args: argparse.Namespace, settings: ScoreSettings) -> None:
    """Whole scoring with per-stage times, then the encoder alone on the same texts."""
    timer = StageTimer()
    start = time.perf_counter()
    result = score_sweep(args.gt, args.predictions, settings, timer)
    with timer.stage("write"):
        with tempfile.TemporaryDirectory() as out:
            write_sweep(result, output_dirs([Path(p) for p in args.predictions], Path(out)))
    total = time.perf_counter() - start
    for stage, seconds in timer.seconds.items():
        print(f"{stage:>10}: {seconds:8.3f} s")
    print(f"{'total':>10}: {total:8.3f} s   ({result.embedding.distinct_texts} distinct texts, "
          f"{result.embedding.encoded} encoded, {len(result.tables.pred_sample)} predicted calls)")
    if args.skip_encoder:
        return
    t0 = time.perf_counter()
    encoder = TextEncoder(settings.encoder_model, device=str(resolve_device(settings.device)),
                          batch_size=settings.encoder_batch_size)
    encoder.model  # noqa: B018 - load now, timed separately
    t1 = time.perf_counter()
    encoder.encode(result.tables.texts)
    t2 = time.perf_counter()
    print(f"encoder alone: load {t1 - t0:.3f} s + encode {t2 - t1:.3f} s = {t2 - t0:.3f} s")
    print(f"ratio total / encode-only: {total / (t2 - t1):.3f}")
    print(f"ratio total / load+encode: {total / (t2 - t0):.3f}")


def bench_align(args: argparse.Namespace, settings: ScoreSettings) -> None:
    """Align + metrics throughput on the prediction files replicated `--replicate` times."""
    device = resolve_device(settings.device)
    gt = load_trajectories(args.gt)
    preds = [load_trajectories(p) for p in args.predictions]
    copies = [dataclasses.replace(p, path=p.path.with_name(f"{p.path.stem}_{k}.json"))
              for k in range(args.replicate) for p in preds]
    tables = flatten_sweep(gt, copies, settings.profile)
    embeddings, _ = embed_distinct(tables.texts, TextEncoder(settings.encoder_model, device=str(device)),
                                   settings.cache_dir)
    calls = len(tables.pred_sample)
    best = float("inf")
    for _ in range(args.repeats):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        candidates = candidate_pairs(tables, embeddings, device)
        matches = match(candidates, settings.tau_weak)
        task_scores(tables, matches, settings.tau_strong, settings.profile)
        if device.type == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    print(f"align+metrics: {calls} predicted calls, {candidates.buckets.num_pairs} pairs, "
          f"{tables.num_samples} samples in {best:.3f} s (best of {args.repeats}) "
          f"= {calls / best:,.0f} calls/s on {device}; peak RSS {peak_rss_gb():.2f} GiB")


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("predictions", nargs="+", help="prediction files")
    parser.add_argument("--gt", required=True, help="reference trajectories")
    parser.add_argument("--cache-dir", default=None, help="embedding cache (default: a fresh temp dir)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--tau-weak", type=float, default=0.6)
    parser.add_argument("--tau-strong", type=float, default=0.8)
    parser.add_argument("--profile", default="reference")
    parser.add_argument("--replicate", type=int, default=0,
                        help="benchmark align+metrics on the files replicated N times")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-encoder", action="store_true", help="do not time the encoder alone")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        settings = ScoreSettings(tau_weak=args.tau_weak, tau_strong=args.tau_strong, profile=args.profile,
                                 device=args.device, cache_dir=args.cache_dir or tmp)
        if args.replicate:
            bench_align(args, settings)
        else:
            bench_pipeline(args, settings)


if __name__ == "__main__":
    main()
