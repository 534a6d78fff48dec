"""Errors of the model layer."""

from __future__ import annotations


class ModelError(RuntimeError):
    """A model call that failed for good (after the retries it was allowed): `reason` in one line and
    the number of `attempts` made (0 when none could be made)."""

    def __init__(self, message: str, *, reason: str | None = None, attempts: int = 0) -> None:
        super().__init__(message)
        self.reason = reason or message
        self.attempts = attempts


class MalformedReply(ValueError):
    """A 200 reply that holds no usable answer (a body cut short, no ``choices``, no content): retried
    like a server error."""
