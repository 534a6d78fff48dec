"""Errors of a rollout run besides bad input (which is the contract's `InputError`, one line naming
the file, the task id and the field)."""

from __future__ import annotations


class ModelError(RuntimeError):
    """A model call that failed for good (after the retries it was allowed)."""


class CacheMiss(RuntimeError):
    """A replayed run asked for something the record/replay cache does not hold."""
