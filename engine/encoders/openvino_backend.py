"""The OpenVINO backend (`encoder.backend=openvino`, the [openvino] extra), on the CPU: the exported graph
compiled by OpenVINO at fp32 inference precision, tuned for latency, on the machine's cores."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.encoders.base import cpu_threads
from engine.encoders.export import MODEL_FILE
from engine.encoders.runtime import Forward, RuntimeEncoder


class OpenVinoEncoder(RuntimeEncoder):
    """The exported (plain ONNX) graph compiled by OpenVINO for the CPU; compiled graphs are kept under the
    export root (openvino/) for the next process."""

    name = "openvino"
    packages = ("openvino", "onnx")
    extra = "openvino"
    recipe = "CPU, INFERENCE_PRECISION_HINT f32, PERFORMANCE_HINT LATENCY, INFERENCE_NUM_THREADS = cores"

    def compile(self, folder: Path) -> Forward:
        """The export's plain graph compiled for the CPU at fp32 on cpu_threads() threads."""
        import openvino as ov

        core = ov.Core()
        compiled = core.compile_model(str(folder / MODEL_FILE), "CPU", {
            "INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "LATENCY",
            "INFERENCE_NUM_THREADS": cpu_threads(), "CACHE_DIR": str(self.root / "openvino")})
        request = compiled.create_infer_request()

        def forward(features: dict[str, np.ndarray]) -> np.ndarray:
            return np.array(request.infer(features)[0], dtype=np.float32)

        return forward
