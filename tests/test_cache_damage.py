"""A damaged cache shard, whatever the damage, is reported, removed and rebuilt with the same vectors."""

from __future__ import annotations

import hashlib
import io
import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from engine.embedding_cache import EmbeddingCache, text_keys
from engine.encode import embed_distinct

TEXTS = [f'{{"query": "item {i}", "page": {i * 7}}}' for i in range(8)]


class StandInEncoder:
    """A small deterministic stand-in for the sentence encoder (the vector depends on the text)."""

    identity = "stand-in-v1"

    def encode(self, texts: list[str], save: object = None, every: float = 0.0) -> np.ndarray:
        return np.stack([np.arange(4, dtype=np.float32) * len(t) + sum(t.encode()) % 251 for t in texts])


def mutations(data: bytes) -> Iterator[tuple[str, bytes]]:
    """Damaged copies of a shard: one flipped bit in every third byte (the eight bit positions
    in turn), whole flipped bytes, truncations, zip directory and block damage."""
    for i in range(0, len(data), 3):
        bit = 1 << (i // 3 % 8)
        yield f"byte {i} xor 0x{bit:02x}", data[:i] + bytes([data[i] ^ bit]) + data[i + 1:]
    for i in range(1, len(data), 32):
        yield f"byte {i} xor 0xff", data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1:]
    for n in [*range(0, len(data), 16), len(data) - 1]:
        yield f"truncated to {n} bytes", data[:n]
    directory, end = data.index(b"PK\x01\x02"), data.rindex(b"PK\x05\x06")
    second = data.index(b"PK\x03\x04", 4)
    yield "central directory zeroed", data[:directory] + bytes(end - directory) + data[end:]
    yield "central directory dropped", data[:directory] + data[end:]
    yield "end of central directory dropped", data[:end]
    yield "second local header zeroed", data[:second] + bytes(30) + data[second + 30:]
    yield "first 512 bytes zeroed", bytes(512) + data[512:]
    yield "last 512 bytes zeroed", data[:-512] + bytes(512)
    yield "garbage appended", data + b"\x00garbage"
    yield "file doubled", data + data


def test_every_mutation_of_a_shard_is_detected_removed_and_rebuilt(tmp_path: Path, caplog) -> None:
    encoder = StandInEncoder()
    original, _ = embed_distinct(TEXTS, encoder, tmp_path)
    directory = tmp_path / encoder.identity
    shard = next(directory.glob("*.npz"))
    data = shard.read_bytes()
    for marker in (b"PK\x03\x04", b"\x93NUMPY", b"PK\x01\x02", b"PK\x05\x06"):
        assert marker in data  # the flips below cover zip headers, array headers and the directory
    cache = EmbeddingCache(tmp_path, encoder.identity)
    keys = text_keys(TEXTS)
    failures: list[str] = []
    count = 0
    for what, damaged in mutations(data):
        count += 1
        for rebuilt in directory.glob("*.npz"):
            if rebuilt != shard:
                rebuilt.unlink()
        shard.write_bytes(damaged)
        caplog.clear()
        try:
            with caplog.at_level(logging.WARNING, logger="engine.embedding_cache"):
                found, _ = cache.lookup(keys)
        except Exception as exc:  # the failure being tested for: collected, reported below
            failures.append(f"{what}: {type(exc).__name__} escaped lookup")
            continue
        if found.any() or shard.exists() or f"damaged shard {shard}" not in caplog.text:
            failures.append(f"{what}: found={int(found.sum())} kept={shard.exists()} "
                            f"warned={'damaged shard' in caplog.text}")
            continue
        vectors, stats = embed_distinct(TEXTS, encoder, tmp_path)
        if stats.encoded != len(TEXTS) or not np.array_equal(vectors, original):
            failures.append(f"{what}: rebuilt {stats.encoded} texts, vectors equal: "
                            f"{np.array_equal(vectors, original)}")
    assert count > len(data) // 3 > 250
    assert not failures, f"{len(failures)} of {count} mutations: " + "; ".join(failures[:20])


def _named_by_digest(directory: Path, data: bytes) -> Path:
    path = directory / f"{hashlib.sha256(data).hexdigest()}.npz"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("content", ["random bytes", "npz without keys", "keys of the wrong type"])
def test_intact_file_that_is_not_a_shard_is_removed(tmp_path: Path, caplog, content: str) -> None:
    cache = EmbeddingCache(tmp_path, "enc")
    buf = io.BytesIO()
    if content == "npz without keys":
        np.savez(buf, vectors=np.ones((1, 3), np.float32))
    elif content == "keys of the wrong type":
        np.savez(buf, keys=np.arange(2), vectors=np.ones((2, 3), np.float32))
    else:
        buf.write(np.random.default_rng(0).bytes(300))
    foreign = _named_by_digest(cache.directory, buf.getvalue())
    with caplog.at_level(logging.WARNING, logger="engine.embedding_cache"):
        found, _ = cache.lookup(text_keys(["x"]))
    assert not found.any() and not foreign.exists()
    assert f"damaged shard {foreign} (not a shard" in caplog.text


def test_shards_of_the_earlier_format_are_left_alone(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path, "enc")
    legacy = cache.directory / "0123456789abcdef01234567-4242.npz"
    np.savez(legacy, keys=text_keys(["x"]), vectors=np.ones((1, 3), np.float32),
             checksum=np.zeros(32, np.uint8))
    found, _ = cache.lookup(text_keys(["x"]))
    assert not found.any() and legacy.exists()
