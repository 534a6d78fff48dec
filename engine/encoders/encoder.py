"""`TextEncoder`: the sentence encoder the engine embeds with, one backend behind it (`encoder.backend`)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engine.encoders.base import Encoder, SentenceModel, default_model_path, log
from engine.encoders.onnxruntime_backend import OnnxRuntimeEncoder
from engine.encoders.openvino_backend import OpenVinoEncoder
from engine.encoders.runtime import RuntimeEncoder
from engine.encoders.select import Choice, check_backend, choose
from engine.encoders.tokens import SAVE_EVERY, Save, Tokens
from engine.encoders.torch_backend import TorchEncoder

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

RUNTIMES: dict[str, type[RuntimeEncoder]] = {"onnxruntime": OnnxRuntimeEncoder, "openvino": OpenVinoEncoder}
"""The backends that run the exported graph, by name."""


class TextEncoder:
    """A sentence-transformers encoder loaded lazily, once, from a local directory (no network).

    backend: `torch` (the default here; the apps' default is `auto`), `onnxruntime` or `openvino` (CPU only,
    the model exported on first use into export_dir, or a temporary folder without one), or `auto`: the
    fastest on this machine that holds parity, measured on first use and cached under export_dir
    (engine.encoders.select).
    """

    def __init__(self, model: str | None = None, device: str = "cpu", batch_size: int = 128,
                 progress: bool = False, backend: str = "torch", export_dir: str | Path | None = None) -> None:
        self.model_path = Path(model).expanduser() if model else default_model_path()
        if not self.model_path.is_dir():
            raise ValueError(f"encoder.model={model}: not a local model directory "
                             "(models are never downloaded at run time)")
        if batch_size < 1:
            raise ValueError(f"encoder batch size {batch_size}: expected a positive integer")
        self.backend = check_backend(backend, device)
        if self.backend in RUNTIMES:
            RUNTIMES[self.backend].require()
        self.device = device
        self.export_dir = Path(export_dir).expanduser() if export_dir else None
        self.source = SentenceModel(self.model_path, device, batch_size, progress)
        self.choice: Choice | None = None
        self._encoder: Encoder | None = None
        self._scratch: tempfile.TemporaryDirectory | None = None

    @property
    def batch_size(self) -> int:
        """Most rows in one batch."""
        return self.source.batch_size

    @property
    def progress(self) -> bool:
        """Whether an encoding past PROGRESS_DELAY shows a progress bar."""
        return self.source.progress

    @progress.setter
    def progress(self, value: bool) -> None:
        self.source.progress = value

    @property
    def model(self) -> SentenceTransformer:
        """The SentenceTransformer, loaded on first use."""
        return self.source.model

    def tokenize(self, texts: list[str]) -> Tokens:
        """Every text tokenized once, by the model's own `preprocess`."""
        return self.source.tokenize(texts)

    def token_lengths(self, texts: list[str]) -> np.ndarray:
        """Token count of each text after the model's truncation (special tokens included)."""
        return self.tokenize(texts).lengths

    def _root(self) -> Path:
        """Where exports go: export_dir, else a temporary folder of this encoder's."""
        if self.export_dir is not None:
            return self.export_dir
        if self._scratch is None:
            self._scratch = tempfile.TemporaryDirectory(prefix="m3bench-export-")
        return Path(self._scratch.name)

    def build(self, name: str) -> Encoder:
        """A backend of this encoder's model (sharing its loaded weights)."""
        if name == "torch":
            return TorchEncoder(self.source)
        return RUNTIMES[name](self.source, self._root())

    @property
    def chosen(self) -> Encoder:
        """The backend that encodes: the one named, or auto's choice (`resolve`)."""
        return self.resolve()

    def resolve(self) -> Encoder:
        """The backend that encodes, on first use: the one named, or auto's choice (engine.encoders.select.choose:
        cached, else measured now; logged once, kept in `choice`)."""
        if self._encoder is None:
            if self.backend != "auto":
                self._encoder = self.build(self.backend)
            else:
                torch_identity = TorchEncoder(self.source).identity
                choice, built = choose(self.device, self.model_path.name, torch_identity, self.build, self.export_dir)
                log.info("%s%s", choice.line(), f" (cached: {choice.cached})" if choice.cached else "")
                self.choice = choice
                self._encoder = built.get(choice.backend) or self.build(choice.backend)
        return self._encoder

    @property
    def identity(self) -> str:
        """The cache key of the vectors of the backend that encodes (auto: of its choice)."""
        return self.chosen.identity

    def encode(self, texts: list[str], save: Save | None = None, every: float = SAVE_EVERY) -> np.ndarray:
        """Raw float32 embeddings (n, dim) through the chosen backend: texts tokenized once, then encoded in
        token-budget batches (engine.encoders.tokens). With `save`, the rows encoded so far and their
        vectors are handed to it every `every` seconds, at the end, and when the encoding stops early
        (Ctrl-C, an error), so that no finished batch is lost."""
        return self.chosen.encode(texts, save, every)

    def description(self) -> dict[str, object] | None:
        """What a run's outputs record of the backend: None for torch named as such (outputs unchanged), the
        backend's name for another, auto's choice with its figures."""
        if self.backend == "torch":
            return None
        if self.backend != "auto":
            return {"backend": self.backend}
        self.resolve()
        assert self.choice is not None, "auto resolved without a choice"
        return self.choice.meta()
