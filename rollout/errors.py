"""Errors of the rollout: bad input is reported in one line naming the file, the task id and the field."""

from __future__ import annotations

from functools import partial

from engine.contract import InputError
from engine.contract import read_json as engine_read_json


class RolloutInputError(InputError):
    """Unusable input (tasks, references, servers config, settings); the message is one line."""


class ModelError(RuntimeError):
    """A model call that failed for good (after the retries it was allowed)."""


class CacheMiss(RuntimeError):
    """A replayed run asked for something the cache does not hold."""


read_json = partial(engine_read_json, error=RolloutInputError)
"""Parse a JSON file; a missing or malformed file raises a one-line RolloutInputError."""
