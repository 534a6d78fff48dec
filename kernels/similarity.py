"""Cosine similarities between call embeddings, as the published scorer defines them."""

from __future__ import annotations

import torch


def pair_similarity(embeddings: torch.Tensor, left: torch.Tensor, right: torch.Tensor,
                    chunk: int = 1 << 14) -> torch.Tensor:
    """Cosine of rows `left[k]` and `right[k]`: each row divided by (its norm + 1e-8), dot, clip to [-1, 1].

    Each distinct (left, right) pair is computed once, so identical texts always give
    bit-identical similarities. Pairs are visited in order of their right-hand row and
    rows are normalized as they are gathered into reused buffers, which keeps the
    memory traffic to one streaming pass over the embeddings.
    """
    device = embeddings.device
    if left.numel() == 0:
        return torch.zeros(0, dtype=torch.float32, device=device)
    emb = embeddings.to(torch.float32)
    denominator = (torch.linalg.vector_norm(emb, dim=1) + 1e-8).unsqueeze(1)
    n = emb.shape[0]
    keys, inverse = torch.unique(right * n + left, return_inverse=True)
    b = torch.div(keys, n, rounding_mode="floor")
    a = keys - b * n
    out = torch.empty(keys.numel(), dtype=torch.float32, device=device)
    size = min(chunk, keys.numel())
    x = torch.empty((size, emb.shape[1]), dtype=torch.float32, device=device)
    y = torch.empty_like(x)
    dx = torch.empty((size, 1), dtype=torch.float32, device=device)
    dy = torch.empty_like(dx)
    for s in range(0, keys.numel(), size):
        e = min(s + size, keys.numel())
        k = e - s
        torch.index_select(emb, 0, a[s:e], out=x[:k])
        torch.index_select(emb, 0, b[s:e], out=y[:k])
        torch.index_select(denominator, 0, a[s:e], out=dx[:k])
        torch.index_select(denominator, 0, b[s:e], out=dy[:k])
        xs, ys = x[:k].div_(dx[:k]), y[:k].div_(dy[:k])
        torch.sum(xs.mul_(ys), dim=1, out=out[s:e])
    return out.clamp_(-1.0, 1.0)[inverse]
