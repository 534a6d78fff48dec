"""Chat completions through the openai SDK: OpenAI and every OpenAI-compatible server (vLLM, SGLang, ...)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rollout.models.base import Completion, DriverSettings, SDKDriver, usage_of
from rollout.models.errors import MalformedReply
from rollout.models.messages import Messages, role_of


def _image_url(mime: str, data: str) -> dict[str, object]:
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}}


class OpenAIChatDriver(SDKDriver):
    """Chat completions; images go as base64 data URLs. Without api_key_env, a base_url gets the key "EMPTY"."""

    def __init__(self, settings: DriverSettings) -> None:
        super().__init__(settings)
        import openai

        key = settings.api_key("EMPTY" if settings.base_url else None)
        self._sdk = openai
        self._client = openai.AsyncOpenAI(api_key=key, base_url=settings.base_url or None,
                                          timeout=settings.timeout, max_retries=0)

    def _convert(self, messages: Messages, workspace: Path | None) -> list[dict[str, object]]:
        return [{"role": role_of(m), "content": self._content(m["content"], workspace, _image_url)} for m in messages]

    async def _request(self, messages: Messages, workspace: Path | None,
                       json_mode: bool) -> Completion:
        from openai.types.chat import ChatCompletion

        converted = await asyncio.to_thread(self._convert, messages, workspace)  # images are read and scaled
        body: dict[str, object] = {**self.settings.params, "model": self.settings.name, "messages": converted}
        if json_mode:
            body["response_format"] = {"type": "json_object"}
        # The body is already in wire format: posting it as is skips the typed create()'s walk over
        # every message part, which costs more than the whole harness does per call on long dialogues.
        response = await self._client.post("/chat/completions", cast_to=ChatCompletion, body=body)
        choices = getattr(response, "choices", None)
        if not choices or getattr(choices[0], "message", None) is None:
            raise MalformedReply("the reply has no choices" if not choices else "the first choice has no message")
        choice = choices[0]
        usage = response.usage
        return Completion(choice.message.content or "",
                          usage_of(getattr(usage, "prompt_tokens", 0), getattr(usage, "completion_tokens", 0)),
                          response.model or self.name, choice.finish_reason)
