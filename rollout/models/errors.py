"""Errors of the model layer."""

from __future__ import annotations


class ModelError(RuntimeError):
    """A model call that failed for good (after the retries it was allowed)."""
