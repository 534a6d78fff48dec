"""The rule of the files a judge's question names (rollout.judges.images): only a regular file under one of
the task's folders, reached with no link followed, an image by its content, read once; its bytes go to
the driver, so a file swapped for a link after the check is not what is sent."""

from __future__ import annotations

import asyncio
import base64
import io
import logging
import os
from dataclasses import replace
from pathlib import Path

import pytest
from PIL import Image
from rollout_helpers import compose_judge

from engine.contract import safe_name
from engine.contract.beneath import Refused
from engine.contract.settings import DataSet
from engine.judging import COMPLETION, Question
from rollout.judges.cache import ReplyCache
from rollout.judges.images import (
    OUTSIDE,
    WARNED_IMAGES,
    ImageAttacher,
    ImageFolders,
    TaskImages,
    image_folders,
    refused_line,
    task_image,
)
from rollout.judges.pool import JudgePool, judge_specs
from rollout.models.registry import build_driver


def png(colour: tuple[int, int, int] = (1, 2, 3)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (4, 3), colour).save(out, "PNG")
    return out.getvalue()


@pytest.fixture
def folders(tmp_path: Path) -> dict[str, Path]:
    ws, data, home = tmp_path / "ws" / "t1", tmp_path / "data", tmp_path / "home"
    for folder in (ws / "media", data / "images", home):
        folder.mkdir(parents=True)
    (ws / "media" / "a.png").write_bytes(png())
    (data / "images" / "in.png").write_bytes(png((9, 9, 9)))
    (home / "id_rsa").write_text("canary-key")
    return {"ws": ws, "data": data, "home": home}


def test_a_real_image_under_any_of_the_tasks_folders_is_read(folders) -> None:
    roots = (folders["ws"], folders["data"])
    assert task_image(roots, str(folders["ws"] / "media" / "a.png")) == ("image/png", png())
    assert task_image(roots, str(folders["data"] / "images" / "in.png")) == ("image/png", png((9, 9, 9)))
    assert task_image(roots, str(folders["ws"] / "media" / ".." / "media" / "a.png"))[1] == png()


def test_every_other_file_is_refused_unread(folders, tmp_path: Path) -> None:
    ws, home = folders["ws"], folders["home"]
    (ws / "media" / "key.png").symlink_to(home / "id_rsa")
    (ws / "media" / "inside.png").symlink_to(ws / "media" / "a.png")
    (ws / "away").symlink_to(home)
    (ws / "media" / "text.png").write_text("canary-text")
    (ws / "media" / "cut.png").write_bytes(png()[:30])
    os.mkfifo(ws / "media" / "pipe.png")  # never waited on
    (ws / "media" / "big.png").write_bytes(png() + b"\0" * 100)
    cases = {str(home / "id_rsa"): OUTSIDE, str(ws) + "-other/a.png": OUTSIDE, "/etc/passwd": OUTSIDE,
             str(ws / ".." / ".." / "home" / "id_rsa"): OUTSIDE, "media/a.png": "not an absolute path",
             str(ws / "media" / "key.png"): "a symbolic link", str(ws / "media" / "inside.png"): "a symbolic link",
             str(ws / "away" / "id_rsa"): "on its way", str(ws / "media" / "text.png"): "not an image",
             str(ws / "media" / "cut.png"): "not an image", str(ws / "media" / "pipe.png"): "a FIFO",
             str(ws / "media" / "gone.png"): "not found", str(ws / "media" / "big.png"): "larger than 100 bytes"}
    for path, why in cases.items():
        with pytest.raises(Refused, match=why):
            task_image((ws, folders["data"]), path, limit=100 if path.endswith("big.png") else 2 ** 20)


def test_a_task_reads_each_image_once_and_sends_those_bytes(folders) -> None:
    """The bytes checked are the bytes sent: a file swapped for a link to a key after its task read it is
    neither read again by the task nor by the driver."""
    shot = folders["ws"] / "media" / "a.png"
    images = TaskImages((folders["ws"],))
    messages = COMPLETION.messages({"question": f"file={shot}"})
    attached = ImageAttacher().attach(messages, [str(shot)], images)
    shot.unlink()
    shot.symlink_to(folders["home"] / "id_rsa")
    again = ImageAttacher().attach(messages, [str(shot)], images)
    driver = build_driver({"provider": "openai", "name": "m", "base_url": "http://127.0.0.1:9/v1", "api_key_env": None,
                           "image_max_side": None})
    try:
        for sent in (attached, again):
            (part,) = [p for p in driver._convert(sent, None)[-1]["content"] if p["type"] == "image_url"]
            assert part["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(png()).decode()
    finally:
        asyncio.run(driver.aclose())
    assert images.refused == {}
    later = TaskImages((folders["ws"],))  # another task reads it afresh, and refuses the link
    assert later.parts([str(shot)]) == [] and later.refused == {str(shot): "a symbolic link"}


def test_a_pool_asked_without_a_tasks_rule_shows_no_file(folders) -> None:
    seen: list[list[dict]] = []

    class Driver:
        async def complete(self, messages):
            from rollout.models.base import Completion

            seen.append(messages)
            return Completion("\\boxed{1}", {}, "m")

        async def aclose(self):
            pass

    (spec,) = judge_specs({"j": {"provider": "openai", "api_name": "m", "base_url": "http://127.0.0.1:9/v1"}})
    question = Question(COMPLETION, {"question": f"file={folders['ws'] / 'media' / 'a.png'}"})

    async def go() -> None:
        async with JudgePool([spec], ReplyCache(None)) as pool:
            pool._drivers["j"] = Driver()  # type: ignore[assignment]
            await pool.ask(spec, question, 1)
            await pool.for_task(TaskImages((folders["ws"],))).ask(spec, question, 2)

    asyncio.run(go())
    without, with_rule = (m[-1]["content"] for m in seen)
    assert isinstance(without, str)
    assert [p["type"] for p in with_rule] == ["text", "image"] and with_rule[1]["data"] == png()


def test_the_folders_of_a_stage(tmp_path: Path) -> None:
    results, data = tmp_path / "results", tmp_path / "data"
    base = compose_judge(f"results_dir={results}", "data.images_dir=null", f"data.tasks={data / 'tasks.json'}")
    found = image_folders(replace(base, model="m"), {"reference_file": str(data / "gt.json")}, reads_task=False)
    assert found == ImageFolders(results / "rollout" / "m" / "workspace", (data,))
    assert found.of_task("a/b").folders == (results / "rollout" / "m" / "workspace" / safe_name("a/b"), data)
    found = image_folders(replace(base, workspace_dir=str(tmp_path / "ws")), {"images_dir": str(tmp_path / "img")},
                          reads_task=True)
    assert found == ImageFolders(tmp_path / "ws", (tmp_path / "img", data))
    found = image_folders(replace(base, data=DataSet("d", images_dir=str(tmp_path / "img"),
                                                     tasks=str(data / "t.json"))), {}, reads_task=True)
    assert found == ImageFolders(None, (tmp_path / "img",))  # a drop-in predictions file: no workspace known
    assert image_folders(base, {}, reads_task=False) == ImageFolders(None, ())


def test_the_closing_line_counts_by_reason_and_names_a_few() -> None:
    assert refused_line({}) is None
    refused = {"t1": {"/home/u/.ssh/id_rsa": OUTSIDE, "/w/t1/media/k.png": "a symbolic link"},
               "t2": {"/w/t2/x.png": "not an image", "/tmp/\x1b[31mred.png": OUTSIDE}}
    assert refused_line(refused) == (
        "4 file reference(s) of 2 task(s) not shown to the judges (2 outside the task's folders, 1 a symbolic "
        "link, 1 not an image): /home/u/.ssh/id_rsa (outside the task's folders, task t1); /w/t1/media/k.png "
        "(a symbolic link, task t1); /w/t2/x.png (not an image, task t2) ...")
    assert '"/tmp/\\u001b[31mred.png"' in refused_line(refused, few=4)


def test_a_long_path_keeps_its_file_name_in_the_line() -> None:
    long = "/w/" + "d" * 400 + "/media/key.png"
    line = refused_line({"t": {long: "a symbolic link"}})
    assert line is not None and "/w/ddd" in line and "d.../" not in line and line.count("...") == 1
    assert "dddd/media/key.png (a symbolic link, task t)" in line and len(line) < 400


def test_refused_images_are_named_one_by_one_only_up_to_a_few(tmp_path: Path,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    """Eight missing images across questions: the first five named in a warning each (each once), then one line
    saying the closing line counts the rest; nothing more however many follow."""
    attacher = ImageAttacher()
    images = TaskImages((tmp_path,))
    message = [{"role": "user", "content": "q"}]
    missing = [str(tmp_path / f"{i}.png") for i in range(8)]
    with caplog.at_level(logging.WARNING, logger="judge"):
        for path in [*missing, *missing]:
            assert attacher.attach(message, [path], images) == message
    said = [r.getMessage() for r in caplog.records]
    assert said == [*(f"image {p} not shown to the judges: not found" for p in missing[:WARNED_IMAGES]),
                    "more images not shown to the judges: the closing line counts them all"]
