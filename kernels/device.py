"""Device selection and CPU threading shared by the encoder and the alignment kernels.

torch is loaded where a function needs it, so the apps' settings check (engine.apps.config: a device this
machine has) reads `device_problem` without loading torch for `auto` and `cpu`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

SMALL_SWEEP_CALLS = 100_000
"""Below this many predicted calls the kernels run on one CPU thread (see `kernel_threads`)."""


_DEVICE = re.compile(r"auto|cpu|cuda(?::(\d+))?")


def device_problem(name: str) -> str | None:
    """Why `name` is no device of this machine (None: it is one): the names are auto, cpu, cuda and cuda:N,
    and a CUDA device must be one torch sees here."""
    found = _DEVICE.fullmatch(name)
    if found is None:
        return "must be auto, cpu, cuda or cuda:N (N: a CUDA device's number)"
    if not name.startswith("cuda"):
        return None
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0:
        return "torch sees no CUDA device here (device=cpu, or auto, runs on the CPU)"
    if found.group(1) is not None and int(found.group(1)) >= count:
        return (f"torch sees {count} CUDA device{'s' if count > 1 else ''} here: "
                + ("cuda:0" if count == 1 else f"cuda:0 to cuda:{count - 1}"))
    return None


def resolve_device(name: str) -> torch.device:
    """Map 'auto' | 'cpu' | 'cuda' | 'cuda:N' to a torch device; 'auto' picks cuda when present. ValueError
    naming the setting for a name that is no device of this machine (device_problem)."""
    import torch

    problem = device_problem(name)
    if problem is not None:
        raise ValueError(f"device={name}: {problem}")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def kernel_threads(predicted_calls: int) -> int | None:
    """CPU threads for the alignment and metric kernels of a sweep: one for a small sweep, whose
    tensors are too small to gain from more and whose many short parallel ops each stall while
    any of their threads waits for a core; torch's own setting (None) for a large one."""
    return 1 if predicted_calls < SMALL_SWEEP_CALLS else None


@contextmanager
def cpu_threads(count: int | None) -> Iterator[None]:
    """Run the block with `count` intra-op CPU threads (None: unchanged), restoring the setting after."""
    import torch

    before = torch.get_num_threads()
    if count is not None and count != before:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)
