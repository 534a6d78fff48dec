"""Device selection and CPU threading shared by the encoder and the alignment kernels."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

SMALL_SWEEP_CALLS = 100_000
"""Below this many predicted calls the kernels run on one CPU thread (see `kernel_threads`)."""


def resolve_device(name: str) -> torch.device:
    """Map 'auto' | 'cpu' | 'cuda' | 'cuda:N' to a torch device; 'auto' picks cuda when present."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={name} was asked for but torch sees no CUDA device")
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be auto, cpu or cuda, got {name!r}")
    return device


def kernel_threads(predicted_calls: int) -> int | None:
    """CPU threads for the alignment and metric kernels of a sweep: one for a small sweep, whose
    tensors are too small to gain from more and whose many short parallel ops each stall while
    any of their threads waits for a core; torch's own setting (None) for a large one."""
    return 1 if predicted_calls < SMALL_SWEEP_CALLS else None


@contextmanager
def cpu_threads(count: int | None) -> Iterator[None]:
    """Run the block with `count` intra-op CPU threads (None: unchanged), restoring the setting after."""
    before = torch.get_num_threads()
    if count is not None and count != before:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)
