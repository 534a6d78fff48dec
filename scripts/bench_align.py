"""scripts/bench.py --replicate N / --synthetic N: align + metrics throughput in this process, on replicated
prediction files or a generated sweep, with the encoder or text-seeded pseudo-embeddings."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import resource
import time
from pathlib import Path

import numpy as np
import torch

from engine.align import candidate_pairs, match
from engine.contract import TrajectoryFile, parse_trajectories, read_trajectories
from engine.encode import embed_distinct
from engine.encoders import TextEncoder
from engine.metrics import task_scores
from engine.pipeline import ScoreSettings
from engine.serialize import flatten_sweep
from engine.synthetic import make_reference, scale_predictions
from engine.thresholds import Thresholds
from kernels.device import resolve_device


def peak_rss_gb() -> float:
    """Peak resident set size of this process in GiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1 << 20)


def pseudo_embeddings(texts: list[str], dim: int = 384) -> np.ndarray:
    """Deterministic text-seeded vectors (a shared direction plus noise), for sweeps too big to encode here."""
    out = np.empty((len(texts), dim), dtype=np.float32)
    for i, text in enumerate(texts):
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        out[i] = np.random.default_rng(seed).standard_normal(dim, dtype=np.float32)
    out[:, 0] += 2.0 * np.sqrt(dim) / 4
    return out


def sweep_files(args: argparse.Namespace) -> tuple[TrajectoryFile, list[TrajectoryFile]]:
    """The GT and prediction files of an align benchmark: replicated files or a synthetic sweep."""
    if args.synthetic:
        reference = make_reference(args.tasks, seed=0)
        gt = parse_trajectories(Path("reference.json"), reference)
        preds = [parse_trajectories(Path(f"synthetic_{k}.json"), tasks)
                 for k, tasks in enumerate(scale_predictions(reference, args.synthetic, seed=1))]
        return gt, preds
    gt = read_trajectories(args.gt)
    preds = [read_trajectories(p, lenient=True) for p in args.predictions]
    return gt, [dataclasses.replace(p, path=p.path.with_name(f"{p.path.stem}_{k}.json"))
                for k in range(args.replicate) for p in preds]


def bench_align(args: argparse.Namespace, settings: ScoreSettings, thresholds: Thresholds) -> dict:
    """Align + metrics throughput on replicated prediction files or a synthetic sweep; the figures."""
    device = resolve_device(settings.device)
    gt, preds = sweep_files(args)
    tables = flatten_sweep(gt, preds, settings.profile)
    if args.pseudo_embeddings:
        embeddings = pseudo_embeddings(tables.texts)
    else:
        embeddings, _ = embed_distinct(tables.texts, TextEncoder(settings.encoder_model, device=str(device)),
                                       settings.cache_dir)
    calls = len(tables.pred_sample)
    best = float("inf")
    for _ in range(args.repeats):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        candidates = candidate_pairs(tables, embeddings, device)
        matches = match(candidates, thresholds.tau_weak)
        task_scores(tables, matches, thresholds.tau_strong, settings.profile)
        if device.type == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    print(f"align+metrics: {calls} predicted calls, {candidates.buckets.num_pairs} pairs, "
          f"{tables.num_samples} samples, {len(tables.texts)} distinct texts in {best:.3f} s "
          f"(best of {args.repeats}) = {calls / best:,.0f} calls/s on {device}; "
          f"peak RSS of the process {peak_rss_gb():.2f} GiB")
    return {"predicted_calls": calls, "pairs": int(candidates.buckets.num_pairs),
            "align_metrics_best_s": round(best, 4), "calls_per_s": round(calls / best),
            "peak_rss_gib": round(peak_rss_gb(), 3)}
