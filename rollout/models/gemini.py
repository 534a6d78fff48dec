"""Gemini through Google's own SDK, ``google-genai`` (``client.aio.models.generate_content``).

As the published judges ask Gemini, the messages go as ONE user message: its images first, then the
texts of every message, each as ``[role] text``, joined by newlines. ``params`` are the request's
generation config (e.g. ``temperature``, ``max_output_tokens``); ``base_url`` points the SDK at
another endpoint (``http_options``). The key: api_key_env (e.g. GEMINI_API_KEY).
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from engine.contract import InputError
from rollout.models.base import Completion, DriverSettings, ModelDriver, usage_of
from rollout.models.errors import MalformedReply
from rollout.models.messages import Messages, parts_of, role_of, text_of
from rollout.models.retry import retried_status, retry_after

if TYPE_CHECKING:
    from google.genai.types import Content


class GeminiDriver(ModelDriver):
    """generate_content requests; images go as inline bytes parts."""

    def __init__(self, settings: DriverSettings) -> None:
        super().__init__(settings)
        try:
            from google import genai
            from google.genai import errors, types
        except ImportError:
            raise InputError("config", "provider 'gemini' needs the google-genai package "
                             "(pip install google-genai)", field="model.provider") from None
        key = settings.api_key("EMPTY" if settings.base_url else None)
        self._types, self._errors = types, errors
        options = types.HttpOptions(base_url=settings.base_url or None, timeout=int(settings.timeout * 1000),
                                    retry_options=types.HttpRetryOptions(attempts=1))
        self._client = genai.Client(api_key=key, http_options=options)

    def _convert(self, messages: Messages, workspace: Path | None) -> list[Content]:
        types = self._types
        texts, images = [], []
        for message in messages:
            content = parts_of(message.get("content"))
            parts: list[Mapping[str, object]] = [{"type": "text", "text": content}] if isinstance(content, str) \
                else content
            text = "\n".join(text_of(p) for p in parts if p["type"] == "text")
            if text:
                texts.append(f"[{role_of(message)}] {text}")
            for part in parts:
                if part["type"] == "image":
                    mime, data = self._image(part, workspace)
                    images.append(types.Part.from_bytes(data=base64.b64decode(data), mime_type=mime))
        return [types.Content(role="user", parts=[*images, types.Part.from_text(text="\n".join(texts) or " ")])]

    async def _request(self, messages: Messages, workspace: Path | None,
                       json_mode: bool) -> Completion:
        contents = await asyncio.to_thread(self._convert, messages, workspace)  # images are read and scaled
        params = dict(self.settings.params)
        if json_mode:
            params["response_mime_type"] = "application/json"
        response = await self._client.aio.models.generate_content(
            model=self.settings.name, contents=contents, config=self._types.GenerateContentConfig(**params))
        if response.candidates is None and response.prompt_feedback is None:
            raise MalformedReply("the reply has no candidates")
        usage = response.usage_metadata
        candidates = response.candidates or []
        finish = candidates[0].finish_reason if candidates else None
        tokens = usage_of(getattr(usage, "prompt_token_count", 0), getattr(usage, "candidates_token_count", 0))
        return Completion(response.text or "", tokens, response.model_version or self.name,
                          getattr(finish, "value", finish))

    def _classify(self, exc: Exception) -> tuple[bool, float | None, str]:
        if isinstance(exc, self._errors.APIError):
            message = (exc.message or str(exc)).strip().splitlines()
            headers = getattr(exc.response, "headers", None)
            reason = f"HTTP {exc.code}: {message[0] if message else ''}".rstrip(": ")
            return retried_status(exc.code), retry_after(headers), reason
        kinds = {cls.__name__ for cls in type(exc).__mro__}  # the SDK's HTTP client's errors, by name
        if kinds & {"TimeoutException", "TimeoutError"}:
            return True, None, "request timed out"
        if kinds & {"TransportError", "ConnectionError"}:
            return True, None, "connection failed"
        return False, None, f"{type(exc).__name__}: {exc}"

    async def aclose(self) -> None:
        """Close the SDK client."""
        await self._client.aio.aclose()
