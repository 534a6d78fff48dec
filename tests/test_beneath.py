"""Opening a file beneath a folder without following links (engine.contract.beneath)."""

from __future__ import annotations

import io
import os
import socket
import threading
from pathlib import Path

import pytest
from PIL import Image

from engine.contract.beneath import Refused, image_type, open_beneath, read_beneath, relative_parts


def png_bytes() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (4, 3), (10, 20, 30)).save(out, "PNG")
    return out.getvalue()


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "media").mkdir(parents=True)
    (root / "media" / "a.png").write_bytes(png_bytes())
    (tmp_path / "secret").write_text("canary-key")
    return root


def test_a_file_beneath_is_read_by_relative_and_absolute_path(tree: Path) -> None:
    assert read_beneath(tree, "media/a.png") == png_bytes()
    assert read_beneath(tree, str(tree / "media" / "a.png")) == png_bytes()
    assert read_beneath(tree, str(tree / "media" / ".." / "media" / "a.png")) == png_bytes()


@pytest.mark.parametrize("path", ["../secret", "media/../../secret", "", "a\x00b", "/etc/passwd", ".", "media/.."])
def test_a_path_leaving_the_folder_is_refused(tree: Path, path: str) -> None:
    with pytest.raises(Refused):
        read_beneath(tree, path)


def test_an_absolute_path_leaving_the_folder_is_refused(tree: Path) -> None:
    with pytest.raises(Refused, match="leaves the folder"):
        relative_parts(tree, str(tree.parent / "secret"))
    with pytest.raises(Refused, match="leaves the folder"):
        relative_parts(tree, str(tree) + "-other/x")


def test_a_link_anywhere_on_the_path_is_refused(tree: Path) -> None:
    (tree / "key.png").symlink_to(tree.parent / "secret")
    (tree / "out").symlink_to(tree.parent)
    (tree / "inside.png").symlink_to(tree / "media" / "a.png")  # even a link that stays inside
    with pytest.raises(Refused, match="symbolic link"):
        read_beneath(tree, "key.png")
    with pytest.raises(Refused, match="a folder on its way is a symbolic link"):
        read_beneath(tree, "out/secret")
    (tree / "plain").write_text("x")
    with pytest.raises(Refused, match="a folder on its way is not a folder"):
        read_beneath(tree, "plain/secret")
    with pytest.raises(Refused, match="symbolic link"):
        read_beneath(tree, "inside.png")


def test_special_files_are_refused_without_waiting(tree: Path) -> None:
    os.mkfifo(tree / "pipe.png")
    done = threading.Event()

    def attempt() -> None:
        with pytest.raises(Refused, match="a FIFO"):
            read_beneath(tree, "pipe.png")
        done.set()

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    assert done.wait(10), "opening a FIFO blocked"
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tree / "s.png"))
        with pytest.raises(Refused):
            read_beneath(tree, "s.png")
    finally:
        sock.close()
    with pytest.raises(Refused, match="a folder"):
        read_beneath(tree, "media")
    with pytest.raises(Refused, match="not found"):
        read_beneath(tree, "media/none.png")


def test_the_size_limit(tree: Path) -> None:
    with pytest.raises(Refused, match="larger than 10 bytes"):
        read_beneath(tree, "media/a.png", limit=10)
    assert read_beneath(tree, "media/a.png", limit=10_000) == png_bytes()


def test_the_descriptor_is_the_file_checked(tree: Path) -> None:
    fd = open_beneath(tree, "media/a.png")
    try:
        (tree / "media" / "a.png").unlink()
        (tree / "media" / "a.png").symlink_to(tree.parent / "secret")  # swapped after the open
        assert os.read(fd, 100) == png_bytes()[:100]
    finally:
        os.close(fd)


def test_image_type_reads_content_not_names() -> None:
    assert image_type(png_bytes()) == "image/png"
    out = io.BytesIO()
    Image.new("RGB", (4, 3)).save(out, "JPEG")
    assert image_type(out.getvalue()) == "image/jpeg"
    assert image_type(b"-----BEGIN OPENSSH PRIVATE KEY-----\n") is None
    assert image_type(b"root:x:0:0:root:/root:/bin/bash\n") is None
    assert image_type(png_bytes()[:30]) is None
