"""The ONNX Runtime backend (`encoder.backend=onnxruntime`, the [onnx] extra), on the CPU: the exported graph
with ONNX Runtime's transformer fusions, every session-level graph optimization on, on the machine's cores."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engine.encoders.base import cpu_threads
from engine.encoders.export import FUSED_FILE, MODEL_FILE
from engine.encoders.runtime import Forward, RuntimeEncoder

if TYPE_CHECKING:
    from onnxruntime import InferenceSession

SPINNING = False
"""Whether ONNX Runtime's worker threads spin while waiting for work. Off: on a machine whose cores other
processes share, spinning threads take the time those processes (and the other worker) need
(docs/performance.md)."""


def session(path: Path, threads: int) -> InferenceSession:
    """An ONNX Runtime CPU session of an exported graph: every graph optimization on, `threads` intra-op
    threads (one inter-op), spinning as SPINNING says."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if SPINNING else "0")
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


class OnnxRuntimeEncoder(RuntimeEncoder):
    """The exported graph through ONNX Runtime (the fused graph when the export has one)."""

    name = "onnxruntime"
    packages = ("onnxruntime", "onnx")
    extra = "onnx"
    recipe = f"ORT_ENABLE_ALL, transformer fusions, intra-op threads = cores, spinning {'on' if SPINNING else 'off'}"

    def compile(self, folder: Path) -> Forward:
        """A session of the export's fused graph (else its plain one) on cpu_threads() threads."""
        path = folder / FUSED_FILE if (folder / FUSED_FILE).is_file() else folder / MODEL_FILE
        run = session(path, cpu_threads()).run

        def forward(features: dict[str, np.ndarray]) -> np.ndarray:
            return run(None, features)[0]

        return forward
