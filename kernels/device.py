"""Device selection shared by the encoder and the alignment kernels."""

from __future__ import annotations

import torch


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
