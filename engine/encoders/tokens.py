"""Texts tokenized once and cut into token-budget batches: what every backend encodes from.

Every backend gets the same features, exactly what the model's own `preprocess` gives, in the same
batches (`token_batches`), and hands the rows it has done to `save` the same way (`encode_batches`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, Union

import numpy as np

from engine.contract.progress import PROGRESS_DELAY
from engine.contract.progress import progress as progress_bar

if TYPE_CHECKING:
    import torch
    from sentence_transformers import SentenceTransformer

Vectors = Union[np.ndarray, "torch.Tensor"]
"""A batch's vectors: a numpy array from the host backends, a tensor on the model's device from torch."""

TOKEN_BUDGET = 8192
"""Most token positions (rows x padded length) in one encoder batch."""

PAD_SPARE = 256
"""Padding tokens a batch may take beyond its length window: less work than one more forward call, whose
fixed cost grows with CPU contention (56 texts of 49 token lengths: 5 batches instead of 19; at load averages
of 10-18 on 2 cores 0.83x sentence-transformers' `encode` time instead of 2.58x, idle or beside two busy
processes no different; docs/scoring.md)."""

CHUNK = 4096
"""Texts tokenized by one call of the model's `preprocess`."""

SAVE_EVERY = 5.0
"""Seconds between two saves of the vectors encoded so far (`TextEncoder.encode`'s `save`)."""

Save = Callable[[np.ndarray, np.ndarray], None]
"""save(rows, vectors): the rows encoded so far (indices into the texts) and their vectors."""


def length_window(length: int) -> int:
    """How many tokens shorter than a batch's longest text its other texts may be (padding <= 1/8)."""
    return max(2, length // 8)


def token_batches(lengths: np.ndarray, max_rows: int, token_budget: int, spare: int = PAD_SPARE,
                  ties: np.ndarray | None = None) -> list[np.ndarray]:
    """Row indices of the encoder's batches, longest texts first; within a length by `ties` (the texts' own
    order: `Tokens.ranks`, so the batches of a set of texts do not depend on the order it comes in), else
    in input order.

    A batch starts at the longest text left, of length L, and takes the next texts (by length)
    while they are at most `length_window(L)` tokens shorter, or while the padding the batch has
    taken so far stays within `spare` tokens (PAD_SPARE: a forward call costs that much whatever
    its size, so a few padded tokens cost less than one more call); it holds at most max_rows rows
    and rows x L stays within token_budget (one row at least).
    """
    lengths = np.asarray(lengths)
    order = np.lexsort((ties, -lengths)) if ties is not None else np.argsort(-lengths, kind="stable")
    ordered = lengths[order]
    batches, i = [], 0
    while i < len(order):
        longest = int(ordered[i])
        rows = max(1, min(max_rows, token_budget // max(longest, 1)))
        near = ordered[i:min(i + rows, len(order))]
        window = int(np.searchsorted(-near, -(longest - length_window(longest)), side="right"))
        padded = int(np.searchsorted(np.cumsum(longest - near), spare, side="right"))
        end = i + max(window, padded, 1)
        batches.append(order[i:end])
        i = end
    return batches


def _is_matrix(value: object) -> bool:
    return hasattr(value, "ndim") and value.ndim == 2


def _narrow(values: np.ndarray) -> np.ndarray:
    """Token ids kept as int32 when they fit (half the memory); widened again per batch."""
    if values.dtype == np.int64 and (not len(values) or (values.min() >= -(1 << 31) and values.max() < (1 << 31))):
        return values.astype(np.int32)
    return values


def feature_names(model: SentenceTransformer) -> list[str]:
    """The per-token features the model's forward pass takes, in `preprocess` order."""
    return [k for k, v in model.preprocess(["a"]).items() if _is_matrix(v)]


@dataclass
class Tokens:
    """Texts tokenized once: each per-token feature stored without padding, its pad value apart."""

    texts: list[str]
    lengths: np.ndarray             # (n,) tokens of each text
    values: dict[str, np.ndarray]   # feature -> the texts' tokens, concatenated
    pad: dict[str, int]             # feature -> its padding value
    extra: dict[str, object]        # features that are not per token (e.g. the modality)
    right_padded: bool
    model: SentenceTransformer

    @property
    def ranks(self) -> np.ndarray:
        """Each text's rank in the sorted texts: the batches' order within a length (`token_batches`)."""
        order = sorted(range(len(self.texts)), key=self.texts.__getitem__)
        ranks = np.empty(len(order), dtype=np.int64)
        ranks[order] = np.arange(len(order))
        return ranks

    def batch(self, rows: np.ndarray) -> dict:
        """The features `preprocess` gives for these texts: each padded to the batch's longest."""
        import torch

        if not self.right_padded:  # a tokenizer padding on the left: its own call, per batch
            return self.model.preprocess([self.texts[i] for i in rows])
        lengths = self.lengths[rows]
        starts = np.concatenate(([0], np.cumsum(self.lengths)[:-1]))[rows]
        width = int(lengths.max())
        row = np.repeat(np.arange(len(rows)), lengths)
        col = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        source = np.repeat(starts, lengths) + col
        out: dict = dict(self.extra)
        for key, values in self.values.items():
            block = np.full((len(rows), width), self.pad[key], dtype=np.int64)
            block[row, col] = values[source]
            out[key] = torch.from_numpy(block)
        return out


def tokenize(model: SentenceTransformer, texts: list[str]) -> Tokens:
    """Every text tokenized once, by the model's own `preprocess` (in chunks of CHUNK texts)."""
    probe = model.preprocess(["a", "a a a a a a"])
    pad = {k: int(v[0, -1]) for k, v in probe.items() if _is_matrix(v)}
    right = bool(probe["attention_mask"][0, -1] == 0) if "attention_mask" in probe else False
    parts: dict[str, list[np.ndarray]] = {k: [] for k in pad} if right else {}
    lengths = []
    for start in range(0, len(texts), CHUNK):
        features = model.preprocess(texts[start:start + CHUNK])
        if not right:  # lengths (padded ones) only steer the batching; batches call preprocess
            lengths.append(np.full(len(features["input_ids"]), features["input_ids"].shape[1]))
            continue
        mask = features["attention_mask"].numpy().astype(bool)
        lengths.append(mask.sum(axis=1))
        for key in parts:
            parts[key].append(_narrow(features[key].numpy()[mask]))
    return Tokens(texts=texts, lengths=np.concatenate(lengths).astype(np.int64),
                  values={k: np.concatenate(v) for k, v in parts.items()}, pad=pad,
                  extra={k: v for k, v in probe.items() if not _is_matrix(v)}, right_padded=right, model=model)


class Rows(Protocol):
    """Where a backend's batches land: `put` a batch's vectors into its rows, `take` rows back as numpy."""

    def put(self, rows: np.ndarray, vectors: Vectors) -> None:
        """Store the vectors of these rows."""

    def take(self, rows: np.ndarray) -> np.ndarray:
        """The float32 vectors of these rows, on the host."""

    def result(self) -> np.ndarray:
        """Every row's float32 vector, on the host."""


class HostRows:
    """Rows kept in one float32 numpy array (the backends that compute on the host)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.vectors: np.ndarray | None = None

    def put(self, rows: np.ndarray, vectors: Vectors) -> None:
        """Store the vectors of these rows."""
        if self.vectors is None:
            self.vectors = np.empty((self.count, vectors.shape[1]), dtype=np.float32)
        self.vectors[rows] = vectors

    def take(self, rows: np.ndarray) -> np.ndarray:
        """The vectors of these rows."""
        assert self.vectors is not None, "no batch stored yet"
        return self.vectors[rows]

    def result(self) -> np.ndarray:
        """Every row's vector."""
        assert self.vectors is not None, "encode needs at least one text"
        return self.vectors


def encode_batches(tokens: Tokens, batch_size: int, forward: Callable[[dict], Vectors], out: Rows,
                   save: Save | None = None, every: float = SAVE_EVERY, progress: bool = False) -> np.ndarray:
    """Run `forward` on each token-budget batch's features (`Tokens.batch`), longest texts first, into `out`.

    With `save`, the rows done so far and their vectors are handed to it every `every` seconds, at the
    end, and when the encoding stops early (Ctrl-C, an error), so that no finished batch is lost.
    """
    done: list[np.ndarray] = []  # rows encoded and not yet saved
    last = time.monotonic()

    def flush() -> None:
        nonlocal last
        if save is not None and done:
            rows = np.concatenate(done)
            save(rows, out.take(rows))
            done.clear()
        last = time.monotonic()

    with progress_bar(len(tokens.texts), "Encoding", "text", progress, PROGRESS_DELAY) as bar:
        try:
            for rows in token_batches(tokens.lengths, batch_size, TOKEN_BUDGET, ties=tokens.ranks):
                out.put(rows, forward(tokens.batch(rows)))
                done.append(np.asarray(rows))
                bar.update(len(rows))
                if time.monotonic() - last >= every:
                    flush()
        finally:
            flush()
    return out.result()
