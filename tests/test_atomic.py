"""Atomic writes: whole files only, with the permissions a plainly created file would get."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np

from engine.contract import atomic_write_json, default_file_mode
from engine.embedding_cache import EmbeddingCache, text_keys


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_outputs_get_umask_permissions(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        atomic_write_json(tmp_path / "out" / "r.json", {"a": 1})
        cache = EmbeddingCache(tmp_path / "cache", "enc")
        cache.store(text_keys(["x"]), np.ones((1, 3), np.float32))
        shard = next((tmp_path / "cache" / "enc").glob("*.npz"))
        assert default_file_mode() == 0o644
        assert mode(tmp_path / "out" / "r.json") == 0o644 and mode(shard) == 0o644
    finally:
        os.umask(old)
    assert (tmp_path / "out" / "r.json").read_text() == '{\n  "a": 1\n}\n'
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.endswith(".tmp")]
