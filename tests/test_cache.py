"""The embedding cache: reuse, concurrent writers, damage detection, and no encoder load when warm."""

from __future__ import annotations

import logging
import multiprocessing as mp
import zlib
from pathlib import Path

import numpy as np
import pytest

from engine.embedding_cache import EmbeddingCache, text_keys
from engine.encode import TextEncoder, embed_distinct


class CountingEncoder:
    """A stand-in with the TextEncoder interface that records what it was asked to encode."""

    identity = "counting-v1"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.every: list[float] = []

    def encode(self, texts: list[str], save: object = None, every: float = 0.0) -> np.ndarray:
        self.calls.append(list(texts))
        self.every.append(every)
        return np.stack([np.full(4, float(len(t)), np.float32) + np.arange(4, dtype=np.float32) for t in texts])


def test_second_run_uses_cache(tmp_path: Path) -> None:
    enc = CountingEncoder()
    first, s1 = embed_distinct(["a", "bb", "ccc"], enc, tmp_path)
    second, s2 = embed_distinct(["ccc", "a", "dddd"], enc, tmp_path)
    assert s1.encoded == 3 and s2.cached == 2 and s2.encoded == 1
    assert enc.calls[1] == ["dddd"]
    np.testing.assert_array_equal(second[0], first[2])


@pytest.mark.slow
def test_real_encoder_not_loaded_when_everything_is_cached(tmp_path: Path) -> None:
    texts = ['{"q":"x"}', '{"q":"日本"}']
    enc = TextEncoder(device="cpu")
    vectors, _ = embed_distinct(texts, enc, tmp_path)
    assert vectors.shape == (2, 384)
    again = TextEncoder(device="cpu")
    cached, stats = embed_distinct(texts, again, tmp_path)
    assert stats.encoded == 0 and not again.source.loaded
    np.testing.assert_array_equal(cached, vectors)


def test_damaged_shard_is_reported_and_rebuilt(tmp_path: Path, caplog) -> None:
    enc = CountingEncoder()
    embed_distinct(["x", "yy"], enc, tmp_path)
    shard = next((tmp_path / enc.identity).glob("*.npz"))
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING):
        vectors, stats = embed_distinct(["x", "yy"], enc, tmp_path)
    assert "damaged shard" in caplog.text
    assert stats.encoded == 2 and vectors[1, 0] == 2.0
    _, stats = embed_distinct(["x", "yy"], enc, tmp_path)
    assert stats.cached == 2


def _writer(args: tuple[str, int]) -> int:
    directory, worker = args
    cache = EmbeddingCache(directory, "concurrent")
    for batch in range(20):
        texts = [f"w{worker}-b{batch}-{i}" for i in range(5)] + [f"shared-{i}" for i in range(5)]
        vectors = np.stack([np.full(3, zlib.crc32(t.encode()) % 997, np.float32) for t in texts])
        cache.store(text_keys(texts), vectors)
    return worker


def test_concurrent_writers(tmp_path: Path) -> None:
    with mp.get_context("spawn").Pool(4) as pool:
        assert sorted(pool.map(_writer, [(str(tmp_path), w) for w in range(4)])) == [0, 1, 2, 3]
    cache = EmbeddingCache(tmp_path, "concurrent")
    texts = [f"w{w}-b{b}-{i}" for w in range(4) for b in range(20) for i in range(5)]
    texts += [f"shared-{i}" for i in range(5)]
    found, vectors = cache.lookup(text_keys(texts))
    assert found.all()
    np.testing.assert_array_equal(vectors[:, 0], [zlib.crc32(t.encode()) % 997 for t in texts])
    assert len(list((tmp_path / "concurrent").glob("*.npz"))) <= 40
    assert not [p for p in (tmp_path / "concurrent").rglob(".*") if p.suffix == ".tmp"]


def test_the_save_interval_reaches_the_encoder(tmp_path: Path) -> None:
    """encoder.save_every, read by the score app, is the interval the encoder saves at (default SAVE_EVERY)."""
    from engine.apps.compose import compose
    from engine.apps.score import job_of
    from engine.encode import SAVE_EVERY

    enc = CountingEncoder()
    embed_distinct(["a"], enc, tmp_path)
    settings = job_of(compose("score", ["encoder.save_every=0"])).settings
    embed_distinct(["b"], enc, tmp_path, every=settings.encoder_save_every)
    assert enc.every == [SAVE_EVERY, 0.0]
