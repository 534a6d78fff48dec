"""Model drivers: chat completions over the openai SDK (hosted APIs and local vLLM/SGLang
servers alike) and Anthropic's messages API over its SDK (the optional extra ``anthropic``).

Drivers take messages in the rollout's own form: ``{"role", "content"}`` where content is a string
or a list of parts ``{"type": "text", "text"}`` / ``{"type": "image", "path"}``, image paths being
relative to the task workspace. Images are sent as base64 data URLs. Rate limits, timeouts,
connection failures and server errors are retried with exponential backoff (a Retry-After header
is honoured). The API key is read from the environment variable the config names and is never
logged or written anywhere.
"""

from __future__ import annotations

import asyncio
import base64
import io
import logging
import mimetypes
import os
import random
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.contract import InputError
from rollout.errors import ModelError

log = logging.getLogger(__name__)

_RETRY_STATUS = {408, 409, 429}


@dataclass
class Completion:
    """One model response: its text, token usage and the model that answered."""

    content: str
    usage: dict[str, int]
    model: str
    finish_reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON object of this completion."""
        return {"content": self.content, "usage": self.usage, "model": self.model,
                "finish_reason": self.finish_reason}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Completion:
        """The completion of a JSON object made by to_json."""
        return cls(data["content"], dict(data["usage"]), data["model"], data.get("finish_reason"))


def usage_of(prompt: int | None, completion: int | None) -> dict[str, int]:
    """A usage record from prompt and completion token counts (missing counts are 0)."""
    p, c = int(prompt or 0), int(completion or 0)
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}


class _ImageEncoder:
    """Base64 encodings of workspace images, downscaled to a maximum side, memoised by file state."""

    def __init__(self, max_side: int | None, capacity: int = 64) -> None:
        self.max_side = max_side or None
        self._memo: OrderedDict[tuple[str, int, int], tuple[str, str]] = OrderedDict()
        self._capacity = capacity
        self._lock = threading.Lock()

    def encode(self, path: Path) -> tuple[str, str]:
        """(mime type, base64 data) of an image file (thread-safe)."""
        stat = path.stat()
        key = (str(path), stat.st_mtime_ns, stat.st_size)
        with self._lock:
            if key in self._memo:
                self._memo.move_to_end(key)
                return self._memo[key]
        data = path.read_bytes()
        mime = mimetypes.guess_type(path.name)[0] or "image/png"
        if self.max_side:
            from PIL import Image

            with Image.open(io.BytesIO(data)) as img:
                if max(img.size) > self.max_side:
                    img.thumbnail((self.max_side, self.max_side))
                    out = io.BytesIO()
                    fmt = "JPEG" if mime == "image/jpeg" else "PNG"
                    (img.convert("RGB") if fmt == "JPEG" else img).save(out, fmt)
                    data, mime = out.getvalue(), f"image/{fmt.lower()}"
        value = (mime, base64.b64encode(data).decode("ascii"))
        with self._lock:
            self._memo[key] = value
            if len(self._memo) > self._capacity:
                self._memo.popitem(last=False)
        return value


@dataclass
class DriverSettings:
    """The settings shared by the drivers (the model config's fields)."""

    name: str
    base_url: str | None = None
    api_key_env: str | None = None
    json_mode: bool = False
    params: dict[str, Any] = field(default_factory=dict)
    timeout: float = 300.0
    max_retries: int = 6
    backoff_initial: float = 1.0
    backoff_max: float = 60.0
    image_max_side: int | None = 2048

    def api_key(self, default: str | None) -> str | None:
        """The key from the environment variable named by api_key_env, or default when none is named."""
        if not self.api_key_env:
            return default
        key = os.environ.get(self.api_key_env)
        if not key:
            raise InputError("config", f"environment variable {self.api_key_env} is not set",
                                    field="model.api_key_env")
        return key


class ModelDriver:
    """A chat model behind an API; subclasses implement one request."""

    def __init__(self, settings: DriverSettings) -> None:
        self.settings = settings
        self.name = settings.name
        self._images = _ImageEncoder(settings.image_max_side)

    async def complete(self, messages: list[dict[str, Any]], *, workspace: Path | None = None,
                       json_mode: bool = False) -> Completion:
        """The model's reply to messages, retried on transient failures."""
        s = self.settings
        attempt = 0
        while True:
            try:
                return await self._request(messages, workspace, json_mode and s.json_mode)
            except ModelError:
                raise
            except Exception as exc:  # boundary: classified below; permanent errors stop at once
                retry, wait, reason = self._classify(exc)
                if not retry:
                    raise ModelError(f"model {s.name}: {reason}") from None
                if attempt >= s.max_retries:
                    raise ModelError(f"model {s.name}: {reason} (gave up after {attempt + 1} attempts)") from None
                delay = min(s.backoff_max, wait if wait is not None else s.backoff_initial * 2 ** attempt)
                delay *= 1 + random.uniform(0, 0.1)
                log.warning("model %s: %s; retrying in %.1f s", s.name, reason, delay)
                await asyncio.sleep(delay)
                attempt += 1

    async def aclose(self) -> None:
        """Release the HTTP client."""

    async def _request(self, messages: list[dict[str, Any]], workspace: Path | None,
                       json_mode: bool) -> Completion:
        raise NotImplementedError

    def _classify(self, exc: Exception) -> tuple[bool, float | None, str]:
        raise NotImplementedError

    def _image(self, part: Mapping[str, Any], workspace: Path | None) -> tuple[str, str]:
        path = Path(part["path"])
        if not path.is_absolute():
            if workspace is None:
                raise ModelError(f"image {path} given without a workspace")
            path = workspace / path
        return self._images.encode(path)


def _retry_after(response: Any) -> float | None:
    """Seconds from a Retry-After header, when the response has a usable one."""
    headers = getattr(response, "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _status_message(exc: Any) -> str:
    """A one-line reason of an HTTP error from an SDK."""
    body = getattr(exc, "body", None)
    message = None
    if isinstance(body, dict):
        err = body.get("error", body)
        message = err.get("message") if isinstance(err, dict) else None
    text = (message or getattr(exc, "message", "") or str(exc)).strip().splitlines()
    return f"HTTP {exc.status_code}: {text[0] if text else ''}".rstrip(": ")


class _SDKDriver(ModelDriver):
    """A driver over a provider SDK whose errors follow the openai/anthropic layout (``self._sdk``)."""

    _sdk: Any
    _client: Any

    def _classify(self, exc: Exception) -> tuple[bool, float | None, str]:
        sdk = self._sdk
        if isinstance(exc, sdk.APITimeoutError):
            return True, None, "request timed out"
        if isinstance(exc, sdk.APIConnectionError):
            return True, None, "connection failed"
        if isinstance(exc, sdk.APIStatusError):
            retry = exc.status_code in _RETRY_STATUS or exc.status_code >= 500
            return retry, _retry_after(exc.response), _status_message(exc)
        return False, None, f"{type(exc).__name__}: {exc}"

    async def aclose(self) -> None:
        """Close the SDK client."""
        await self._client.close()


class OpenAIChatDriver(_SDKDriver):
    """Chat completions through the openai SDK: OpenAI and every OpenAI-compatible server."""

    def __init__(self, settings: DriverSettings) -> None:
        super().__init__(settings)
        import openai

        key = settings.api_key("EMPTY" if settings.base_url else None)
        if key is None:
            raise InputError("config", "no API key: set model.api_key_env to the name of the "
                                    "environment variable that holds it", field="model.api_key_env")
        self._sdk = openai
        self._client = openai.AsyncOpenAI(api_key=key, base_url=settings.base_url or None,
                                          timeout=settings.timeout, max_retries=0)

    def _convert(self, messages: list[dict[str, Any]], workspace: Path | None) -> list[dict[str, Any]]:
        out = []
        for message in messages:
            content = message["content"]
            if isinstance(content, list):
                parts = []
                for part in content:
                    if part["type"] == "text":
                        parts.append({"type": "text", "text": part["text"]})
                    else:
                        mime, data = self._image(part, workspace)
                        parts.append({"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}})
                content = parts
            out.append({"role": message["role"], "content": content})
        return out

    async def _request(self, messages: list[dict[str, Any]], workspace: Path | None,
                       json_mode: bool) -> Completion:
        from openai.types.chat import ChatCompletion

        converted = await asyncio.to_thread(self._convert, messages, workspace)  # images are read and scaled
        body: dict[str, Any] = {**self.settings.params, "model": self.settings.name, "messages": converted}
        if json_mode:
            body["response_format"] = {"type": "json_object"}
        # The body is already in wire format: posting it as is skips the typed create()'s walk over
        # every message part, which costs more than the whole harness does per call on long dialogues.
        response = await self._client.post("/chat/completions", cast_to=ChatCompletion, body=body)
        if not response.choices:
            raise ModelError(f"model {self.name}: the response has no choices")
        choice = response.choices[0]
        usage = response.usage
        return Completion(choice.message.content or "",
                          usage_of(getattr(usage, "prompt_tokens", 0), getattr(usage, "completion_tokens", 0)),
                          response.model or self.name, choice.finish_reason)

class AnthropicDriver(_SDKDriver):
    """Anthropic's messages API through the ``anthropic`` SDK (install the extra ``anthropic``)."""

    def __init__(self, settings: DriverSettings) -> None:
        super().__init__(settings)
        try:
            import anthropic
        except ImportError:
            raise InputError("config", "provider 'anthropic' needs the anthropic package "
                                    "(pip install anthropic)", field="model.provider") from None
        key = settings.api_key("EMPTY" if settings.base_url else None)
        if key is None:
            raise InputError("config", "no API key: set model.api_key_env", field="model.api_key_env")
        self._sdk = anthropic
        self._client = anthropic.AsyncAnthropic(api_key=key, base_url=settings.base_url or None,
                                                timeout=settings.timeout, max_retries=0)

    def _convert(self, messages: list[dict[str, Any]],
                 workspace: Path | None) -> tuple[str | None, list[dict[str, Any]]]:
        system = None
        out: list[dict[str, Any]] = []
        for message in messages:
            content = message["content"]
            if message["role"] == "system":
                system = content if isinstance(content, str) else "\n".join(p["text"] for p in content
                                                                              if p["type"] == "text")
                continue
            if isinstance(content, list):
                blocks = []
                for part in content:
                    if part["type"] == "text":
                        blocks.append({"type": "text", "text": part["text"]})
                    else:
                        mime, data = self._image(part, workspace)
                        blocks.append({"type": "image",
                                       "source": {"type": "base64", "media_type": mime, "data": data}})
                content = blocks
            out.append({"role": message["role"], "content": content})
        return system, out

    async def _request(self, messages: list[dict[str, Any]], workspace: Path | None,
                       json_mode: bool) -> Completion:
        kwargs = dict(self.settings.params)
        kwargs.setdefault("max_tokens", 4096)
        system, converted = await asyncio.to_thread(self._convert, messages, workspace)
        if system is not None:
            kwargs["system"] = system
        response = await self._client.messages.create(model=self.settings.name, messages=converted, **kwargs)
        text = "".join(block.text for block in response.content if getattr(block, "type", None) == "text")
        usage = response.usage
        return Completion(text, usage_of(usage.input_tokens, usage.output_tokens), response.model or self.name,
                          response.stop_reason)

PROVIDERS = {"openai": OpenAIChatDriver, "anthropic": AnthropicDriver}


def settings_from_config(cfg: Mapping[str, Any], base_url: str | None = None) -> DriverSettings:
    """Driver settings of a model config (conf/rollout/model/*.yaml); base_url overrides the config's."""
    if "provider" not in cfg:
        raise InputError("config", "not a rollout model config (it has no 'provider'; the rollout's "
                                "models are in conf/rollout/model/)", field="model")
    backoff = cfg.get("backoff") or {}
    name = cfg.get("name")
    if not isinstance(name, str) or not name:
        raise InputError("config", "must be a non-empty string", field="model.name")
    return DriverSettings(
        name=name,
        base_url=base_url or cfg.get("base_url") or None,
        api_key_env=cfg.get("api_key_env") or None,
        json_mode=bool(cfg.get("json_mode", False)),
        params=dict(cfg.get("params") or {}),
        timeout=float(cfg.get("timeout", 300)),
        max_retries=int(cfg.get("max_retries", 6)),
        backoff_initial=float(backoff.get("initial", 1.0)),
        backoff_max=float(backoff.get("max", 60.0)),
        image_max_side=cfg.get("image_max_side", 2048) or None,
    )


def build_driver(cfg: Mapping[str, Any], base_url: str | None = None) -> ModelDriver:
    """The driver of a model config; `provider` picks it ("openai" for any chat-completions API)."""
    provider = cfg.get("provider", "openai")
    if provider not in PROVIDERS:
        raise InputError("config", f"unknown provider '{provider}' (expected one of "
                                f"{', '.join(sorted(PROVIDERS))}, or scripted)", field="model.provider")
    return PROVIDERS[provider](settings_from_config(cfg, base_url))
