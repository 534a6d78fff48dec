"""The model exported to ONNX, once, for the backends that run it (ONNX Runtime, OpenVINO).

The sentence-transformers forward pass (transformer with eager attention, pooling, normalization; fp32)
is exported with `torch.onnx.export` from the local weights, never downloaded, into
``<export root>/onnx/<model>-<key>/``; the key covers the model's files (their full SHA-256), the torch,
onnx and onnxruntime versions and the export recipe. With onnxruntime installed the folder also holds
the graph with ONNX Runtime's transformer fusions (attention, GELU, layer normalization:
onnxruntime.transformers.optimizer), which only ONNX Runtime runs. An export is made in a temporary
folder, checked (ONNX Runtime, when installed, loads each file), its manifest (each file's SHA-256)
written last, then the folder renamed into place: a folder without a valid manifest, or whose files do
not match it, is a partial or damaged export, removed and made again.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import logging
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from engine.contract import file_digest
from engine.contract.atomic import atomic_write_json

if TYPE_CHECKING:
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import PretrainedConfig

log = logging.getLogger("engine.encode")

EXPORT_RECIPE = ("torch.onnx.export, TorchScript exporter, opset 17, eager attention, the whole sentence-transformers "
                 "forward (sentence_embedding), fp32, dynamic batch and token axes; with onnxruntime: its transformer "
                 "fusions (onnxruntime.transformers.optimizer, the model's heads and hidden size, opt_level 0)")

MODEL_FILE = "model.onnx"
"""The exported graph, plain ONNX (OpenVINO reads it; ONNX Runtime when it has no fused graph)."""
FUSED_FILE = "model.ort.onnx"
"""The graph with ONNX Runtime's transformer fusions (com.microsoft operators: ONNX Runtime only)."""
MANIFEST = "manifest.json"


def version(package: str) -> str | None:
    """The installed version of a distribution, None when it is not installed (nothing is imported)."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def export_key(model_path: Path) -> str:
    """Digest of the model's files (every byte), the torch, onnx and onnxruntime versions and the recipe."""
    h = hashlib.sha256(EXPORT_RECIPE.encode())
    h.update(";".join(f"{p}={version(p)}" for p in ("torch", "onnx", "onnxruntime")).encode())
    for f in sorted(p for p in model_path.rglob("*") if p.is_file()):
        h.update(f"{f.relative_to(model_path).as_posix()}:{file_digest(f)}".encode())
    return h.hexdigest()[:20]


def valid_export(folder: Path, key: str) -> bool:
    """True when folder holds a complete export for key: its manifest names each file's size and SHA-256."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        files = manifest.get("files")
        return (manifest.get("key") == key and isinstance(files, dict) and MODEL_FILE in files
                and all((folder / name).stat().st_size == entry.get("size")
                        and file_digest(folder / name) == entry.get("sha256") for name, entry in files.items()))
    except (OSError, ValueError, AttributeError, TypeError):
        return False


@contextlib.contextmanager
def eager_attention(model: torch.nn.Module) -> Iterator[None]:
    """The model's transformers with the plain ("eager") attention in the block, the pattern ONNX Runtime
    fuses; their own implementation (sdpa) put back after, so torch's vectors are unchanged."""
    from transformers import PreTrainedModel

    changed = []
    for module in model.modules():
        if isinstance(module, PreTrainedModel) and hasattr(module, "set_attn_implementation"):
            before = module.config._attn_implementation
            if before != "eager":
                module.set_attn_implementation("eager")
                changed.append((module, before))
    try:
        yield
    finally:
        for module, before in changed:
            module.set_attn_implementation(before)


def _export(model: SentenceTransformer, inputs: list[str], path: Path) -> None:
    """The model's forward pass (features -> sentence_embedding) written to path as ONNX."""
    import torch

    class Forward(torch.nn.Module):
        def __init__(self, inner: SentenceTransformer) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *features: torch.Tensor) -> torch.Tensor:
            return self.inner(dict(zip(inputs, features)))["sentence_embedding"]

    sample = model.preprocess(["an example", "a longer example text for the export"])
    axes = {k: {0: "batch", 1: "tokens"} for k in inputs}
    with torch.inference_mode(), warnings.catch_warnings(), eager_attention(model):
        warnings.simplefilter("ignore")  # the tracer's notes on the model's Python branches, fixed here
        torch.onnx.export(Forward(model).eval(), tuple(sample[k] for k in inputs), str(path), input_names=inputs,
                          output_names=["sentence_embedding"], dynamic_axes=axes | {"sentence_embedding": {0: "batch"}},
                          opset_version=17, dynamo=False)


def _transformer_config(model: torch.nn.Module) -> PretrainedConfig:
    """The config of the model's (first) transformer: its type, heads and hidden size."""
    from transformers import PreTrainedModel

    return next(m.config for m in model.modules() if isinstance(m, PreTrainedModel))


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Log records below ERROR dropped in the block: the optimizer's modules log each pattern they try under
    loggers of their own module names (fusion_base, onnx_model, ...)."""
    before = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(before)


def _fuse(model: torch.nn.Module, source: Path, path: Path) -> bool:
    """ONNX Runtime's transformer fusions of the exported graph written to path; False when its optimizer
    does not know the model's type."""
    from onnxruntime.transformers.optimizer import MODEL_TYPES, optimize_model

    config = _transformer_config(model)
    if config.model_type not in MODEL_TYPES:
        return False
    with _quiet(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fused = optimize_model(str(source), model_type=config.model_type, num_heads=config.num_attention_heads,
                               hidden_size=config.hidden_size, opt_level=0)
        fused.save_model_to_file(str(path))
    log.info("encoder graph fused for ONNX Runtime: %s", {k: v for k, v in fused.get_fused_operator_statistics().items()
                                                         if v})
    return True


def _loads(path: Path) -> None:
    """ONNX Runtime loads the file (when installed): a file it cannot read is never put in place."""
    if version("onnxruntime") is None:
        return
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def exported_model(model: SentenceTransformer, inputs: list[str], model_path: Path, root: Path) -> Path:
    """The folder of the model's export under root (made now when missing, partial or damaged)."""
    key = export_key(model_path)
    folder = root / "onnx" / f"{model_path.name}-{key}"
    if valid_export(folder, key):
        return folder
    if folder.exists():
        log.warning("encoder export %s is incomplete or damaged: removed and exported again", folder)
        shutil.rmtree(folder, ignore_errors=True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=folder.parent))
    tmp.chmod(0o777 & ~_umask())
    try:
        _export(model, inputs, tmp / MODEL_FILE)
        names = [MODEL_FILE]
        if version("onnxruntime") is not None and _fuse(model, tmp / MODEL_FILE, tmp / FUSED_FILE):
            names.append(FUSED_FILE)
        for name in names:
            _loads(tmp / name)
        files = {n: {"sha256": file_digest(tmp / n), "size": (tmp / n).stat().st_size} for n in names}
        atomic_write_json(tmp / MANIFEST, {"key": key, "recipe": EXPORT_RECIPE, "files": files,
                                           **{p: version(p) for p in ("torch", "onnx", "onnxruntime")}})
        try:
            tmp.rename(folder)
        except OSError:  # another process put its export in place first
            if not valid_export(folder, key):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log.info("encoder %s exported to ONNX in %s", model_path.name, folder)
    return folder


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
