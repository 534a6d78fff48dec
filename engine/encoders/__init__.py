"""The sentence encoders: one interface (`engine.encoders.base.Encoder`: `encode(texts)` -> float32 vectors,
`identity` for the embedding cache's key), one module per backend (torch, ONNX Runtime, OpenVINO), the
export the runtimes share, and `auto`'s choice by measurement (engine.encoders.select). `TextEncoder` is
what the engine embeds with."""

from engine.encoders.base import PARITY, PARITY_TEXTS, Encoder, SentenceModel, cosine_gap, default_model_path
from engine.encoders.encoder import RUNTIMES, TextEncoder
from engine.encoders.select import BACKENDS, Choice, check_backend
from engine.encoders.tokens import (
    CHUNK,
    PAD_SPARE,
    SAVE_EVERY,
    TOKEN_BUDGET,
    Save,
    Tokens,
    length_window,
    token_batches,
)
from engine.encoders.torch_backend import full_precision

__all__ = ["BACKENDS", "CHUNK", "PAD_SPARE", "PARITY", "PARITY_TEXTS", "RUNTIMES", "SAVE_EVERY", "TOKEN_BUDGET",
           "Choice", "Encoder", "Save", "SentenceModel", "TextEncoder", "Tokens", "check_backend", "cosine_gap",
           "default_model_path", "full_precision", "length_window", "token_batches"]
