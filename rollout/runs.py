"""What the rollout and judge runs share: integer settings checked from the config, bounded concurrency."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from engine.contract import InputError

T = TypeVar("T")
R = TypeVar("R")


def config_int(cfg: Mapping[str, Any], key: str, *, minimum: int = 1, default: int | None = None,
               where: str | None = None) -> int:
    """An integer setting, at least `minimum` (`default` when absent); InputError naming the setting
    (`where`, default `key`) otherwise."""
    value = cfg.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise InputError("config", f"must be an integer >= {minimum}, got {value!r}", field=where or key)
    return value


async def bounded(items: list[T], limit: int, work: Callable[[T], Awaitable[R]]) -> list[R]:
    """`await work(item)` for every item, at most `limit` at once; the outcomes in item order."""
    semaphore = asyncio.Semaphore(limit)

    async def one(item: T) -> R:
        async with semaphore:
            return await work(item)

    return list(await asyncio.gather(*(one(i) for i in items)))


def quiet_client_loggers() -> None:
    """Only warnings from the HTTP, model SDK and MCP clients' loggers (their INFO is one line a request)."""
    for name in ("httpx", "httpx2", "openai", "anthropic", "mcp"):
        logging.getLogger(name).setLevel(logging.WARNING)
