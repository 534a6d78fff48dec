"""A persistent on-disk embedding cache, safe for concurrent writers and checked on read.

Layout: ``<cache_dir>/<encoder id>/<sha256>.npz``. Each shard is an ``.npz`` of 16-byte
text keys and float32 vectors, named by the SHA-256 of its own bytes: a reader hashes the
whole file and parses it only when the name matches, so any damage to a shard (a changed
byte anywhere, a truncation) is found before the file is interpreted; the shard is then
reported, deleted and its texts are embedded again. Writers never modify a file: they
write a new shard to a temporary name and rename it into place, so readers only ever see
whole shards and any number of processes may write at once. Embedding the texts a cache
lacks happens under a per-directory lock (``locked``, waited on for a bounded time), so processes
sharing the cache encode each text once. When shards accumulate they are merged under a file lock. Shards
of the earlier format (``<hex>-<pid>.npz``, with a checksum array inside) are not read.
"""

from __future__ import annotations

import hashlib
import io
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from filelock import FileLock, Timeout

from engine.contract import atomic_write_bytes

log = logging.getLogger(__name__)

KEY_BYTES = 16
MERGE_AT = 32
LOCK_WAIT_S = 600.0
"""How long a process waits for another to finish embedding into the cache before embedding on its own."""
_SHARD_NAME = re.compile(r"[0-9a-f]{64}\.npz")


def text_keys(texts: list[str]) -> np.ndarray:
    """16-byte BLAKE2b digests of the texts, as a numpy ``S16`` array."""
    digests = [hashlib.blake2b(t.encode("utf-8"), digest_size=KEY_BYTES).digest() for t in texts]
    return np.array(digests, dtype=f"S{KEY_BYTES}") if digests else np.zeros(0, dtype=f"S{KEY_BYTES}")


def _acquired(lock: FileLock, timeout: float) -> bool:
    """Whether the lock was acquired within timeout seconds."""
    try:
        lock.acquire(timeout=timeout)
    except Timeout:
        return False
    return True


class EmbeddingCache:
    """Embeddings of texts for one encoder identity, stored under ``cache_dir``."""

    def __init__(self, cache_dir: str | Path, encoder_id: str) -> None:
        self.directory = Path(cache_dir).expanduser() / encoder_id
        self.directory.mkdir(parents=True, exist_ok=True)

    def _shards(self) -> list[Path]:
        return sorted(p for p in self.directory.glob("*.npz") if _SHARD_NAME.fullmatch(p.name))

    def _read_shard(self, shard: Path) -> tuple[np.ndarray, np.ndarray] | None:
        """Keys and vectors of a shard; None if it vanished or is damaged (then it is removed)."""
        try:
            data = shard.read_bytes()
        except FileNotFoundError:
            return None  # merged away by another process meanwhile
        except OSError as exc:
            self._discard(shard, f"unreadable: {exc.strerror or exc}")
            return None
        if hashlib.sha256(data).hexdigest() != shard.stem:
            self._discard(shard, f"checksum mismatch, {len(data)} bytes")
            return None
        try:  # the bytes are intact, so only a file this cache did not write can fail here
            with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
                keys, vectors = arrays["keys"], arrays["vectors"]
        except Exception as exc:  # boundary: numpy and zipfile raise many types for foreign files
            self._discard(shard, f"not a shard ({type(exc).__name__}: {exc})")
            return None
        if (keys.dtype != np.dtype(f"S{KEY_BYTES}") or vectors.dtype != np.float32
                or vectors.ndim != 2 or len(keys) != len(vectors)):
            self._discard(shard, "not a shard (unexpected array layout)")
            return None
        return keys, vectors

    def _discard(self, shard: Path, why: str) -> None:
        try:
            shard.unlink(missing_ok=True)
        except OSError as exc:
            log.warning("embedding cache: damaged shard %s (%s) could not be removed: %s", shard, why, exc)
            return
        log.warning("embedding cache: damaged shard %s (%s); removed, its texts will be re-embedded",
                    shard, why)

    def lookup(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return (found mask, vectors) for the keys; rows not found are zero (no columns if none is)."""
        found = np.zeros(len(keys), dtype=bool)
        vectors: np.ndarray | None = None
        if len(keys) == 0:
            return found, np.zeros((0, 0), dtype=np.float32)
        order = np.argsort(keys)
        sorted_keys = keys[order]
        for shard in self._shards():
            loaded = self._read_shard(shard)
            if loaded is None:
                continue
            shard_keys, shard_vectors = loaded
            if vectors is None:
                vectors = np.zeros((len(keys), shard_vectors.shape[1]), dtype=np.float32)
            elif shard_vectors.shape[1] != vectors.shape[1]:
                self._discard(shard, "vector size differs from the other shards")
                continue
            pos = np.searchsorted(sorted_keys, shard_keys)
            pos_clipped = np.minimum(pos, len(sorted_keys) - 1)
            hit = sorted_keys[pos_clipped] == shard_keys
            targets = order[pos_clipped[hit]]
            vectors[targets] = shard_vectors[hit]
            found[targets] = True
            if found.all():
                break
        if vectors is None:
            vectors = np.zeros((len(keys), 0), dtype=np.float32)
        return found, vectors

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold this cache's embedding lock (one holder at a time across processes), waiting at most
        LOCK_WAIT_S for it; past that, a warning naming the lock, and the block runs without it (the
        cache takes any number of writers: the texts may then be encoded twice, never lost)."""
        lock = FileLock(str(self.directory / ".embed.lock"))
        if not _acquired(lock, 0):
            log.info("embedding cache %s: another process is embedding into it; waiting", self.directory)
            if not _acquired(lock, LOCK_WAIT_S):
                log.warning("embedding cache: %s held by another process for %g s; embedding without it (texts "
                            "both processes lack are encoded twice)", lock.lock_file, LOCK_WAIT_S)
                yield
                return
        try:
            yield
        finally:
            lock.release()

    def store(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        """Add a shard with these embeddings (atomic), merging shards when they pile up."""
        if len(keys) == 0:
            return
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self._write_shard(keys, vectors)
        if len(self._shards()) > MERGE_AT:
            self._merge()

    def _write_shard(self, keys: np.ndarray, vectors: np.ndarray) -> Path:
        buf = io.BytesIO()
        np.savez(buf, keys=keys, vectors=vectors)
        data = buf.getvalue()
        target = self.directory / f"{hashlib.sha256(data).hexdigest()}.npz"
        atomic_write_bytes(target, data)
        return target

    def _merge(self) -> None:
        try:
            with FileLock(str(self.directory / ".merge.lock"), timeout=0):
                shards = self._shards()
                read = [(s, self._read_shard(s)) for s in shards]
                parts = [(s, p) for s, p in read if p is not None]
                if len(parts) < 2:
                    return
                keys = np.concatenate([p[0] for _, p in parts])
                vectors = np.concatenate([p[1] for _, p in parts])
                keys, first = np.unique(keys, return_index=True)
                merged = self._write_shard(keys, vectors[first])
                for shard, _ in parts:
                    if shard != merged:
                        shard.unlink(missing_ok=True)
        except Timeout:
            return  # another process is merging
