"""Providers by name: a model config's ``provider`` picks the factory that builds its driver.

Built in: ``openai`` (every chat-completions API), ``openai_responses`` (OpenAI's Responses API),
``gemini`` (Google's google-genai SDK), ``anthropic`` and ``scripted``. Another provider
is one `register_provider` call away; its factory gets the whole model config (a `ModelConfig`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from engine.contract import check_choice
from engine.contract.settings import ModelConfig
from rollout.models.anthropic_messages import AnthropicDriver
from rollout.models.base import ModelDriver, model_config
from rollout.models.gemini import GeminiDriver
from rollout.models.openai_chat import OpenAIChatDriver
from rollout.models.openai_responses import OpenAIResponsesDriver
from rollout.models.scripted import ScriptedDriver

DriverFactory = Callable[[ModelConfig], ModelDriver]
_PROVIDERS: dict[str, DriverFactory] = {}


def register_provider(name: str, factory: DriverFactory) -> None:
    """Make `factory` build the drivers of model configs with ``provider: <name>`` (replacing any other)."""
    _PROVIDERS[name] = factory


def providers() -> list[str]:
    """The registered provider names, sorted."""
    return sorted(_PROVIDERS)


def build_driver(given: ModelConfig | Mapping[str, object]) -> ModelDriver:
    """The driver of a model config (its node, or a mapping of its settings: `model_config`); its caller closes
    it with ``await driver.aclose()``."""
    model = model_config(given)
    return _PROVIDERS[check_choice(model.provider, providers(), "provider", "model.provider")](model)


register_provider("openai", OpenAIChatDriver.from_config)
register_provider("anthropic", AnthropicDriver.from_config)
register_provider("scripted", ScriptedDriver.from_config)
register_provider("openai_responses", OpenAIResponsesDriver.from_config)
register_provider("gemini", GeminiDriver.from_config)
