"""The opt-in ONNX Runtime encoder backend: parity with torch, its export on first use, the cache identity."""

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
from engine.encode import TextEncoder, embed_distinct
from engine.onnx_backend import MANIFEST, MODEL_FILE, check_backend, cosine_gap, valid_export
from engine.serialize import flatten_sweep

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")


@pytest.fixture(scope="module")
def export_root(tmp_path_factory) -> Path:
    """One export (and embedding cache) folder for the module's tests."""
    return tmp_path_factory.mktemp("onnx-root")


@pytest.fixture(scope="module")
def onnx_encoder(export_root: Path) -> TextEncoder:
    return TextEncoder(backend="onnxruntime", export_dir=export_root)


@pytest.fixture(scope="module")
def golden_texts(gt_path: Path, golden_dir: Path) -> list[str]:
    """Every 8th distinct call text of the golden sweep (a few hundred, all lengths)."""
    manifest = json.loads((golden_dir / "manifest.json").read_text())
    preds = [read_trajectories(golden_dir / n / "pred.json", lenient=True) for n in sorted(manifest["cases"])]
    return flatten_sweep(read_trajectories(gt_path), preds, "reference").texts[::8]


def test_similarities_match_torch_on_golden_texts(onnx_encoder: TextEncoder, golden_texts: list[str]) -> None:
    assert len(golden_texts) > 300
    reference = TextEncoder().encode(golden_texts)
    vectors = onnx_encoder.encode(golden_texts)
    assert vectors.dtype == np.float32 and vectors.shape == reference.shape
    assert cosine_gap(reference, vectors) <= 1e-6


@pytest.mark.slow
def test_golden_case_scored_with_onnxruntime(gt_path: Path, golden_dir: Path, export_root: Path,
                                             tmp_path: Path) -> None:
    """A golden case scored through ONNX Runtime: counts exact, metrics within 1e-5."""
    scored = score_golden(gt_path, golden_dir, tmp_path / "out", "cpu", str(export_root), backend="onnxruntime",
                          only={"m1"})
    assert list(scored) == ["m1"]
    assert_matches_golden(scored, golden_dir)


DAMAGE_TEXTS = ["get_weather {\"city\": \"Oslo\"}", "a much longer call text with several more tokens in it"]


@pytest.fixture(scope="module")
def fresh_export(export_root: Path, onnx_encoder: TextEncoder) -> tuple[Path, np.ndarray]:
    """The module's export folder (the export made on first use) and the vectors it gives DAMAGE_TEXTS."""
    return export_root, onnx_encoder.encode(DAMAGE_TEXTS)


@pytest.mark.parametrize("damage", ["corrupt", "truncate", "no manifest"])
def test_damaged_export_is_detected_and_redone(tmp_path: Path, damage: str,
                                               fresh_export: tuple[Path, np.ndarray]) -> None:
    texts = DAMAGE_TEXTS
    shutil.copytree(fresh_export[0] / "onnx", tmp_path / "onnx")
    first = fresh_export[1]
    (folder,) = (tmp_path / "onnx").iterdir()
    key = json.loads((folder / MANIFEST).read_text())["key"]
    model = folder / MODEL_FILE
    if damage == "corrupt":
        data = bytearray(model.read_bytes())
        data[len(data) // 2] ^= 0xFF
        model.write_bytes(bytes(data))
    elif damage == "truncate":
        model.write_bytes(model.read_bytes()[:1000])
    else:
        (folder / MANIFEST).unlink()
    assert not valid_export(folder, key)
    again = TextEncoder(backend="onnxruntime", export_dir=tmp_path).encode(texts)
    assert valid_export(folder, key)
    np.testing.assert_array_equal(again, first)
    assert [p.name for p in (tmp_path / "onnx").iterdir()] == [folder.name]  # no temporary folder left


def test_cache_identity_differs_by_backend(tmp_path: Path, onnx_encoder: TextEncoder) -> None:
    torch_id = TextEncoder().identity
    assert TextEncoder(backend="auto", device="cuda").identity != TextEncoder(backend="auto").identity
    onnx = onnx_encoder
    assert onnx.identity != torch_id
    texts = ["get_weather {\"city\": \"Oslo\"}"]
    embed_distinct(texts, TextEncoder(), tmp_path / "cache")
    _, stats = embed_distinct(texts, onnx, tmp_path / "cache")
    assert stats.encoded == 1  # torch's cached vector is not served to the other backend


def test_backend_values(monkeypatch) -> None:
    assert check_backend("torch") == "torch" and check_backend("auto") == "onnxruntime"  # both installed here
    assert check_backend("auto", "cuda:0") == "torch"  # ONNX Runtime runs on the CPU only
    assert TextEncoder(backend="auto").backend == "onnxruntime"
    assert TextEncoder(backend="auto", device="cuda").backend == "torch"
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "onnxruntime" else
                        real_find_spec(name, *a))
    assert check_backend("auto") == "torch"  # without onnxruntime
    assert check_backend("onnxruntime") == "onnxruntime"
    with pytest.raises(ConfigError, match="encoder.backend=tensorrt: expected one of torch, onnxruntime, auto"):
        check_backend("tensorrt")
    with pytest.raises(ConfigError, match="runs on the CPU only, not device=cuda"):
        TextEncoder(backend="onnxruntime", device="cuda")


def test_missing_onnxruntime_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if not installed
    with pytest.raises(ConfigError, match=r"onnxruntime not installed; pip install 'm3bench\[onnx\]'"):
        TextEncoder(backend="onnxruntime")
