"""The embedding step: every distinct text is embedded once, by the engine's encoder (engine.encoders),
and cached on disk (engine.embedding_cache)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.contract import Interrupted
from engine.embedding_cache import EmbeddingCache, text_keys
from engine.encoders import SAVE_EVERY, Encoder, TextEncoder

__all__ = ["SAVE_EVERY", "EmbeddingStats", "TextEncoder", "embed_distinct"]


@dataclass
class EmbeddingStats:
    """What the embedding step did."""

    distinct_texts: int
    cached: int
    encoded: int
    backend: dict[str, object] | None = None  # how the vectors were computed (TextEncoder.description); None: torch


def _place(vectors: np.ndarray, rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    """vectors with values written into rows; its columns are made first if it has none yet."""
    if len(rows) == 0:
        return vectors
    if vectors.shape[1] == 0:
        vectors = np.zeros((len(vectors), values.shape[1]), dtype=np.float32)
    vectors[rows] = values
    return vectors


def embed_distinct(texts: list[str], encoder: Encoder, cache_dir: str | Path | None,
                   every: float = SAVE_EVERY) -> tuple[np.ndarray, EmbeddingStats]:
    """Embeddings of distinct texts (rows in the order given), from the cache where possible.

    With every text cached, the encoder model is never loaded. Texts the cache lacks are
    encoded under the cache's lock, after looking again for those another process stored
    meanwhile, so processes sharing a cache encode each text once in total. Their vectors are
    stored as they are encoded (every `every` seconds): a run stopped by Ctrl-C raises
    `Interrupted` (saying how many texts are saved), and a rerun encodes only the others.
    """
    if not cache_dir:
        vectors = encoder.encode(texts) if texts else np.zeros((0, 0), dtype=np.float32)
        return vectors, EmbeddingStats(len(texts), 0, len(texts))
    cache = EmbeddingCache(cache_dir, encoder.identity)
    keys = text_keys(texts)
    found, vectors = cache.lookup(keys)
    missing = np.flatnonzero(~found)
    if len(missing):
        with cache.locked():
            stored, stored_vectors = cache.lookup(keys[missing])
            vectors = _place(vectors, missing[stored], stored_vectors[stored])
            missing = missing[~stored]
            if len(missing):
                saved = np.zeros(len(missing), dtype=bool)

                def save(rows: np.ndarray, values: np.ndarray) -> None:
                    cache.store(keys[missing[rows]], values)
                    saved[rows] = True

                try:
                    fresh = encoder.encode([texts[i] for i in missing], save=save, every=every)
                except KeyboardInterrupt:
                    done = len(texts) - len(missing) + int(saved.sum())
                    raise Interrupted(f"{done} of {len(texts)} texts encoded and saved to the embedding cache "
                                      f"{cache.directory}; rerun to go on") from None
                cache.store(keys[missing[~saved]], fresh[~saved])  # what the encoder did not hand to save
                vectors = _place(vectors, missing, fresh)
    return vectors, EmbeddingStats(len(texts), len(texts) - len(missing), len(missing))
