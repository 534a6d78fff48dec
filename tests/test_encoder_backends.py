"""The encoder backends that run the exported graph (ONNX Runtime, OpenVINO): parity with torch, the export
made on first use, damage found and redone, the cache identity, the refusals. A backend whose runtime is not
installed is skipped (OpenVINO is an extra: pip install 'm3bench[openvino]')."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from golden import assert_matches_golden, score_golden

from engine.contract import ConfigError, read_trajectories
from engine.encode import embed_distinct
from engine.encoders import TextEncoder, check_backend, cosine_gap
from engine.encoders.export import FUSED_FILE, MANIFEST, MODEL_FILE, valid_export
from engine.serialize import flatten_sweep

RUNTIMES = [pytest.param(name, marks=pytest.mark.skipif(bool(absent), reason=f"{' and '.join(absent)} not installed"))
            for name, packages in (("onnxruntime", ("onnxruntime", "onnx")), ("openvino", ("openvino", "onnx")))
            for absent in [[p for p in packages if importlib.util.find_spec(p) is None]]]


@pytest.fixture(scope="module")
def export_root(tmp_path_factory) -> Path:
    """One export (and embedding cache) folder for the module's tests."""
    return tmp_path_factory.mktemp("export-root")


@pytest.fixture(scope="module")
def golden_texts(gt_path: Path, golden_dir: Path) -> list[str]:
    """Every 8th distinct call text of the golden sweep (a few hundred, all lengths)."""
    manifest = json.loads((golden_dir / "manifest.json").read_text())
    preds = [read_trajectories(golden_dir / n / "pred.json", lenient=True) for n in sorted(manifest["cases"])]
    return flatten_sweep(read_trajectories(gt_path), preds, "reference").texts[::8]


@pytest.fixture(scope="module")
def torch_vectors(golden_texts: list[str]) -> np.ndarray:
    return TextEncoder().encode(golden_texts)


@pytest.mark.parametrize("backend", RUNTIMES)
def test_similarities_match_torch_on_golden_texts(backend: str, export_root: Path, golden_texts: list[str],
                                                  torch_vectors: np.ndarray) -> None:
    assert len(golden_texts) > 300
    vectors = TextEncoder(backend=backend, export_dir=export_root).encode(golden_texts)
    assert vectors.dtype == np.float32 and vectors.shape == torch_vectors.shape
    assert cosine_gap(torch_vectors, vectors) <= 1e-6


@pytest.mark.slow
@pytest.mark.parametrize("backend", RUNTIMES)
def test_golden_case_scored_with_the_backend(backend: str, gt_path: Path, golden_dir: Path, export_root: Path,
                                             tmp_path: Path) -> None:
    """A golden case scored through the backend: counts exact, metrics within 1e-5."""
    scored = score_golden(gt_path, golden_dir, tmp_path / "out", "cpu", str(export_root), backend=backend,
                          only={"m1"})
    assert list(scored) == ["m1"]
    assert_matches_golden(scored, golden_dir)


@pytest.mark.skipif(importlib.util.find_spec("onnxruntime") is None, reason="onnxruntime not installed")
def test_onnxruntime_runs_the_fused_graph(export_root: Path) -> None:
    """The export holds ONNX Runtime's transformer fusions (attention, GELU, layer normalization), and the
    session runs that graph."""
    import onnx

    encoder = TextEncoder(backend="onnxruntime", export_dir=export_root)
    encoder.encode(["get_weather {\"city\": \"Oslo\"}"])
    (folder,) = (export_root / "onnx").iterdir()
    ops = {node.op_type for node in onnx.load(str(folder / FUSED_FILE)).graph.node}
    assert {"Attention", "SkipLayerNormalization", "BiasGelu", "EmbedLayerNormalization"} <= ops
    assert "Softmax" not in ops and "Erf" not in ops


@pytest.mark.skipif(importlib.util.find_spec("onnx") is None, reason="onnx not installed")
def test_the_export_leaves_torch_vectors_unchanged(tmp_path: Path) -> None:
    """The export switches the model to eager attention and back: torch's vectors after it are bit for bit
    those before it (and its identity is the one torch's earlier caches are under)."""
    from engine.encoders.export import exported_model
    from engine.encoders.tokens import feature_names

    encoder = TextEncoder()
    texts = ["get_weather {\"city\": \"Oslo\"}", "a much longer call text with several more tokens in it " * 6]
    before = encoder.encode(texts)
    implementation = encoder.model[0].auto_model.config._attn_implementation
    exported_model(encoder.model, feature_names(encoder.model), encoder.model_path, tmp_path)
    assert encoder.model[0].auto_model.config._attn_implementation == implementation
    np.testing.assert_array_equal(encoder.encode(texts), before)


DAMAGE_TEXTS = ["get_weather {\"city\": \"Oslo\"}", "a much longer call text with several more tokens in it"]


@pytest.fixture(scope="module")
def fresh_export(export_root: Path) -> tuple[Path, np.ndarray]:
    """The module's export folder (made on first use) and the vectors ONNX Runtime gives DAMAGE_TEXTS."""
    pytest.importorskip("onnxruntime")
    return export_root, TextEncoder(backend="onnxruntime", export_dir=export_root).encode(DAMAGE_TEXTS)


@pytest.mark.parametrize("damage", ["corrupt", "truncate", "no manifest", "fused corrupt"])
def test_damaged_export_is_detected_and_redone(tmp_path: Path, damage: str,
                                               fresh_export: tuple[Path, np.ndarray]) -> None:
    shutil.copytree(fresh_export[0] / "onnx", tmp_path / "onnx")
    first = fresh_export[1]
    (folder,) = (tmp_path / "onnx").iterdir()
    key = json.loads((folder / MANIFEST).read_text())["key"]
    model = folder / (FUSED_FILE if damage == "fused corrupt" else MODEL_FILE)
    if damage in ("corrupt", "fused corrupt"):
        data = bytearray(model.read_bytes())
        data[len(data) // 2] ^= 0xFF
        model.write_bytes(bytes(data))
    elif damage == "truncate":
        model.write_bytes(model.read_bytes()[:1000])
    else:
        (folder / MANIFEST).unlink()
    assert not valid_export(folder, key)
    again = TextEncoder(backend="onnxruntime", export_dir=tmp_path).encode(DAMAGE_TEXTS)
    assert valid_export(folder, key)
    np.testing.assert_array_equal(again, first)
    assert [p.name for p in (tmp_path / "onnx").iterdir()] == [folder.name]  # no temporary folder left


@pytest.mark.parametrize("backend", RUNTIMES)
def test_cache_identity_differs_by_backend(backend: str, tmp_path: Path) -> None:
    torch_encoder = TextEncoder()
    other = TextEncoder(backend=backend, export_dir=tmp_path)
    assert other.identity != torch_encoder.identity
    assert TextEncoder(backend="torch", device="cuda").identity != torch_encoder.identity
    texts = ["get_weather {\"city\": \"Oslo\"}"]
    embed_distinct(texts, torch_encoder, tmp_path / "cache")
    _, stats = embed_distinct(texts, other, tmp_path / "cache")
    assert stats.encoded == 1  # torch's cached vector is not served to the other backend


def test_backend_values() -> None:
    assert [check_backend(v) for v in ("torch", "onnxruntime", "openvino", "auto", None, "")] == \
        ["torch", "onnxruntime", "openvino", "auto", "auto", "auto"]
    assert check_backend("auto", "cuda:0") == "auto" and check_backend("torch", "cuda") == "torch"
    assert TextEncoder(backend="auto").backend == "auto"  # chosen on first use (engine.encoders.select)
    with pytest.raises(ConfigError, match="encoder.backend=tensorrt: expected one of auto, torch, onnxruntime, "
                                          "openvino"):
        check_backend("tensorrt")
    for name in ("onnxruntime", "openvino"):
        with pytest.raises(ConfigError, match=f"encoder.backend={name} runs on the CPU only, not device=cuda"):
            TextEncoder(backend=name, device="cuda")


@pytest.mark.parametrize(("backend", "package", "extra"), [("onnxruntime", "onnxruntime", "onnx"),
                                                           ("openvino", "openvino", "openvino")])
def test_missing_runtime_says_how_to_install(backend: str, package: str, extra: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, package, None)  # as if not installed
    with pytest.raises(ConfigError, match=rf"{package} not installed; pip install 'm3bench\[{extra}\]'"):
        TextEncoder(backend=backend)
