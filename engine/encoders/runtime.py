"""What the backends that run the exported graph share (ONNX Runtime, OpenVINO): the export made or found
on first use, the parity check against torch, and the numpy batches."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

from engine.contract import ConfigError
from engine.encoders.base import PARITY, PARITY_TEXTS, SentenceModel, cosine_gap
from engine.encoders.export import EXPORT_RECIPE, exported_model, version
from engine.encoders.tokens import SAVE_EVERY, HostRows, Save, Tokens, encode_batches, feature_names
from engine.encoders.torch_backend import TorchEncoder

Forward = Callable[[dict[str, np.ndarray]], np.ndarray]
"""A compiled graph: int64 features (name -> (rows, tokens)) to float32 sentence embeddings (rows, dim)."""


def missing(packages: tuple[str, ...]) -> list[str]:
    """The packages of `packages` that cannot be imported."""
    out = []
    for name in packages:
        try:
            importlib.import_module(name)
        except ImportError:
            out.append(name)
    return out


class RuntimeEncoder:
    """A backend running the exported graph on the CPU; subclasses say how it is compiled (`compile`)."""

    name = ""
    packages: tuple[str, ...] = ()
    """What it needs installed (its extra)."""
    extra = ""
    """The pip extra that installs `packages`."""
    recipe = ""
    """How it runs the graph (its settings): part of the cache identity with the export recipe."""

    def __init__(self, source: SentenceModel, root: Path) -> None:
        self.source = source
        self.root = root
        self._forward: Forward | None = None
        self._inputs: list[str] = []

    @classmethod
    def require(cls) -> None:
        """Refuse in one line when a package the backend needs is missing."""
        absent = missing(cls.packages)
        if absent:
            raise ConfigError(f"encoder.backend={cls.name}: {' and '.join(absent)} not installed; "
                              f"pip install 'm3bench[{cls.extra}]' (or: pip install {' '.join(cls.packages)})")

    @property
    def identity(self) -> str:
        """The model's identity with the backend, its version, its settings and the export recipe."""
        return self.source.identity(f"backend={self.name} {version(self.packages[0])}; {self.recipe}; {EXPORT_RECIPE}")

    def compile(self, folder: Path) -> Forward:
        """The graph of the export folder, ready to run."""
        raise NotImplementedError

    def forward(self) -> Forward:
        """The compiled graph, on first use: the model exported (or its export found) under root, then
        checked against torch on PARITY_TEXTS; a gap above PARITY refuses the backend."""
        if self._forward is None:
            model = self.source.model
            self._inputs = feature_names(model)
            forward = self.compile(exported_model(model, self._inputs, self.source.path, self.root))
            texts = list(PARITY_TEXTS)
            tokens = self.source.tokenize(texts)
            gap = cosine_gap(TorchEncoder(self.source).encode_tokens(tokens), self._run(tokens, forward))
            if not gap <= PARITY:
                raise ConfigError(f"encoder.backend={self.name}: its vectors differ from torch's (cosine gap "
                                  f"{gap:.1e} > {PARITY:.0e} on fixed texts); use encoder.backend=torch")
            self._forward = forward
        return self._forward

    def encode(self, texts: list[str], save: Save | None = None, every: float = SAVE_EVERY) -> np.ndarray:
        """Raw float32 embeddings through the runtime: the same tokens and batches as torch, the rows done
        handed to `save` as torch's are."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        forward = self.forward()
        return self._run(self.source.tokenize(texts), forward, save, every, self.source.progress)

    def _run(self, tokens: Tokens, forward: Forward, save: Save | None = None, every: float = SAVE_EVERY,
             progress: bool = False) -> np.ndarray:
        inputs = self._inputs

        def batch(features: dict) -> np.ndarray:
            return forward({k: features[k].numpy().astype(np.int64, copy=False) for k in inputs})

        return encode_batches(tokens, self.source.batch_size, batch, HostRows(len(tokens.texts)), save, every,
                              progress)
