"""The similarity thresholds of the alignment, defined and checked in one place."""

from __future__ import annotations

from dataclasses import dataclass

from engine.contract import ConfigError


@dataclass(frozen=True)
class Thresholds:
    """tau_weak: the least similarity of a match; tau_strong: the least of a strong match."""

    tau_weak: float = 0.6
    tau_strong: float = 0.8

    def __post_init__(self) -> None:
        for name in ("tau_weak", "tau_strong"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not -1.0 <= value <= 1.0:
                raise ConfigError(f"align.{name}={value!r}: a threshold must be a number in [-1, 1]")
        object.__setattr__(self, "tau_weak", float(self.tau_weak))
        object.__setattr__(self, "tau_strong", float(self.tau_strong))

    def inversion(self) -> str | None:
        """The warning for tau_weak above tau_strong, None otherwise. The published scorer
        (evaluate_trajectories.py) takes such thresholds as they are, and so does the project: every match
        (S >= tau_weak) is then strong, so avg_sim_strong_cov equals avg_sim_all_cov."""
        if self.tau_weak <= self.tau_strong:
            return None
        return (f"align.tau_weak={self.tau_weak:g} is above align.tau_strong={self.tau_strong:g}: every match is "
                "strong (avg_sim_strong_cov = avg_sim_all_cov); scored as the published scorer does")
