"""OpenAI's Responses API through the openai SDK (``client.responses.create``): the form OpenAI's
reasoning models are asked in; ``params`` go to the request as they are (e.g. ``max_output_tokens``)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

from rollout.models.base import Completion, usage_of
from rollout.models.errors import MalformedReply
from rollout.models.messages import Messages, parts_of, role_of
from rollout.models.openai_chat import OpenAIChatDriver


def _input_image(mime: str, data: str) -> dict[str, object]:
    return {"type": "input_image", "image_url": f"data:{mime};base64,{data}"}


class OpenAIResponsesDriver(OpenAIChatDriver):
    """Responses API requests: every message is an input item (its text ``input_text``, an assistant's
    ``output_text``), images go as ``input_image`` data URLs. The client is the chat driver's (without
    api_key_env, a base_url gets "EMPTY")."""

    def _convert(self, messages: Messages, workspace: Path | None) -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        for message in messages:
            role = role_of(message)
            text_type = "output_text" if role == "assistant" else "input_text"
            content = parts_of(message.get("content"))
            parts: list[Mapping[str, object]] = [{"type": "text", "text": content}] if isinstance(content, str) \
                else content
            out.append({"role": role, "content": [
                {"type": text_type, "text": part["text"]} if part["type"] == "text"
                else _input_image(*self._image(part, workspace)) for part in parts]})
        return out

    async def _request(self, messages: Messages, workspace: Path | None,
                       json_mode: bool) -> Completion:
        converted = await asyncio.to_thread(self._convert, messages, workspace)  # images are read and scaled
        kwargs = dict(self.settings.params)
        if json_mode:
            kwargs["text"] = {"format": {"type": "json_object"}}
        response = await self._client.responses.create(model=self.settings.name, input=converted, **kwargs)
        if getattr(response, "output", None) is None:
            raise MalformedReply("the reply has no output")
        usage = response.usage
        return Completion(response.output_text or "",
                          usage_of(getattr(usage, "input_tokens", 0), getattr(usage, "output_tokens", 0)),
                          response.model or self.name, response.status)
