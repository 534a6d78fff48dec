"""Fixtures of the rollout tests: scripted chat-completions servers on loopback and servers configs."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rollout_helpers import write_json  # noqa: E402

from rollout.scripted import Policy, ScriptedChatServer  # noqa: E402


@pytest.fixture
def chat_server() -> Iterator[Callable[..., ScriptedChatServer]]:
    """Start scripted chat servers on 127.0.0.1 (port chosen by the OS); all stop after the test."""
    started: list[ScriptedChatServer] = []

    def start(policy: Policy, delay: float = 0.0) -> ScriptedChatServer:
        server = ScriptedChatServer(policy, delay=delay)
        server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def servers_config(tmp_path: Path) -> Callable[..., Path]:
    """A servers config (published shape) with the shipped servers named, plus extra entries."""

    def make(*shipped: str, extra: dict[str, Any] | None = None) -> Path:
        modules = {"images": "rollout.servers.images", "math": "rollout.servers.mathstats",
                   "excel": "rollout.servers.spreadsheet"}
        servers = {name: {"command": "python", "python": "host", "args": ["-m", modules[name]], "env": {},
                          "disabled": False}
                   for name in shipped}
        servers.update(extra or {})
        return write_json(tmp_path / "servers.json", {"servers": servers})

    return make
