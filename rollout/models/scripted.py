"""The scripted model as a provider: a loopback chat server following a script, owned by its driver.

The driver starts a `ScriptedChatServer` (127.0.0.1, a port chosen by the OS) with the policy the
model config's ``policy`` names among the registered ones (rollout.models.loopback.register_policy):
``plan`` (the default; rollout.scripted), ``judge`` (rollout.judges.scripted), or any other. It talks
to the server as an OpenAI-compatible API and stops it in `aclose`; with ``base_url`` it talks to a
scripted server of another process instead. No key is needed. A message's markers (MARKERS: the
judges' rubric ``purpose`` and question ``payload``) are kept in the request the server sees, and its
first message carries the task's workspace folder name (``task``: the task id as `safe_name` writes it),
so a policy can tell tasks with the same question apart.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from engine.contract.settings import ModelConfig
from rollout.models.base import DriverSettings, driver_settings
from rollout.models.loopback import Policy, ScriptedChatServer, policy_of
from rollout.models.messages import Messages
from rollout.models.openai_chat import OpenAIChatDriver

MARKERS: tuple[str, ...] = ("purpose", "payload")
"""Keys of a message kept for the scripted server besides what the chat API sends."""


class ScriptedDriver(OpenAIChatDriver):
    """Chat completions from a scripted server on loopback: its own, which lives as long as the driver,
    or (with ``base_url``) one serving from another process (``python -m rollout.judges.scripted``)."""

    def __init__(self, settings: DriverSettings, policy: Policy | None, delay: float = 0.0) -> None:
        self._server = ScriptedChatServer(policy, delay=delay) if policy is not None else None
        base_url = self._server.start() if self._server is not None else settings.base_url
        try:
            super().__init__(dataclasses.replace(settings, base_url=base_url, api_key_env=None))
        except BaseException:
            if self._server is not None:
                self._server.stop()
            raise

    @classmethod
    def from_config(cls, model: ModelConfig) -> ScriptedDriver:
        """The driver of a scripted model config (``policy``, its settings such as ``script`` or ``bias``,
        ``delay``; or ``base_url``, a scripted server already running)."""
        settings = driver_settings(model)
        if settings.base_url:
            return cls(settings, None)
        return cls(settings, policy_of(model), model.delay)

    def _convert(self, messages: Messages, workspace: Path | None) -> list[dict[str, object]]:
        converted = super()._convert(messages, workspace)
        marked = [{**c, **{k: m[k] for k in MARKERS if k in m}} for c, m in zip(converted, messages)]
        if marked and workspace is not None:
            marked[0] = {**marked[0], "task": workspace.name}
        return marked

    async def aclose(self) -> None:
        """Close the client, then stop the loopback server it owns."""
        try:
            await super().aclose()
        finally:
            if self._server is not None:
                await asyncio.to_thread(self._server.stop)
