"""The encoder's opt-in ONNX Runtime backend (`encoder.backend=onnxruntime`), on the CPU.

The sentence-transformers forward pass (transformer, pooling, normalization; fp32) is exported once
with `torch.onnx.export` from the local weights, never downloaded, into
``<export root>/onnx/<model>-<key>/``; the key covers the model's files (their full SHA-256), the torch,
onnx and onnxruntime versions and the export recipe. An export is made in a temporary folder, checked
(ONNX Runtime loads it and agrees with torch), its manifest (the file's SHA-256) written last, then
the folder renamed into place: a folder without a valid manifest, or whose file does not match it, is
a partial or damaged export, removed and made again.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import logging
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np

from engine.contract import ConfigError, file_digest
from engine.contract.atomic import atomic_write_json

log = logging.getLogger(__name__)

BACKENDS = ("torch", "onnxruntime", "auto")
"""encoder.backend values; `auto` is onnxruntime on the CPU when it is installed (measured 1.7x torch's speed on
an idle 2-core machine, 2.3x beside two busy processes, golden cases unchanged: docs/scoring.md), else torch."""

INSTALL = "pip install 'm3bench[onnx]' (or: pip install onnxruntime onnx)"

EXPORT_RECIPE = ("torch.onnx.export, TorchScript exporter, opset 17, the whole sentence-transformers forward "
                 "(sentence_embedding), fp32, dynamic batch and token axes; ORT_ENABLE_ALL on CPU")

PARITY = 1e-6
"""Largest cosine gap to torch's vectors accepted on PARITY_TEXTS."""

PARITY_TEXTS = (
    "search_flights {\"origin\": \"Paris\", \"destination\": \"Tokyo\", \"date\": \"2025-03-14\"}",
    "get_weather {\"city\": \"Reykjavik\"}",
    "read_file {\"path\": \"/data/reports/q3.csv\", \"encoding\": \"utf-8\"}",
    "a",
    "browser_click {\"selector\": \"#submit\", \"button\": \"left\", \"modifiers\": [\"Shift\"], "
    "\"timeout_ms\": 5000, \"note\": \"confirm the order form after checking every field twice\"}",
)

MODEL_FILE = "model.onnx"
MANIFEST = "manifest.json"


RUNTIME_PACKAGES = ("onnxruntime", "onnx")
"""What encoder.backend=onnxruntime needs: the runtime and the exporter's package (the [onnx] extra)."""


def check_backend(value: object, device: str = "cpu") -> str:
    """The backend an encoder.backend value names on a device: torch or onnxruntime (`auto`: onnxruntime on
    the CPU when onnxruntime and onnx are installed, else torch)."""
    name = "torch" if value in (None, "") else str(value)
    if name not in BACKENDS:
        raise ConfigError(f"encoder.backend={value}: expected one of {', '.join(BACKENDS)}")
    if name == "auto":
        return "onnxruntime" if device.split(":")[0] == "cpu" and onnxruntime_installed() else "torch"
    return name


def onnxruntime_installed() -> bool:
    """Whether onnxruntime and the exporter's onnx package can be imported."""
    return all(importlib.util.find_spec(name) is not None for name in RUNTIME_PACKAGES)


def require_onnxruntime() -> None:
    """Refuse in one line when onnxruntime or the exporter's onnx package is missing."""
    missing = []
    for name in RUNTIME_PACKAGES:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise ConfigError(f"encoder.backend=onnxruntime: {' and '.join(missing)} not installed; {INSTALL}")


def runtime_version() -> str:
    """The installed onnxruntime's version."""
    import onnxruntime

    return onnxruntime.__version__


def export_key(model_path: Path) -> str:
    """Digest of the model's files (every byte), the torch, onnx and onnxruntime versions and the recipe."""
    import onnx
    import torch

    h = hashlib.sha256(EXPORT_RECIPE.encode())
    h.update(f"torch={torch.__version__};onnx={onnx.__version__};onnxruntime={runtime_version()}".encode())
    for f in sorted(p for p in model_path.rglob("*") if p.is_file()):
        h.update(f"{f.relative_to(model_path).as_posix()}:{file_digest(f)}".encode())
    return h.hexdigest()[:20]


def valid_export(folder: Path, key: str) -> bool:
    """True when folder holds a complete export for key: its manifest names the file's SHA-256."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        model = folder / MODEL_FILE
        return (manifest.get("key") == key and model.stat().st_size == manifest.get("size")
                and file_digest(model) == manifest.get("sha256"))
    except (OSError, ValueError, AttributeError):
        return False


def _export(model, inputs: list[str], path: Path) -> None:
    """The model's forward pass (features -> sentence_embedding) written to path as ONNX."""
    import torch

    class Forward(torch.nn.Module):
        def __init__(self, inner) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *features):
            return self.inner(dict(zip(inputs, features)))["sentence_embedding"]

    sample = model.preprocess(["an example", "a longer example text for the export"])
    axes = {k: {0: "batch", 1: "tokens"} for k in inputs}
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on the model's Python branches, fixed here
        torch.onnx.export(Forward(model).eval(), tuple(sample[k] for k in inputs), str(path), input_names=inputs,
                          output_names=["sentence_embedding"], dynamic_axes=axes | {"sentence_embedding": {0: "batch"}},
                          opset_version=17, dynamo=False)


def session(path: Path, threads: int):
    """An ONNX Runtime CPU session of the exported model, every graph optimization on."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def exported_model(model, inputs: list[str], model_path: Path, root: Path) -> Path:
    """The model's export under root (made now when missing, partial or damaged); its model.onnx path."""
    key = export_key(model_path)
    folder = root / "onnx" / f"{model_path.name}-{key}"
    if valid_export(folder, key):
        return folder / MODEL_FILE
    if folder.exists():
        log.warning("encoder export %s is incomplete or damaged: removed and exported again", folder)
        shutil.rmtree(folder, ignore_errors=True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=folder.parent))
    tmp.chmod(0o777 & ~_umask())
    try:
        _export(model, inputs, tmp / MODEL_FILE)
        session(tmp / MODEL_FILE, 1)  # loads: a file ONNX Runtime cannot read is never put in place
        model_file = tmp / MODEL_FILE
        import onnx
        import torch

        atomic_write_json(tmp / MANIFEST, {"key": key, "sha256": file_digest(model_file),
                                           "size": model_file.stat().st_size,
                                           "recipe": EXPORT_RECIPE, "torch": torch.__version__,
                                           "onnx": onnx.__version__, "onnxruntime": runtime_version()})
        try:
            tmp.rename(folder)
        except OSError:  # another process put its export in place first
            if not valid_export(folder, key):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log.info("encoder %s exported to ONNX in %s", model_path.name, folder)
    return folder / MODEL_FILE


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def cosine_gap(reference: np.ndarray, other: np.ndarray) -> float:
    """Largest gap between the two sets' cosine similarities: all pairs within each, and each row to its twin."""
    a = reference.astype(np.float64)
    b = other.astype(np.float64)
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    b /= np.linalg.norm(b, axis=1, keepdims=True)
    return max(float(np.abs(a @ a.T - b @ b.T).max()), float(np.abs(1.0 - (a * b).sum(axis=1)).max()))
