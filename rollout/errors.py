"""Errors of a rollout run besides bad input (which is the contract's `InputError`, one line naming
the file, the task id and the field) and failed model calls (the model layer's `ModelError`)."""

from __future__ import annotations


class CacheMiss(RuntimeError):
    """A replayed run asked for something the record/replay cache does not hold."""
