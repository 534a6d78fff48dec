"""What `engine.api.score` reads: prediction and reference trajectories given as files or held in memory, each
model with its name."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias, TypeGuard

from engine.contract import (
    ConfigError,
    JsonObject,
    TrajectoryFile,
    check_name,
    parse_trajectories,
    read_trajectories,
    scorable,
)
from engine.pipeline import output_dirs
from engine.references import Alternatives, parse_references, read_references

PathLike: TypeAlias = "str | os.PathLike[str]"
Records: TypeAlias = "list[JsonObject] | JsonObject"
"""Trajectories held in memory: what a trajectory file's JSON parses to (a list of task objects, or an
object of id -> task), in the published record shape (engine.contract.trajectory)."""
Predictions: TypeAlias = "PathLike | Sequence[PathLike] | list[JsonObject] | Mapping[str, PathLike | Records]"
References: TypeAlias = "PathLike | Sequence[PathLike] | Records"


def in_memory(name: str) -> Path:
    """The label that stands for a file's path in what trajectories held in memory give (errors, meta)."""
    return Path(f"<in-memory: {name}>")


@dataclass(frozen=True)
class Source:
    """One model to score: its name, and its file or its trajectories held in memory."""

    name: str
    path: Path | None
    records: object = None

    def read(self, parse_strings: bool) -> TrajectoryFile:
        """The model's scorable trajectories, read as the score app reads a prediction file."""
        if self.path is not None:
            return scorable(read_trajectories(self.path, lenient=True, parse_strings=parse_strings))
        return scorable(parse_trajectories(in_memory(self.name), self.records, lenient=True,
                                           parse_strings=parse_strings))


def is_path(value: object) -> TypeGuard[PathLike]:
    return isinstance(value, (str, os.PathLike))


def _records(value: object) -> bool:
    return isinstance(value, dict) or (isinstance(value, list) and all(isinstance(v, dict) for v in value))


def read_sources(predictions: Predictions, names: str | Sequence[str] | None) -> tuple[list[Source], bool]:
    """The models of `predictions` with their names, and whether each gets a folder of its own when written
    (not for one file or one list of records, as the score app writes one inputs.file)."""
    if is_path(predictions):
        sources, own_dirs = [Source(Path(predictions).stem, Path(predictions))], False
    elif isinstance(predictions, Mapping):
        if not predictions:
            raise ConfigError("predictions: an empty mapping (expected model name -> file or trajectories)")
        sources = []
        for name, value in predictions.items():
            if is_path(value):
                sources.append(Source(check_name(name, "predictions"), Path(value)))
            elif _records(value):
                sources.append(Source(check_name(name, "predictions"), None, value))
            else:
                raise TypeError(f"predictions[{name!r}]: expected a file path or trajectories (a list of task "
                                f"objects, or an object of id -> task), got {type(value).__name__}")
        own_dirs = True
    elif isinstance(predictions, Sequence) and predictions and all(is_path(p) for p in predictions):
        paths = [Path(p) for p in predictions if is_path(p)]
        sources, own_dirs = [Source(d.name, p) for p, d in zip(paths, output_dirs(paths, Path(".")))], True
    elif isinstance(predictions, list) and predictions and _records(predictions):
        sources, own_dirs = [Source("predictions", None, predictions)], False
    else:
        raise TypeError("predictions: expected a file path, a list of file paths, a list of task objects (one "
                        "model's trajectories) or a mapping of model name -> file path or trajectories, got "
                        + (f"an empty {type(predictions).__name__}" if isinstance(predictions, (list, tuple))
                           else type(predictions).__name__))
    if names is not None:
        listed = [names] if isinstance(names, str) else list(names)
        if len(listed) != len(sources):
            raise ConfigError(f"names: {len(listed)} name(s) for {len(sources)} model(s)")
        sources = [Source(check_name(n, "names"), s.path, s.records) for n, s in zip(listed, sources)]
    seen = [s.name for s in sources]
    repeated = sorted({n for n in seen if seen.count(n) > 1})
    if repeated:
        raise ConfigError(f"names: {', '.join(repeated)} named twice: give each model a name of its own (names=...)")
    return sources, own_dirs


def references_of(references: References) -> tuple[TrajectoryFile, Alternatives | None, tuple[Path, ...]]:
    """The reference set (engine.references) of a file, several files or trajectories held in memory, and
    the files it was read from."""
    if is_path(references):
        paths: list[Path] = [Path(references)]
    elif isinstance(references, (list, tuple)) and references and all(is_path(r) for r in references):
        paths = [Path(r) for r in references if is_path(r)]
    elif _records(references) and references:
        gt, alternatives = parse_references(in_memory("references"), references)
        return gt, alternatives, (in_memory("references"),)
    else:
        raise TypeError("references: expected a file path, a list of file paths (several references per task) "
                        "or the reference trajectories (a list of task objects, or an object of id -> task), got "
                        + (f"an empty {type(references).__name__}" if isinstance(references, (list, tuple, dict))
                           else type(references).__name__))
    gt, alternatives = read_references(paths)
    return gt, alternatives, tuple(paths)
