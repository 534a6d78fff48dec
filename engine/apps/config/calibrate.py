"""The calibration app's schema (conf/calibrate/config.yaml): `CalibrateConfig`, and its `SPEC`."""

from __future__ import annotations

from dataclasses import dataclass, field

from omegaconf import MISSING

from engine.apps.config.fields import DEVICE, FOLDER, THRESHOLD, bounded, checked
from engine.apps.config.spec import AppSpec


@dataclass
class CalibrateEncoder:
    """The calibration app's encoder."""

    model: str | None = None
    backend: str | None = "auto"
    cache_dir: str | None = None


@dataclass
class CalibrateConfig:
    """conf/calibrate/config.yaml."""

    pairs: str = MISSING
    profile: str = "reference"
    device: str = checked("auto", DEVICE)
    home: str = MISSING
    output_dir: str = checked(MISSING, FOLDER)
    encoder: CalibrateEncoder = field(default_factory=CalibrateEncoder)
    tau_weak_grid: list[float] = bounded([], THRESHOLD)
    tau_strong_grid: list[float] = bounded([], THRESHOLD)


SPEC = AppSpec("calibrate", CalibrateConfig)
"""m3bench-calibrate."""
