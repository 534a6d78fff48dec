"""Loading: both JSON roots, the duplicate-id rule, and one-line errors naming file, id and field."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.contract import InputError, read_trajectories


def write(tmp_path: Path, obj, name: str = "f.json") -> Path:
    path = tmp_path / name
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return path


def test_list_and_object_roots(tmp_path: Path) -> None:
    steps = [{"step": 1, "calls": [{"name": "a/b", "arguments": {"x": 1}}]}]
    listed = read_trajectories(write(tmp_path, [{"id": 7, "steps": steps}], "l.json"))
    keyed = read_trajectories(write(tmp_path, {"k1": {"steps": steps}, "k2": {"id": "own", "steps": []}}, "o.json"))
    assert list(listed.tasks) == ["7"]
    assert list(keyed.tasks) == ["k1", "own"]
    assert keyed.tasks["k1"].calls[0].arguments == {"x": 1}


def test_duplicate_ids_keep_last_with_warning(tmp_path: Path, caplog) -> None:
    data = [{"id": "a", "steps": []}, {"id": "b", "steps": []},
            {"id": "a", "steps": [{"calls": [{"name": "s/t"}]}]}]
    with caplog.at_level(logging.WARNING):
        loaded = read_trajectories(write(tmp_path, data))
    assert loaded.duplicate_ids == ("a",)
    assert loaded.tasks["a"].num_calls == 1
    assert "repeated id(s)" in caplog.text and "a" in caplog.text


def test_real_gt_duplicates(gt_path: Path) -> None:
    loaded = read_trajectories(gt_path)
    assert len(loaded.tasks) == 208 and len(loaded.duplicate_ids) == 5
    missing = [c for c in loaded.tasks["00170000"].calls if c.arguments is None]
    assert missing and missing[0].name == "ppt/create_presentation"


@pytest.mark.parametrize("content, expected", [
    ("{not json", "not valid JSON"),
    ("42", "root must be a list"),
    ([{"steps": []}], "#0: field 'id': task has no id"),
    ([{"id": "t1"}], "id t1: field 'steps': task has no 'steps' (expected {\"id\": ..., \"steps\": [{\"step\": 1, "),
    ([{"id": "t1", "messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "s/t"}}]}]}],
     "task has no 'steps' (it holds OpenAI-style chat 'messages' with 1 tool_call(s); a prediction record puts "),
    ([{"id": "t1", "steps": {"a": 1}}], "id t1: field 'steps': steps must be a list"),
    ([{"id": "t1", "steps": ["x"]}], "id t1: field 'steps[0]'"),
    ([{"id": "t1", "steps": [{"calls": 5}]}], "id t1: field 'steps[0].calls'"),
    ([{"id": "t1", "steps": [{"calls": [{"name": ""}]}]}], "id t1: field 'steps[0].calls[0].name'"),
    ([{"id": "t1", "steps": [{"calls": [{"arguments": {}}]}]}], "field 'steps[0].calls[0].name'"),
    ([{"id": "t1", "steps": [{"calls": ["s/t"]}]}], "field 'steps[0].calls[0]'"),
    ([{"id": "t1", "type": 3, "steps": []}], "id t1: field 'type'"),
    ([{"id": [1], "steps": []}], "field 'id'"),
])
def test_errors_name_file_id_and_field(tmp_path: Path, content, expected: str) -> None:
    path = write(tmp_path, content)
    with pytest.raises(InputError) as err:
        read_trajectories(path)
    message = str(err.value)
    assert str(path) in message and expected in message and "\n" not in message


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        read_trajectories(tmp_path / "nope.json")


@pytest.mark.parametrize("required", ["", "1"])
def test_missing_shared_data_skips_or_fails(required: str, tmp_path: Path) -> None:
    """Without ../shared a parity test is skipped, or fails when M3BENCH_REQUIRE_SHARED is set (CI)."""
    env = {**os.environ, "M3BENCH_SHARED": str(tmp_path / "absent"), "M3BENCH_REQUIRE_SHARED": required}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           f"{Path(__file__)}::test_real_gt_duplicates"], env=env, capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[1], timeout=300)
    if required:
        assert proc.returncode == 1 and "M3BENCH_REQUIRE_SHARED is set, so this is an error" in proc.stdout
    else:
        assert proc.returncode == 0 and "1 skipped" in proc.stdout
