"""The calibration app's schema (conf/calibrate/config.yaml): `CalibrateConfig`, and its `SPEC`."""

from __future__ import annotations

from dataclasses import dataclass, field

from omegaconf import MISSING

from engine.apps.config.fields import DEVICE, FOLDER, THRESHOLD, bounded, checked
from engine.apps.config.score import Backend, Profile
from engine.apps.config.spec import AppSpec

GRID = [0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95]
"""The thresholds each grid tries by default."""


@dataclass
class CalibrateEncoder:
    """The calibration app's encoder (model null: the bundled all-MiniLM-L6-v2)."""

    model: str | None = None
    backend: Backend = Backend.auto
    cache_dir: str | None = "${oc.env:M3BENCH_CACHE,${home}/embeddings}"


@dataclass
class CalibrateConfig:
    """conf/calibrate/config.yaml: `pairs` (the labelled pairs file) is the user's to give."""

    pairs: str | None = None
    profile: Profile = Profile.reference
    device: str = checked("auto", DEVICE)
    home: str = MISSING
    output_dir: str = checked(MISSING, FOLDER)
    encoder: CalibrateEncoder = field(default_factory=CalibrateEncoder)
    tau_weak_grid: list[float] = bounded(GRID, THRESHOLD)
    tau_strong_grid: list[float] = bounded(GRID, THRESHOLD)


SPEC = AppSpec("calibrate", CalibrateConfig, typed=True)
"""m3bench-calibrate."""
