"""The messages a driver is given, in the rollout's own form, and how a driver reads them.

A message is ``{"role", "content"}`` where content is a string or a list of parts: ``{"type": "text",
"text"}``, ``{"type": "image", "path"}`` (a path relative to the task workspace) or ``{"type": "image",
"mime", "data"}`` (an image's bytes, read and checked by the caller: the judges'). `Message` and `Part`
are the shapes the rollout builds (rollout.dialogue); a driver takes any mappings (the judges build
theirs as plain dicts) and reads them through `role_of`, `parts_of` and `text_of`, which refuse a message
of another shape with a ModelError naming what is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict

from rollout.models.errors import ModelError


class Part(TypedDict, total=False):
    """A part of a message's content: text, or an image by its workspace path (or its bytes)."""

    type: str
    text: str
    path: str
    mime: str
    data: bytes


class _Message(TypedDict):
    role: str
    content: str | list[Part]


class Message(_Message, total=False):
    """A message of a dialogue: its role and content, and for a reply the phase that asked and the usage."""

    phase: str
    usage: dict[str, int]


Messages = Sequence[Mapping[str, object]]
"""What a driver is given: messages of the rollout's form (`Message`, or a judge's plain dicts)."""


def _refused(what: str, value: object) -> ModelError:
    reason = f"a message's {what}, got {type(value).__name__}"
    return ModelError(f"message not sent: {reason}", reason=reason)


def role_of(message: Mapping[str, object]) -> str:
    """The message's role; ModelError when it is not a string."""
    role = message.get("role")
    if not isinstance(role, str):
        raise _refused("role must be a string", role)
    return role


def parts_of(content: object) -> str | list[Mapping[str, object]]:
    """A message's content: its text, or its parts; ModelError when it is neither."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _refused("content must be a string or a list of parts", content)
    parts = [part for part in content if isinstance(part, Mapping)]
    if len(parts) != len(content):
        raise _refused("content parts must be objects", next(p for p in content if not isinstance(p, Mapping)))
    return parts


def text_of(part: Mapping[str, object]) -> str:
    """The text of a text part; ModelError when it is not a string."""
    text = part.get("text")
    if not isinstance(text, str):
        raise _refused("text part's text must be a string", text)
    return text
