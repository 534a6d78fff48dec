"""Anthropic's messages API through the ``anthropic`` SDK (install the extra ``anthropic``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from engine.contract import InputError
from rollout.models.base import Completion, DriverSettings, SDKDriver, usage_of
from rollout.models.errors import MalformedReply
from rollout.models.messages import Messages, parts_of, role_of, text_of


def _image_block(mime: str, data: str) -> dict[str, object]:
    return {"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}}


class AnthropicDriver(SDKDriver):
    """Messages API requests; the system message goes in ``system``, images as base64 blocks."""

    def __init__(self, settings: DriverSettings) -> None:
        super().__init__(settings)
        try:
            import anthropic
        except ImportError:
            raise InputError("config", "provider 'anthropic' needs the anthropic package "
                             "(pip install anthropic)", field="model.provider") from None
        key = settings.api_key("EMPTY" if settings.base_url else None)
        self._sdk = anthropic
        self._client = anthropic.AsyncAnthropic(api_key=key, base_url=settings.base_url or None,
                                                timeout=settings.timeout, max_retries=0)

    def _convert(self, messages: Messages, workspace: Path | None) -> tuple[str | None, list[dict[str, object]]]:
        system = None
        out: list[dict[str, object]] = []
        for message in messages:
            content, role = message.get("content"), role_of(message)
            if role == "system":
                parts = parts_of(content)
                system = parts if isinstance(parts, str) else "\n".join(text_of(p) for p in parts
                                                                          if p["type"] == "text")
                continue
            out.append({"role": role, "content": self._content(content, workspace, _image_block)})
        return system, out

    async def _request(self, messages: Messages, workspace: Path | None,
                       json_mode: bool) -> Completion:
        kwargs = dict(self.settings.params)
        kwargs.setdefault("max_tokens", 4096)
        system, converted = await asyncio.to_thread(self._convert, messages, workspace)
        if system is not None:
            kwargs["system"] = system
        response = await self._client.messages.create(model=self.settings.name, messages=converted, **kwargs)
        if getattr(response, "content", None) is None:
            raise MalformedReply("the reply has no content")
        text = "".join(block.text for block in response.content if getattr(block, "type", None) == "text")
        usage = response.usage
        return Completion(text, usage_of(usage.input_tokens, usage.output_tokens), response.model or self.name,
                          response.stop_reason)
