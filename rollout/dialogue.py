"""A conversation with the model: the messages of one task (or one curation) and their token usage."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rollout.models.messages import Message, Part
from rollout.record import CachedModel


class Dialogue:
    """Messages in the rollout's form (images as workspace paths) and the usage of every reply."""

    def __init__(self, model: CachedModel, scope: str, system: str, workspace: Path | None = None) -> None:
        self.model = model
        self.scope = scope
        self.workspace = workspace
        self.messages: list[Message] = [{"role": "system", "content": system}]
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, "requests": 0}

    async def ask(self, text: str, phase: str, *, images: Sequence[str] = (), json_mode: bool = False) -> str:
        """Send a user message (text, then images) and return the model's reply."""
        content: list[Part] = [{"type": "text", "text": text}]
        content += [{"type": "image", "path": p} for p in images]
        self.messages.append({"role": "user", "content": content})
        completion = await self.model.complete(self.messages, scope=self.scope, workspace=self.workspace,
                                               json_mode=json_mode)
        for key, value in completion.usage.items():
            self.usage[key] += value
        self.usage["requests"] += 1
        self.messages.append({"role": "assistant", "content": completion.content, "phase": phase,
                              "usage": completion.usage})
        return completion.content
