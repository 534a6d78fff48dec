"""Every path a task or data file names stays inside its folder (engine.contract.contained_path): a TOBench
input file leading out through '..' or named by an absolute path, and a multi-turn task's turn image
leading out, are refused when the tasks are read, in one line (exit 2), before any model is asked: the
file's bytes reach no workspace, no output file and no request the model API receives."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest
from rollout_helpers import ROOT, local_overrides, make_image, plan_policy, write_json

from engine.contract import InputError, contained_path, read_tasks
from rollout.tasks import read_turns

SECRET = b"-----BEGIN OPENSSH PRIVATE KEY----- not-for-any-model 8d1f2c\n"
QUESTION = "Describe the attached file."


def _reference(path: Path, ids: list[str]) -> Path:
    return write_json(path, [{"id": i, "question": QUESTION, "steps": [], "final_reply": "Done."} for i in ids])


def _rollout(tmp_path: Path, server, tasks: Path, servers: Path) -> subprocess.CompletedProcess:
    """scripts/rollout.py on `tasks` (a tasks file, or a folder of TOBench task files)."""
    extra = [f"tasks.root={tasks}"] if tasks.is_dir() else []
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "rollout.py"),
                           *local_overrides(server, tasks, tmp_path / "results", servers, *extra)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)


def _leaked(secret: bytes, folder: Path, server) -> list[str]:
    """Where the secret's bytes (as they are, or base64 as an image part carries them) turn up."""
    forms = (secret, base64.b64encode(secret), base64.b64encode(secret)[:40])
    found = [str(p) for p in folder.rglob("*") if p.is_file() and any(f in p.read_bytes() for f in forms)]
    sent = json.dumps(server.requests).encode()
    return found + (["a model request"] if any(f in sent for f in forms) else [])


@pytest.mark.slow
def test_input_files_and_turn_images_outside_their_folder_never_reach_the_model(tmp_path, chat_server,
                                                                                servers_config) -> None:
    servers = servers_config("math")
    server = chat_server(plan_policy(_reference(tmp_path / "ref.json", ["leak-up", "leak-abs", "leak-turn"])))
    (tmp_path / "secret.png").write_bytes(SECRET)
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "id_rsa.png").write_bytes(SECRET)
    make_image(tmp_path / "private.png")
    private = (tmp_path / "private.png").read_bytes()

    cases = []
    for name, value in (("leak-up", "../secret.png"), ("leak-abs", str(tmp_path / "keys" / "id_rsa.png"))):
        root = tmp_path / name
        write_json(root / "task.json", {"task_name": name, "user_request": QUESTION, "input_files": [value]})
        cases.append((root, root / "task.json", name, "input_files[0]"))
    make_image(tmp_path / "mt" / "data" / "shown.png")
    turns = write_json(tmp_path / "mt" / "data" / "tasks.json", [{
        "id": "leak-turn", "question": QUESTION, "image": "shown.png",
        "turns": [{"prompt": QUESTION, "images": ["../../private.png"]}, {"prompt": "And now?"}]}])
    cases.append((turns, turns, "leak-turn", "turns[0].images[0]"))

    for tasks, file, task, field in cases:
        done = _rollout(tmp_path, server, tasks, servers)
        assert done.returncode == 2, done.stderr
        last = done.stderr.strip().splitlines()
        assert len(last) == 1 and "Traceback" not in done.stderr, done.stderr
        assert last[0].startswith(f"error: {file}: id {task}: field '{field}': ") and "leaves the" in last[0]
    assert server.requests == []
    assert _leaked(SECRET, tmp_path / "results", server) == []
    assert _leaked(private, tmp_path / "results", server) == []


def test_the_rule_follows_symlinks_and_names_file_task_and_field(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "outside.png").write_bytes(b"x")
    (tmp_path / "data" / "link.png").symlink_to(tmp_path / "outside.png")
    (tmp_path / "data" / "inside.png").write_bytes(b"x")
    base = tmp_path / "data"
    assert contained_path(base, "sub/../inside.png", file="f.json", task="t", field="image") == base / "inside.png"
    for bad in ("link.png", "../outside.png", str(tmp_path / "outside.png"), "", 3):
        with pytest.raises(InputError, match=r"^f.json: id t: field 'image': "):
            contained_path(base, bad, file="f.json", task="t", field="image")
    tasks = write_json(base / "tasks.json", [{"id": "a", "question": "q?", "image": "link.png"}])
    with pytest.raises(InputError, match=r"tasks.json: id a: field 'image': 'link.png' leaves the tasks file's folder"):
        read_tasks(tasks)
    images = tmp_path / "images"
    images.mkdir()
    with pytest.raises(InputError, match=r"field 'image': .* leaves the images folder \(tasks.images_dir\)"):
        read_tasks(write_json(base / "tasks.json", [{"id": "a", "question": "q?", "image": "../data/inside.png"}]),
                   images)


def test_an_empty_turns_list_is_refused_by_both_apps_naming_the_file(tmp_path: Path) -> None:
    task = {"id": "vtb-09", "question": "q?", "turns": []}
    tasks = write_json(tmp_path / "tasks.json", [task])
    rule = r"tasks.json: id vtb-09: field 'turns': must be a non-empty list of turns"
    with pytest.raises(InputError, match=rule):
        read_tasks(tasks)
    with pytest.raises(InputError, match=rule):
        read_turns(tasks)
    preds = write_json(tmp_path / "p_test_mcp_fuzzy.json", [{"id": "vtb-09", "steps": [], "final_reply": "x"}])
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "judge.py"), "judges=scripted", "data=vtb_demo",
                           f"data.tasks={tasks}", "evaluators=[vtb_rubrics]", f"results_dir={tmp_path}",
                           f"predictions={preds}", f"cache_dir={tmp_path / 'cache'}"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (f"error: {tasks}: id vtb-09: field 'turns': must be a non-empty "
                                                    "list of turns (or no turns field: one question)")


def test_a_reference_image_outside_the_images_folder_is_refused_by_the_m3_judges(tmp_path: Path) -> None:
    """The task image the M3 judges are shown follows the same rule: a reference naming '../secret.png' (or an
    absolute path) stops the judge app in one line naming the reference file, the task and 'image'."""
    (tmp_path / "secret.png").write_bytes(SECRET)
    data = tmp_path / "data"
    make_image(data / "images" / "fine.png")
    step = [{"calls": [{"name": "math.add", "arguments": {"a": 1, "b": 2}, "result": "3"}]}]
    for image in ("../secret.png", str(tmp_path / "secret.png")):
        ref = write_json(data / "ref.json", [{"id": "t1", "image": image, "question": QUESTION, "steps": step,
                                              "final_reply": "3"}])
        preds = write_json(tmp_path / "m_test_mcp_fuzzy.json", [{"id": "t1", "image": "images/fine.png",
                                                                "question": QUESTION, "steps": step,
                                                                "final_reply": "3"}])
        proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "judge.py"), "judges=scripted",
                               "evaluators=[m3_judges]", f"data.gt={ref}", f"data.images_dir={data}",
                               f"predictions={preds}", f"results_dir={tmp_path}", f"cache_dir={tmp_path / 'cache'}"],
                              capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        last = proc.stderr.strip().splitlines()[-1]
        assert last.startswith(f"error: {ref}: id t1: field 'image': ") and "leaves the images folder" in last, last
        assert not (tmp_path / "m_test_mcp_fuzzy_taskcompletion.json").exists() or SECRET not in (
            tmp_path / "m_test_mcp_fuzzy_taskcompletion.json").read_bytes()


def test_a_turn_image_that_is_a_fifo_says_so_without_waiting(tmp_path: Path) -> None:
    """Once "not found" for a FIFO that is there: now what it is (it is never opened, so never waited on)."""
    import os

    make_image(tmp_path / "a.png")
    os.mkfifo(tmp_path / "pipe.png")
    tasks = write_json(tmp_path / "tasks.json", [{"id": "vtb-01", "question": "q?", "turns": [
        {"prompt": "first", "images": ["a.png"]}, {"prompt": "then", "images": ["pipe.png"]}]}])
    with pytest.raises(InputError, match=r"tasks.json: id vtb-01: field 'turns\[1\].images\[0\]': image file .*"
                                         r"pipe.png: not a regular file \(a FIFO\)"):
        read_turns(tasks)
    with pytest.raises(InputError, match=r"field 'turns\[1\].images\[0\]': image file .*none.png not found"):
        read_turns(write_json(tmp_path / "t2.json", [{"id": "vtb-01", "question": "q?", "turns": [
            {"prompt": "first", "images": ["a.png"]}, {"prompt": "then", "images": ["none.png"]}]}]))
