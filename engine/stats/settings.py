"""The statistics step's settings, and the memory it will need, checked before anything is allocated."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import cast

import torch

from engine.contract import ConfigError
from engine.stats.document import SettingsRecord
from kernels import bootstrap as bs

STATS_FILE = "stats.json"
AVERAGE_KEY = "average_score"
CLUSTERINGS = ("family", "sample")
METHODS = ("logit", "percentile", "bca")
CORRECTIONS = ("expanded", "none")
MIN_CLUSTERS = 5
"""The fewest clusters a quantity needs for an interval, and a pair for a test, by simulation on the real-shaped
population (docs/statistics.md, "Validity"; `scripts/stats_simulation.py coverage --clusters 4 5 6 8`): at 4
families the weak model's Order Consistency interval covers 90%, from 5 on every quantity covers at least 93%."""


@dataclass(frozen=True)
class StatsSettings:
    """How the bootstrap runs: resamples, interval level and method, seed, clustering, scheme, power and the
    fewest clusters an interval or a test needs."""

    resamples: int = 10_000
    level: float = 0.95
    seed: int = 0
    cluster: str = "family"        # family | sample
    method: str = "logit"          # logit (t interval on the metric's logit scale) | percentile | bca
    correction: str = "expanded"   # expanded (small-sample: sqrt(C/(C-1)) and Student's t) | none
    scheme: str = "multinomial"    # multinomial | poisson
    power: float = 0.8
    min_clusters: int = MIN_CLUSTERS

    def check(self) -> StatsSettings:
        """The settings, or a ConfigError naming the one that is wrong."""
        if self.resamples < 2:
            raise ConfigError(f"stats.resamples={self.resamples}: need at least 2 resamples")
        if self.min_clusters < 2:
            raise ConfigError(f"stats.min_clusters={self.min_clusters}: an interval needs at least 2 clusters")
        for key, value in (("level", self.level), ("power", self.power)):
            if not 0.0 < value < 1.0:
                raise ConfigError(f"stats.{key}={value}: must lie strictly between 0 and 1")
        for key, choice, choices in (("cluster", self.cluster, CLUSTERINGS), ("method", self.method, METHODS),
                                     ("correction", self.correction, CORRECTIONS),
                                     ("scheme", self.scheme, bs.SCHEMES)):
            if choice not in choices:
                raise ConfigError(f"stats.{key}={choice!r}: expected one of {', '.join(choices)}")
        return self

    def record(self, clusters: int) -> SettingsRecord:
        """The settings as stats.json and usage.json record them, with the `clusters` resampled."""
        return cast(SettingsRecord, {**asdict(self), "clusters": clusters})  # held to it: test_document_shapes


def memory_needed(resamples: int, clusters: int, entities: int, pairs: int, quantities: int, method: str) -> int:
    """Bytes the statistics step holds at its peak for these sizes: the resample matrix (counts and weights),
    every entity's resampled values, one block of pair differences (PAIR_BLOCK pairs of one metric) with its
    signs, and the order statistics of the percentile and BCa intervals (a sorted copy of the models' rows)."""
    rows = entities * quantities
    block = min(pairs, PAIR_BLOCK)
    values = 8 * resamples * (2 * clusters + 2 * rows + 3 * block)
    if method != "logit":
        values += 8 * resamples * 2 * rows
    return values


PAIR_BLOCK = 4096
"""Pair differences are computed one metric and this many pairs at a time."""


def available_memory(device: torch.device) -> int:
    """Bytes free for the step: the device's free memory on CUDA, else the host's available memory."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def check_memory(settings: StatsSettings, clusters: int, entities: int, pairs: int, quantities: int,
                 device: torch.device) -> None:
    """ConfigError (one line) when the step would need more memory than the device has free."""
    need = memory_needed(settings.resamples, clusters, entities, pairs, quantities, settings.method)
    free = available_memory(device)
    if need > free:
        raise ConfigError(f"stats.resamples={settings.resamples}: the statistics step would need about "
                          f"{need / 2**30:.1f} GiB ({entities} models and shared-id sets x {quantities} quantities x "
                          f"{settings.resamples} resamples over {clusters} clusters), more than the {free / 2**30:.1f} "
                          f"GiB free on {device.type}; lower stats.resamples")
