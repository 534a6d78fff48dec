"""Atomic writes: whole files only, with the permissions a plainly created file would get."""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path

import numpy as np
import pytest

from engine.contract import append_line, atomic_write_json, default_file_mode
from engine.contract.staged import staged_folder
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


def no_space(*_: object) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_names_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once `[Errno 28] No space left on device`, with no file named; the temporary file goes too."""
    target = tmp_path / "out" / "r.json"
    monkeypatch.setattr(os, "fsync", no_space)
    with pytest.raises(OSError) as caught:
        atomic_write_json(target, {"a": 1})
    assert str(caught.value) == f"{target}: cannot write it (No space left on device)"
    assert caught.value.errno == errno.ENOSPC and list((tmp_path / "out").iterdir()) == []
    monkeypatch.setattr(os, "write", no_space)
    with pytest.raises(OSError, match=f"^{re.escape(str(tmp_path / 'replies.jsonl'))}: cannot write it \\(No space "
                       "left on device\\)$"):
        append_line(tmp_path / "replies.jsonl", {"key": "k"})
    (tmp_path / "file").write_text("")
    with pytest.raises(OSError, match=f"^{re.escape(str(tmp_path / 'file' / 'r.json'))}: cannot write it \\(File "
                       "exists\\)$"):
        atomic_write_json(tmp_path / "file" / "r.json", {})


def test_a_full_disk_inside_a_staged_folder_names_the_output_not_its_staging_copy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "run"
    with pytest.raises(OSError) as caught:
        with staged_folder(target) as stage:
            (stage / "m").mkdir()
            monkeypatch.setattr(os, "fsync", no_space)
            atomic_write_json(stage / "m" / "results_eval.json", {"a": 1})
    named = target.resolve() / "m" / "results_eval.json"
    assert str(caught.value) == f"{named}: cannot write it (No space left on device)"
    assert not target.exists() and not (tmp_path / ".m3bench-staging").exists()
