"""The torch backend: sentence-transformers' own forward pass, on the model's device, at full float32
precision. Its vectors are the reference every other backend is held to."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np

from engine.encoders.base import SentenceModel
from engine.encoders.tokens import SAVE_EVERY, Save, Tokens, Vectors, encode_batches

if TYPE_CHECKING:
    import torch


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


class DeviceRows:
    """Rows kept in one float32 tensor on the model's device until they are saved or returned."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.vectors: torch.Tensor | None = None

    def put(self, rows: np.ndarray, vectors: Vectors) -> None:
        """Store the vectors of these rows (a tensor on the model's device)."""
        import torch

        batch = torch.as_tensor(vectors)  # the tensor itself, as the torch backend gives it
        if self.vectors is None:
            self.vectors = torch.empty((self.count, batch.shape[1]), dtype=torch.float32, device=batch.device)
        self.vectors[torch.as_tensor(rows, device=batch.device)] = batch

    def take(self, rows: np.ndarray) -> np.ndarray:
        """The vectors of these rows, copied to the host."""
        import torch

        assert self.vectors is not None, "no batch stored yet"
        return self.vectors[torch.as_tensor(rows, device=self.vectors.device)].cpu().numpy()

    def result(self) -> np.ndarray:
        """Every row's vector, copied to the host."""
        assert self.vectors is not None, "encode needs at least one text"
        return self.vectors.cpu().numpy()


class TorchEncoder:
    """sentence-transformers' model itself: the features of each token-budget batch through its forward pass."""

    name = "torch"

    def __init__(self, source: SentenceModel) -> None:
        self.source = source

    @property
    def identity(self) -> str:
        """The model's identity on its device type (engine.encoders.base.SentenceModel.identity)."""
        return self.source.identity()

    def encode(self, texts: list[str], save: Save | None = None, every: float = SAVE_EVERY) -> np.ndarray:
        """Raw float32 embeddings (n, dim): texts tokenized once, then encoded in token-budget batches.

        A batch's features are exactly what `preprocess` gives for its texts. Vectors stay on the
        model's device until saved; matmuls run at full float32 precision whatever the global setting
        (`full_precision`).
        """
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return self.encode_tokens(self.source.tokenize(texts), save, every)

    def encode_tokens(self, tokens: Tokens, save: Save | None = None, every: float = SAVE_EVERY) -> np.ndarray:
        """`encode` of texts already tokenized."""
        import torch
        from sentence_transformers.util import batch_to_device

        model = self.source.model

        def forward(features: dict) -> torch.Tensor:
            return model(batch_to_device(features, model.device))["sentence_embedding"].float()

        with torch.inference_mode(), full_precision():
            return encode_batches(tokens, self.source.batch_size, forward, DeviceRows(len(tokens.texts)), save,
                                  every, self.source.progress)
