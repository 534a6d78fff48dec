"""Pausing Python's cyclic garbage collector around blocks that build many long-lived objects."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block: each collection would walk every object it
    builds (and every imported module's objects) again; no cycles are left to collect."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
