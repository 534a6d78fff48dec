"""The scripted model as a provider: a loopback chat server following a script, owned by its driver.

The driver starts a `ScriptedChatServer` (127.0.0.1, a port chosen by the OS) with the policy the
model config's ``policy`` names: ``plan`` (the default), a `PlanPolicy` of its ``script``
(reference trajectories in the GT format, with their questions), or ``judge``, the scripted judge
of rollout.judges.scripted (scores shifted by ``bias``). It talks to the server as an
OpenAI-compatible API and stops it in `aclose`. No key is needed.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.contract import InputError, check_choice
from rollout.drivers.base import DriverSettings, settings_from_config
from rollout.drivers.openai_chat import OpenAIChatDriver
from rollout.scripted import PlanPolicy, Policy, ScriptedChatServer

POLICIES = ("plan", "judge")


def policy_of(cfg: Mapping[str, Any]) -> Policy:
    """The policy a scripted model config names (``policy``: plan or judge)."""
    kind = cfg.get("policy") or "plan"
    if kind == "judge":
        from rollout.judges.scripted import JudgePolicy

        return JudgePolicy(float(cfg.get("bias") or 0.0))
    check_choice(kind, POLICIES, "scripted policy", "model.policy")
    script = cfg.get("script")
    if not script:
        raise InputError("config", "the scripted model needs a script file", field="model.script")
    return PlanPolicy.from_file(Path(script))


class ScriptedDriver(OpenAIChatDriver):
    """Chat completions from a scripted server on loopback that lives as long as the driver."""

    def __init__(self, settings: DriverSettings, policy: Policy, delay: float = 0.0) -> None:
        self._server = ScriptedChatServer(policy, delay=delay)
        base_url = self._server.start()
        try:
            super().__init__(dataclasses.replace(settings, base_url=base_url, api_key_env=None))
        except BaseException:
            self._server.stop()
            raise

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> ScriptedDriver:
        """The driver of a scripted model config (``policy``, ``script`` or ``bias``, ``delay``)."""
        return cls(settings_from_config(cfg), policy_of(cfg), float(cfg.get("delay") or 0.0))

    async def aclose(self) -> None:
        """Close the client, then stop the loopback server."""
        try:
            await super().aclose()
        finally:
            await asyncio.to_thread(self._server.stop)
