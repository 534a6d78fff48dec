"""`encoder.backend=auto`: the backend chosen by measurement (a backend made slower on purpose loses, one
breaking parity is left out), the choice cached by what decides it, logged once, written in the outputs."""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from engine.encode import embed_distinct
from engine.encoders import TextEncoder, select
from engine.encoders.base import Encoder
from engine.pipeline import ScoreSettings, score_sweep, write_sweep
from engine.thresholds import Thresholds

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

SAMPLE = ["get_weather {\"city\": \"Oslo\"}", "a", "search_flights {\"origin\": \"Paris\", \"destination\": \"Tokyo\"}",
          "browser_click {\"selector\": \"#submit\"}"]
"""A short sample in place of select.sample_texts, so that a measurement takes a fraction of a second here."""


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    """A folder holding the model's export, made once for the module (copied into each test's root)."""
    root = tmp_path_factory.mktemp("export")
    TextEncoder(backend="onnxruntime", export_dir=root).encode(SAMPLE[:1])
    return root / "onnx"


@pytest.fixture
def root(tmp_path: Path, exported: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An export root with the export in place; auto measures torch and ONNX Runtime on SAMPLE, on one thread
    (as a test worker computes)."""
    import torch

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    shutil.copytree(exported, tmp_path / "onnx")
    monkeypatch.setattr(select, "sample_texts", lambda: list(SAMPLE))
    monkeypatch.setattr(select, "candidates", lambda device: ["torch", "onnxruntime"])
    yield tmp_path
    torch.set_num_threads(threads)


class Slowed:
    """A backend made slower on purpose: each encode takes `factor` times as long (it waits the rest: a
    machine's load then slows it alike), or its vectors are moved by `noise`, or it fails with `fail`."""

    def __init__(self, inner: Encoder, factor: float = 1.0, noise: float = 0.0, fail: str = "") -> None:
        self.inner, self.factor, self.noise, self.fail = inner, factor, noise, fail
        self.name = inner.name

    @property
    def identity(self) -> str:
        return self.inner.identity

    def encode(self, texts: list[str], save: object = None, every: float = 5.0) -> np.ndarray:
        if self.fail:
            raise RuntimeError(self.fail)
        start = time.perf_counter()
        vectors = self.inner.encode(texts)
        time.sleep((self.factor - 1) * (time.perf_counter() - start))
        return vectors + self.noise * np.random.default_rng(0).standard_normal(vectors.shape).astype(np.float32)


def auto_encoder(root: Path, monkeypatch: pytest.MonkeyPatch, name: str = "", **how: object) -> TextEncoder:
    """An auto encoder under root whose backend `name` is wrapped in Slowed(**how)."""
    encoder = TextEncoder(backend="auto", export_dir=root)
    build = encoder.build
    monkeypatch.setattr(encoder, "build", lambda n: Slowed(build(n), **how) if n == name else build(n))
    return encoder


@pytest.mark.parametrize("slowed", ["onnxruntime", "torch"])
def test_a_backend_made_slower_on_purpose_is_not_chosen(slowed: str, root: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    encoder = auto_encoder(root, monkeypatch, slowed, factor=30.0)
    vectors = encoder.encode(SAMPLE)
    choice = encoder.choice
    assert choice is not None and choice.backend != slowed
    assert choice.ratio[slowed] > 1 / select.MARGIN if slowed != "torch" else choice.ratio["onnxruntime"] < 0.2
    assert len(choice.seconds[slowed]) == select.ROUNDS and choice.parity["onnxruntime"] <= 1e-6
    assert encoder.identity == (TextEncoder() if choice.backend == "torch" else
                                TextEncoder(backend="onnxruntime", export_dir=root)).identity
    np.testing.assert_allclose(vectors, TextEncoder().encode(SAMPLE), atol=1e-5)


@pytest.mark.parametrize(("how", "reason"), [({"noise": 1e-3}, "cosine gap"), ({"fail": "no kernel for this CPU"},
                                                                                   "no kernel for this CPU")])
def test_a_backend_without_parity_or_failing_is_left_out(how: dict, reason: str, root: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Even made faster than torch (torch slowed on purpose), a backend off torch's similarities by more than
    1e-6, or one that fails, is left out with the reason."""
    encoder = TextEncoder(backend="auto", export_dir=root)
    build = encoder.build
    monkeypatch.setattr(encoder, "build", lambda n: Slowed(build(n), factor=30.0) if n == "torch" else
                        Slowed(build(n), **how))
    encoder.encode(SAMPLE[:2])
    assert encoder.choice is not None and encoder.choice.backend == "torch"
    assert reason in encoder.choice.refused["onnxruntime"] and "onnxruntime" not in encoder.choice.ratio


def test_the_choice_is_cached_and_a_change_measures_again(root: Path, monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    first = TextEncoder(backend="auto", export_dir=root)
    texts = SAMPLE[:3]
    embed_distinct(texts, first, tmp_path / "cache")
    (written,) = (root / "backends").glob("*.json")
    assert json.loads(written.read_text())["backend"] == first.choice.backend  # type: ignore[union-attr]
    measured: list[str] = []
    measure = select.measure
    monkeypatch.setattr(select, "measure", lambda *a, **k: measured.append("once") or measure(*a, **k))
    again = TextEncoder(backend="auto", export_dir=root)
    _, stats = embed_distinct(texts, again, tmp_path / "cache")
    assert measured == [] and stats.encoded == 0 and not again.source.loaded  # nothing measured nor loaded
    assert again.choice is not None and again.choice.cached == str(written) and again.identity == first.identity
    monkeypatch.setattr(select, "_cpuinfo", lambda: {"cpu": "another CPU", "flags": "0"})
    elsewhere = TextEncoder(backend="auto", export_dir=root)
    elsewhere.encode(texts)
    assert measured == ["once"] and len(list((root / "backends").glob("*.json"))) == 2
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    assert select.machine("cpu")["threads"] == 7  # the threads a backend gets are part of the key


def test_the_choice_is_logged_once(root: Path, monkeypatch: pytest.MonkeyPatch,
                                   caplog: pytest.LogCaptureFixture) -> None:
    encoder = TextEncoder(backend="auto", export_dir=root)
    with caplog.at_level(logging.INFO, logger="engine.encode"):
        encoder.encode(SAMPLE[:2])
        encoder.encode(SAMPLE[2:])
        assert encoder.identity and encoder.description()
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("encoder.backend=auto:")]
    assert len(lines) == 1 and "torch 1.00x torch's time" in lines[0] and "onnxruntime" in lines[0]


def test_candidates_are_the_backends_that_run_on_the_device() -> None:
    assert select.candidates("cuda:0") == ["torch"]  # ONNX Runtime and OpenVINO run on the CPU here
    cpu = select.candidates("cpu")
    assert cpu[0] == "torch" and "onnxruntime" in cpu
    assert ("openvino" in cpu) == select.installed("openvino")


def test_the_sample_is_fixed_and_spans_the_lengths() -> None:
    texts = select.sample_texts()
    assert texts == select.sample_texts() and len(texts) == len(set(texts)) > 40
    lengths = TextEncoder().token_lengths(texts)
    assert lengths.min() < 10 and lengths.max() == 256


@pytest.fixture
def sweep(tmp_path: Path) -> tuple[Path, Path]:
    gt = [{"id": f"{i}", "type": "fam", "steps": [
        {"step": 1, "calls": [{"name": "weather/now", "arguments": {"city": c}} for c in ("Paris", "Lyon")]}]}
        for i in range(3)]
    pred = json.loads(json.dumps(gt))
    pred[0]["steps"][0]["calls"][0]["arguments"]["city"] = "Marseille"
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "pred.json").write_text(json.dumps(pred))
    return tmp_path / "gt.json", tmp_path / "pred.json"


def test_the_outputs_record_the_choice_and_torch_records_nothing(root: Path, sweep: tuple[Path, Path],
                                                                 tmp_path: Path) -> None:
    metas = {}
    for backend in ("auto", "torch"):
        settings = ScoreSettings(device="cpu", cache_dir=str(root), encoder_backend=backend)
        result = score_sweep(sweep[0], [sweep[1]], Thresholds(), settings)
        write_sweep(result, [tmp_path / backend])
        metas[backend] = json.loads((tmp_path / backend / "results_eval.json").read_text())["meta"]
    described = metas["auto"]["encoder"]
    assert described["backend"] == "auto" and described["chosen"] in ("torch", "onnxruntime")
    assert set(described["ratio_to_torch"]) == {"torch", "onnxruntime"} and described["machine"]["cpu"]
    assert "encoder" not in metas["torch"]  # torch named as such: the outputs as before, byte for byte


def test_torch_alone_is_chosen_without_measuring(root: Path, monkeypatch: pytest.MonkeyPatch,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    """With no other backend installed for the device (a default install, or CUDA), auto is torch at once:
    nothing is timed, and its vectors are torch's."""
    monkeypatch.setattr(select, "candidates", lambda device: ["torch"])
    encoder = auto_encoder(root, monkeypatch, "torch", factor=30.0)
    with caplog.at_level(logging.INFO, logger="engine.encode"):
        vectors = encoder.encode(SAMPLE)
    assert encoder.choice is not None and encoder.choice.backend == "torch" and encoder.choice.seconds == {"torch": []}
    assert "the only backend installed for it (nothing measured)" in caplog.text
    np.testing.assert_array_equal(vectors, TextEncoder().encode(SAMPLE))


def test_a_held_choice_lock_is_waited_on_for_a_bounded_time(root: Path, monkeypatch: pytest.MonkeyPatch,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    from filelock import FileLock

    monkeypatch.setattr(select, "LOCK_WAIT_S", 0.2)
    (root / "backends").mkdir(exist_ok=True)
    held = FileLock(str(root / "backends" / ".lock"))
    held.acquire()
    import threading

    result: dict[str, object] = {}
    worker = threading.Thread(target=lambda: result.update(choice=auto_encoder(root, monkeypatch).encode(SAMPLE[:1])))
    try:
        with caplog.at_level(logging.WARNING, logger="engine.encode"):
            worker.start()
            worker.join(120)
    finally:
        held.release()
    assert not worker.is_alive() and "choice" in result, "the measurement waited for the lock to be let go of"
    assert "held by another process for 0.2 s; measuring without it" in caplog.text
