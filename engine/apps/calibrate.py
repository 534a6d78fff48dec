"""The calibration app (``m3bench-calibrate``, ``scripts/calibrate.py``): agreement of threshold
pairs with labelled call pairs, from the Hydra config in conf/calibrate/."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import cast

from engine.apps.config.calibrate import SPEC, CalibrateConfig
from engine.apps.kit import hydra_app
from engine.calibration import best_point, calibrate, load_pairs, pair_similarities
from engine.contract import ConfigError, InputError, atomic_write_csv, atomic_write_json
from engine.encoders import TextEncoder
from engine.metricspec import Profile
from kernels.device import resolve_device

COLUMNS = ["tau_strong", "tau_weak", "accuracy", "recall_weak", "recall_medium", "recall_strong"]


def run(cfg: CalibrateConfig, out: Path) -> int:
    """Calibrate on cfg.pairs, write the grid into the run folder `out` and print the best points; returns the
    exit code."""
    if cfg.pairs is None:
        print("error: no labelled pairs file: set pairs=FILE", file=sys.stderr)
        return 2
    try:
        profile = cast(Profile, str(cfg.profile))  # one of the schema's choices
        pairs = load_pairs(cfg.pairs)
        cache_dir = cfg.encoder.cache_dir or None
        encoder = TextEncoder(cfg.encoder.model, device=str(resolve_device(cfg.device)),
                              backend=str(cfg.encoder.backend), export_dir=cache_dir)
        similarity = pair_similarities(pairs, encoder, cache_dir, profile)
        rows = calibrate(similarity, pairs.labels, cfg.tau_weak_grid, cfg.tau_strong_grid)
        best = best_point(rows)
    except (InputError, ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    atomic_write_csv(out / "calibration.csv", COLUMNS, rows)
    described = encoder.description()
    atomic_write_json(out / "calibration.json", {"pairs": len(pairs.labels), "best": best, "grid": rows,
                                                 **({"encoder": described} if described is not None else {})})
    print("  ".join(f"{c:>13}" for c in COLUMNS))
    for r in sorted(rows, key=lambda r: -r["accuracy"])[:10]:
        print("  ".join(f"{'' if r[c] is None else round(r[c], 4):>13}" for c in COLUMNS))
    print(f"best: tau_weak={best['tau_weak']} tau_strong={best['tau_strong']} accuracy={best['accuracy']:.4f} "
          f"over {len(pairs.labels)} pairs")
    print(f"outputs: {out}")
    return 0


main = hydra_app(SPEC, run)
