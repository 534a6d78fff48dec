"""Errors of the rollout: bad input is reported in one line naming the file, the task id and the field."""

from __future__ import annotations

from engine.errors import InputError


class RolloutInputError(InputError):
    """Unusable input (tasks, references, servers config, settings); the message is one line."""


class ModelError(RuntimeError):
    """A model call that failed for good (after the retries it was allowed)."""


class CacheMiss(RuntimeError):
    """A replayed run asked for something the cache does not hold."""
