"""The demo files (a reference set and several models) and benchmark-scale prediction sets."""

from __future__ import annotations

import json
import marshal
import zlib
from dataclasses import replace
from pathlib import Path

import numpy as np

from engine.contract import atomic_write_bytes
from engine.contract.pause import gc_paused
from engine.synthetic.draws import _PERTURB_STREAM
from engine.synthetic.families import make_reference
from engine.synthetic.perturb import PROFILES, ErrorProfile, _count_calls, _perturb_copy, perturb

# --------------------------------------------------------------------------
# Demo files and benchmark-scale predictions
# --------------------------------------------------------------------------


def demo_models() -> dict[str, ErrorProfile]:
    """The named models of the demo leaderboard, best first. Each answers every task of the demo
    reference (`missing_task` 0), so scoring the demo warns of nothing; their errors are in the calls."""
    profiles = {
        "demo_strong": PROFILES["strong"],
        "demo_medium": PROFILES["medium"],
        "demo_hasty": ErrorProfile(drop=0.12, extra=0.02, drift=0.15, strong_drift=0.05, wrong_tool=0.03,
                                   merge=0.6),
        "demo_weak": PROFILES["weak"],
        "demo_chaotic": PROFILES["chaotic"],
    }
    return {name: replace(profile, missing_task=0.0) for name, profile in profiles.items()}


def _write_if_changed(path: Path, data: bytes) -> None:
    try:
        if path.read_bytes() == data:
            return
    except FileNotFoundError:
        pass
    atomic_write_bytes(path, data)


def _dumps(tasks: list[dict]) -> bytes:
    return (json.dumps(tasks, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def demo_records(n_tasks: int = 60, seed: int = 0) -> tuple[list[dict], dict[str, list[dict]]]:
    """The demo's reference trajectories and ``{model: its predicted trajectories}``, in memory (what
    write_demo writes)."""
    reference = make_reference(n_tasks, seed)
    models = {}
    for name, profile in demo_models().items():
        model_seed = (seed << 32) | zlib.crc32(name.encode("utf-8"))
        models[name] = perturb(reference, profile, model_seed)
    return reference, models


def write_demo(directory: Path, n_tasks: int = 60, seed: int = 0) -> tuple[Path, dict[str, Path]]:
    """Write ``reference.json`` and ``<model>.json`` per demo model (demo_records) into ``directory``.

    Files are replaced atomically and left untouched when their content is
    already identical. Returns the reference path and ``{model: path}``.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    reference, models = demo_records(n_tasks, seed)
    gt_path = directory / "reference.json"
    _write_if_changed(gt_path, _dumps(reference))
    paths = {}
    for name, tasks in models.items():
        path = directory / f"{name}.json"
        _write_if_changed(path, _dumps(tasks))
        paths[name] = path
    return gt_path, paths


def scale_predictions(
    reference: list[dict], n_calls: int, profile: ErrorProfile | None = None, seed: int = 0
) -> list[list[dict]]:
    """Prediction files over ``reference`` totalling about ``n_calls`` predicted calls.

    Each file is an independently seeded perturbation of the whole reference;
    the last one is cut after the task that reaches ``n_calls``. With no
    ``profile``, files cycle through the "strong", "medium", "weak" and
    "chaotic" profiles.
    """
    if n_calls <= 0:
        return []
    cycle = [profile] if profile is not None else [PROFILES[k] for k in ("strong", "medium", "weak", "chaotic")]
    ref_calls = _count_calls(reference)
    if ref_calls == 0 or all(p.missing_task == 1.0 or (p.drop == 1.0 and p.extra == 0.0) for p in cycle):
        raise ValueError("no predicted calls can be produced from this reference and profile")
    files: list[list[dict]] = []
    total = 0
    with gc_paused():
        blob = marshal.dumps(reference)
        while total < n_calls:
            k = len(files)
            rng = np.random.default_rng([_PERTURB_STREAM, seed, k])
            tasks = _perturb_copy(marshal.loads(blob), ref_calls, cycle[k % len(cycle)], rng)
            count = _count_calls(tasks)
            if total + count > n_calls:
                for cut, task in enumerate(tasks, 1):
                    total += sum(len(step["calls"]) for step in task["steps"])
                    if total >= n_calls:
                        del tasks[cut:]
                        break
            else:
                total += count
            files.append(tasks)
    return files
