"""What the model clients of the rollout and judge runs share: bounded concurrency, quiet client loggers."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


async def bounded(items: list[T], limit: int, work: Callable[[T], Awaitable[R]]) -> list[R]:
    """`await work(item)` for every item, at most `limit` at once; the outcomes in item order. When one
    raises, the others are cancelled (and awaited) before the error goes on: none runs on past it, into
    clients its caller then closes."""
    semaphore = asyncio.Semaphore(limit)

    async def one(item: T) -> R:
        async with semaphore:
            return await work(item)

    jobs = [asyncio.ensure_future(one(i)) for i in items]
    try:
        return list(await asyncio.gather(*jobs))
    except BaseException:
        for job in jobs:
            job.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)
        raise


def quiet_client_loggers() -> None:
    """Only warnings from the HTTP, model SDK and MCP clients' loggers (their INFO is one line a request)."""
    for name in ("httpx", "httpx2", "openai", "anthropic", "mcp"):
        logging.getLogger(name).setLevel(logging.WARNING)
