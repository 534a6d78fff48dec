"""Cosine similarities between call embeddings, as the published scorer defines them."""

from __future__ import annotations

import torch


def unit_rows(embeddings: torch.Tensor) -> torch.Tensor:
    """Each row divided by (its L2 norm + 1e-8), in float32."""
    emb = embeddings.to(torch.float32)
    return emb / (torch.linalg.vector_norm(emb, dim=1, keepdim=True) + 1e-8)


def pair_similarity(unit: torch.Tensor, left: torch.Tensor, right: torch.Tensor,
                    chunk: int = 1 << 16) -> torch.Tensor:
    """Cosine (clipped to [-1, 1]) of rows `left[k]` and `right[k]` of `unit`.

    Each distinct (left, right) pair is computed once, so identical texts always give
    bit-identical similarities.
    """
    if left.numel() == 0:
        return torch.zeros(0, dtype=torch.float32, device=unit.device)
    n = unit.shape[0]
    keys, inverse = torch.unique(left * n + right, return_inverse=True)
    a = torch.div(keys, n, rounding_mode="floor")
    b = keys - a * n
    out = torch.empty(keys.numel(), dtype=torch.float32, device=unit.device)
    for s in range(0, keys.numel(), chunk):
        e = min(s + chunk, keys.numel())
        out[s:e] = (unit[a[s:e]] * unit[b[s:e]]).sum(dim=1)
    return out.clamp_(-1.0, 1.0)[inverse]
