"""What every driver shares: settings from a model config, completions, retries, error classification.

Drivers take messages in the rollout's own form (rollout.models.messages): ``{"role", "content"}`` where
content is a string or a list of parts ``{"type": "text", "text"}`` / ``{"type": "image", "path"}`` (a path
relative to the task workspace, read beneath it with no link followed, and only an image by its content) /
``{"type": "image", "mime", "data"}`` (an image's bytes, read and checked by the caller: the judges').
Every request goes through one retry policy (rollout.models.retry: a total deadline per attempt, rate
limits, server errors, connection failures and malformed replies retried with backoff or as Retry-After
asks); other errors fail at once. The API key is read from the environment variable the config names
and is never logged or written anywhere.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from engine.contract import InputError
from engine.contract.beneath import Refused
from engine.contract.settings import ModelConfig, model_node
from rollout.models.errors import ModelError
from rollout.models.images import ImageEncoder, read_image
from rollout.models.messages import Messages, parts_of
from rollout.models.retry import Failure, RetryPolicy, malformed, retried_status, retry_after


@dataclass
class Completion:
    """One model response: its text, token usage and the model that answered."""

    content: str
    usage: dict[str, int]
    model: str
    finish_reason: str | None = None

    def to_json(self) -> dict[str, object]:
        """A JSON object of this completion."""
        return {"content": self.content, "usage": self.usage, "model": self.model,
                "finish_reason": self.finish_reason}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Completion:
        """The completion of a JSON object made by to_json; ValueError naming what is not of its shape."""
        content, usage, model, finish = data["content"], data["usage"], data["model"], data.get("finish_reason")
        if not isinstance(content, str) or not isinstance(model, str) or not isinstance(usage, dict) or \
                not all(isinstance(k, str) and isinstance(v, int) for k, v in usage.items()) or \
                not (finish is None or isinstance(finish, str)):
            raise ValueError("not a completion (content and model strings, usage of counts, finish_reason)")
        return cls(content, dict(usage), model, finish)


def usage_of(prompt: int | None, completion: int | None) -> dict[str, int]:
    """A usage record from prompt and completion token counts (missing counts are 0)."""
    p, c = int(prompt or 0), int(completion or 0)
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}


@dataclass
class DriverSettings:
    """The settings shared by the drivers, made from a model config (`driver_settings`; its defaults are the
    config's, engine.contract.settings.ModelConfig); `name` is the model the API serves."""

    name: str
    base_url: str | None
    api_key_env: str | None
    json_mode: bool
    params: dict[str, Any]  # extra request fields, passed as they are to the SDK call's keyword arguments
    timeout: float
    max_retries: int
    backoff_initial: float
    backoff_max: float
    image_max_side: int | None

    def api_key(self, default: str | None) -> str:
        """The key from the environment variable named by api_key_env, or default when none is named."""
        if not self.api_key_env:
            if default is None:
                raise InputError("config", "no API key: set model.api_key_env to the name of the environment "
                                 "variable that holds it", field="model.api_key_env")
            return default
        key = os.environ.get(self.api_key_env)
        if not key:
            raise InputError("config", f"environment variable {self.api_key_env} is not set",
                             field="model.api_key_env")
        return key


def model_config(given: ModelConfig | Mapping[str, object]) -> ModelConfig:
    """A model config as its node: `given` itself, or a mapping of its settings (a judge's entry of a pool, a
    test's) made one over the node's defaults (engine.contract.settings.model_node); InputError naming the
    setting (``model.<key>``) it refuses."""
    if not isinstance(given, ModelConfig) and "provider" not in given:
        raise InputError("config", "not a rollout model config (it has no 'provider'; the rollout's "
                         "models are in conf/rollout/model/)", field="model")
    return model_node(given, "model")


def driver_settings(model: ModelConfig) -> DriverSettings:
    """Driver settings of a model config (conf/rollout/model/*.yaml, a judge of a pool)."""
    if not model.name:
        raise InputError("config", "must be a non-empty string", field="model.name")
    return DriverSettings(name=model.api_name or model.name, base_url=model.base_url or None,
                          api_key_env=model.api_key_env or None, json_mode=model.json_mode,
                          params=dict(model.params), timeout=model.timeout, max_retries=model.max_retries,
                          backoff_initial=model.backoff.initial, backoff_max=model.backoff.max,
                          image_max_side=model.image_max_side or None)


class ModelDriver:
    """A chat model behind an API; subclasses implement one request and the classification of its errors."""

    def __init__(self, settings: DriverSettings) -> None:
        self.settings = settings
        self.name = settings.name
        self.retries = 0
        """Attempts retried by this driver so far (every request together)."""
        self._images = ImageEncoder(settings.image_max_side)

    @classmethod
    def from_config(cls, model: ModelConfig) -> ModelDriver:
        """The driver of a model config (what the registry calls)."""
        return cls(driver_settings(model))

    async def complete(self, messages: Messages, *, workspace: Path | None = None,
                       json_mode: bool = False) -> Completion:
        """The model's reply to messages under the retry policy (rollout.models.retry); ModelError,
        with its reason and the attempts made, when there is none."""
        s = self.settings
        policy = RetryPolicy(s.max_retries, s.backoff_initial, s.backoff_max)
        retries: list[str] = []
        try:
            return await policy.retrying(s.name, retries)(self._attempt, messages, workspace,
                                                          json_mode and s.json_mode)
        except Failure as failure:
            attempts = len(retries) + 1
            suffix = f" (gave up after {attempts} attempts)" if failure.retry else ""
            raise ModelError(f"model {s.name}: {failure.reason}{suffix}", reason=failure.reason,
                             attempts=attempts) from None
        finally:
            self.retries += len(retries)

    async def _attempt(self, messages: Messages, workspace: Path | None, json_mode: bool) -> Completion:
        """One request under the total deadline; its failure classified as a `Failure`."""
        timeout = self.settings.timeout
        try:
            return await asyncio.wait_for(self._request(messages, workspace, json_mode), timeout)
        except ModelError:
            raise
        except (TimeoutError, asyncio.TimeoutError):  # one class from Python 3.11, two before
            raise Failure(True, None, f"no complete reply within {timeout:g} s") from None
        except Exception as exc:  # boundary: classified below; permanent errors stop at once
            reason = malformed(exc)
            if reason is not None:
                raise Failure(True, None, reason) from None
            raise Failure(*self._classify(exc)) from None

    async def aclose(self) -> None:
        """Release what the driver holds (its HTTP client)."""

    async def _request(self, messages: Messages, workspace: Path | None,
                       json_mode: bool) -> Completion:
        raise NotImplementedError

    def _classify(self, exc: Exception) -> tuple[bool, float | None, str]:
        """(retry?, seconds the server asked to wait or None, one-line reason) of a failed request."""
        raise NotImplementedError

    def _content(self, content: object, workspace: Path | None,
                 image_part: Callable[[str, str], dict[str, object]]) -> str | list[dict[str, object]]:
        """A message's content in an API's form: text parts as they are, images through image_part(mime, data)."""
        content = parts_of(content)
        if isinstance(content, str):
            return content
        return [{"type": "text", "text": part["text"]} if part["type"] == "text"
                else image_part(*self._image(part, workspace)) for part in content]

    def _image(self, part: Mapping[str, object], workspace: Path | None) -> tuple[str, str]:
        """(mime type, base64 data) of an image part: its bytes as given (``data``, ``mime``), or the image
        its ``path`` names beneath the workspace, read once with no link followed and checked by its
        content (rollout.models.images.read_image); ModelError naming it when it is refused."""
        if "data" in part:
            data, mime = part["data"], part.get("mime")
            if not isinstance(data, bytes) or not isinstance(mime, str):
                raise ModelError("an image part's data must be bytes and its mime a string")
            return self._images.encode(data, mime)
        path = part.get("path")
        if not isinstance(path, str):
            raise ModelError(f"an image part must name its path or give its data, got {sorted(part)}")
        if workspace is None:
            raise ModelError(f"image {path} given without a workspace")
        try:
            mime, data = read_image(workspace, path)
        except Refused as exc:
            reason = f"image {path} not sent: {exc}"
            raise ModelError(f"model {self.name}: {reason}", reason=reason) from None
        return self._images.encode(data, mime)


def _status_message(exc: Exception) -> str:
    """A one-line reason of an HTTP error from an SDK."""
    body = getattr(exc, "body", None)
    message = None
    if isinstance(body, dict):
        err = body.get("error", body)
        message = err.get("message") if isinstance(err, dict) else None
    text = (message or getattr(exc, "message", "") or str(exc)).strip().splitlines()
    return f"HTTP {getattr(exc, 'status_code', None)}: {text[0] if text else ''}".rstrip(": ")


class SDKDriver(ModelDriver):
    """A driver over a provider SDK whose errors follow the openai/anthropic layout (``self._sdk``)."""

    _sdk: ModuleType
    _client: Any  # the SDK's client: called with the config's params, which its typed signatures cannot check

    def _classify(self, exc: Exception) -> tuple[bool, float | None, str]:
        sdk = self._sdk
        if isinstance(exc, sdk.APITimeoutError):
            return True, None, "request timed out"
        if isinstance(exc, sdk.APIConnectionError):
            return True, None, "connection failed"
        if isinstance(exc, sdk.APIResponseValidationError):
            return True, None, f"malformed reply: {str(exc).splitlines()[0]}"
        if isinstance(exc, sdk.APIStatusError):
            return (retried_status(exc.status_code), retry_after(getattr(exc.response, "headers", None)),
                    _status_message(exc))
        return False, None, f"{type(exc).__name__}: {exc}"

    async def aclose(self) -> None:
        """Close the SDK client."""
        await self._client.close()
