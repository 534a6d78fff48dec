"""Several references per task: reading them, and choosing each prediction's best reference.

A task may have several acceptable reference trajectories: a reference file whose root is an object
of id -> task may hold a list of task objects under an id (its alternatives, in order), and several
reference files (``data.references``) add theirs in file order. Every prediction is aligned against
every reference of its task in the same pass (engine.serialize lays out one sample per reference);
the task then takes the reference with the best value of the selection metrics (``align.select``,
default Recall, ties broken by Argument Similarity, then by the reference's order).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engine.contract import ConfigError, InputError, Trajectory, TrajectoryFile, parse_trajectories, read_json
from engine.metricspec import alignment_keys

Alternatives = dict[str, tuple[Trajectory, ...]]


def default_select(profile: str) -> tuple[str, ...]:
    """Recall, then the profile's Argument Similarity."""
    keys = alignment_keys(profile)
    return ("recall", "avg_sim_all_cov" if "avg_sim_all_cov" in keys else "arg_sim")


def check_select(select: Sequence[str] | None, profile: str) -> tuple[str, ...]:
    """The selection metrics, checked against the profile's metric keys (None or empty: the default)."""
    if not select:
        return default_select(profile)
    keys = alignment_keys(profile)
    unknown = [k for k in select if k not in keys]
    if unknown:
        raise ConfigError(f"align.select: unknown metric(s) {', '.join(map(repr, unknown))} for profile "
                          f"{profile} (expected some of {', '.join(keys)})")
    return tuple(select)


def _read_file(path: Path) -> tuple[TrajectoryFile, Alternatives]:
    """One reference file: its first reference per id, and every reference of the ids given a list."""
    return _parse_root(path, read_json(path, "trajectory file"))


def _parse_root(path: Path, root: object) -> tuple[TrajectoryFile, Alternatives]:
    """A reference file's parsed root (`path` names it in errors): its first reference per id, and every
    reference of the ids given a list."""
    lists = {k: v for k, v in root.items() if isinstance(v, list)} if isinstance(root, dict) else {}
    if not lists or not isinstance(root, dict):
        gt = parse_trajectories(path, root)
        return gt, {tid: (task,) for tid, task in gt.tasks.items()}
    for tid, items in lists.items():
        if not items:
            raise InputError(path, "an empty list of references", task_id=str(tid))
        for r, obj in enumerate(items):
            if isinstance(obj, dict) and obj.get("id") is not None and str(obj["id"]) != str(tid):
                raise InputError(path, f"reference {r} of the list says id {obj['id']!r}", task_id=str(tid),
                                 field="id")
    first = parse_trajectories(path, {k: (v[0] if k in lists else v) for k, v in root.items()})
    alternatives: dict[str, tuple[Trajectory, ...]] = {tid: (task,) for tid, task in first.tasks.items()}
    for key, items in lists.items():
        for obj in items[1:]:
            (task,) = parse_trajectories(path, {key: obj}).tasks.values()
            alternatives[task.id] += (task,)
    return first, alternatives


def read_references(paths: str | Path | Sequence[str | Path]) -> tuple[TrajectoryFile, Alternatives | None]:
    """The reference set: a file of each id's first reference (what a single-reference scorer reads),
    and every id's references in order, or None when each id has exactly one."""
    listed = [Path(paths)] if isinstance(paths, (str, Path)) else [Path(p) for p in paths]
    if not listed:
        raise ConfigError("no reference file: set data.gt=PATH or data.references=[PATH, ...]")
    return _merged([_read_file(p) for p in listed])


def parse_references(label: Path, root: object) -> tuple[TrajectoryFile, Alternatives | None]:
    """The reference set of one file's content already parsed (a list of task objects, or an object of id ->
    task or -> list of tasks), as read_references gives it; `label` names it in errors."""
    return _merged([_parse_root(label, root)])


def _merged(files: list[tuple[TrajectoryFile, Alternatives]]) -> tuple[TrajectoryFile, Alternatives | None]:
    """The reference set of the files read, in order (read_references)."""
    alternatives: dict[str, tuple[Trajectory, ...]] = {}
    for _, alts in files:
        for tid, refs in alts.items():
            alternatives[tid] = alternatives.get(tid, ()) + refs
    if all(len(refs) == 1 for refs in alternatives.values()) and len(files) == 1:
        return files[0][0], None
    first = files[0][0]
    merged = TrajectoryFile(path=first.path, tasks={tid: refs[0] for tid, refs in alternatives.items()},
                            duplicate_ids=first.duplicate_ids)
    return merged, alternatives


def chosen_samples(task_ids: Sequence[str], sample_task: np.ndarray, sample_ref: np.ndarray | None,
                   values: dict[str, np.ndarray], samples: np.ndarray, select: Sequence[str]) -> np.ndarray:
    """The samples of one prediction file that stay: per id, the one whose reference gives the largest
    values of `select` in order, then the first reference; `samples` unchanged with one reference each."""
    samples = np.asarray(samples)
    if sample_ref is None or not (sample_ref[samples] > 0).any():
        return samples
    best: dict[str, tuple[tuple[float, ...], int]] = {}
    for s in samples.tolist():
        tid = task_ids[sample_task[s]]
        key = tuple(-float(values[k][s]) for k in select) + (int(sample_ref[s]),)
        if tid not in best or key < best[tid][0]:
            best[tid] = (key, s)
    return np.asarray(sorted(s for _, s in best.values()), dtype=np.int64)
