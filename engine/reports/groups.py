"""Which results of a folder of runs may share one leaderboard.

Results are comparable when they were scored against the same reference set (the content of the GT
file and of any further reference files), with the same thresholds (tau_weak, tau_strong), metrics
profile and encoder. The first four are read from each results_eval.json's meta, the encoder from the
run folder's `.hydra/config.yaml` (the nearest one above the result); a setting a run does not record
reads "unrecorded".
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from omegaconf import OmegaConf

from engine.reports.read import ModelResult

COMPARED = ("reference", "tau_weak", "tau_strong", "profile", "encoder")
"""The settings that must agree for results to share a leaderboard."""

UNRECORDED = "unrecorded"
DEFAULT_ENCODER = "all-MiniLM-L6-v2"


def run_folder(result: ModelResult, root: Path) -> Path | None:
    """The nearest folder from the result's own up to `root` holding Hydra's `.hydra/config.yaml`, else None."""
    folder = result.path.parent
    while True:
        if (folder / ".hydra" / "config.yaml").is_file():
            return folder
        if folder == root or folder.parent == folder:
            return None
        folder = folder.parent


def _encoder(run: Path | None) -> str:
    """The encoder a run's `.hydra/config.yaml` names (its `encoder.model`, null: the bundled one)."""
    if run is None:
        return UNRECORDED
    try:
        model = OmegaConf.select(OmegaConf.load(run / ".hydra" / "config.yaml"), "encoder.model",
                                 default=DEFAULT_ENCODER)
    except Exception:  # an unreadable config records nothing
        return UNRECORDED
    return str(model if model is not None else DEFAULT_ENCODER)


def _file_digest(path: str, cache: dict[str, str]) -> str:
    """sha256 of a reference file's content (12 hex digits), or 'missing <path>' when it cannot be read."""
    if path not in cache:
        try:
            cache[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]
        except OSError:
            cache[path] = f"missing {path}"
    return cache[path]


def result_settings(result: ModelResult, root: Path, cache: dict[str, str] | None = None) -> dict[str, object]:
    """The compared settings of one result: reference (content digest), tau_weak, tau_strong, profile, encoder."""
    cache = {} if cache is None else cache
    meta = result.meta
    if "gt" in meta and meta["gt"] is None:
        reference: str = "none"
    elif isinstance(meta.get("gt"), str):
        references = meta.get("references")
        paths = references if isinstance(references, list) else [meta["gt"]]
        reference = "+".join(_file_digest(str(p), cache) for p in paths)
    else:
        reference = UNRECORDED
    return {"reference": reference, "tau_weak": meta.get("tau_weak", UNRECORDED),
            "tau_strong": meta.get("tau_strong", UNRECORDED), "profile": meta.get("profile", UNRECORDED),
            "encoder": _encoder(run_folder(result, root))}


def settings_digest(settings: Mapping[str, object]) -> str:
    """A short name for a set of compared settings (8 hex digits)."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:8]


def describe(settings: Mapping[str, object]) -> str:
    """The settings in words: 'reference 1a2b3c4d5e6f, tau_weak 0.5, tau_strong 0.8, profile reference, encoder ...'."""
    return ", ".join(f"{key} {settings[key]}" for key in COMPARED)


@dataclass(frozen=True)
class Group:
    """Results that share every compared setting, in the order they were given."""

    settings: dict[str, object]
    results: list[ModelResult]

    @property
    def digest(self) -> str:
        """The group's short name (its settings' digest)."""
        return settings_digest(self.settings)

    def line(self) -> str:
        """One line: the digest, the number of results and the settings."""
        return f"{self.digest}: {len(self.results)} result(s); {describe(self.settings)}"


def group_results(results: list[ModelResult], root: Path) -> list[Group]:
    """The results split into groups of comparable ones, ordered by their first result."""
    cache: dict[str, str] = {}
    groups: dict[str, Group] = {}
    for result in results:
        settings = result_settings(result, root, cache)
        group = groups.setdefault(settings_digest(settings), Group(settings, []))
        group.results.append(result)
    return list(groups.values())


def differing(groups: list[Group]) -> list[str]:
    """The compared settings whose values differ between the groups."""
    return [key for key in COMPARED if len({json.dumps(g.settings[key]) for g in groups}) > 1]


def why_not_comparable(groups: list[Group]) -> str:
    """One line saying which settings keep the groups apart and their values."""
    return "; ".join(f"{key} differs ({', '.join(sorted({str(g.settings[key]) for g in groups}))})"
                     for key in differing(groups))
