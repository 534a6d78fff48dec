"""The one retry policy of every driver: which failures are retried, how long to wait, when to stop.

A request is one attempt under a total deadline (the model's ``timeout``, the whole exchange: connect,
send, and every byte of the reply, however slowly it trickles in). Rate limits (408/409/429), server
errors (5xx), connection failures, attempts past the deadline and malformed 200 replies (a body cut
short, a reply without its answer) are retried, at most ``max_retries`` times, with exponential backoff
from ``backoff.initial`` up to ``backoff.max`` (10% jitter), or as long as a ``Retry-After`` header asks
(seconds, or an HTTP date), capped at ``backoff.max``. Other failures (400, 401, 404...) stop at once.
The loop itself is tenacity's.
"""

from __future__ import annotations

import email.utils
import json
import logging
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, wait_exponential

from rollout.models.errors import MalformedReply

log = logging.getLogger(__name__)

RETRY_STATUS = frozenset({408, 409, 429})
"""HTTP statuses retried besides the 5xx ones."""


class Failure(Exception):
    """One failed attempt, classified: whether it is retried, the seconds the server asked to wait
    (None: the backoff decides) and a one-line reason."""

    def __init__(self, retry: bool, wait: float | None, reason: str) -> None:
        super().__init__(reason)
        self.retry, self.wait, self.reason = retry, wait, reason


def retried_status(status: int | None) -> bool:
    """Whether an HTTP status is worth another attempt (RETRY_STATUS and 5xx)."""
    return status is not None and (status in RETRY_STATUS or status >= 500)


def retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds a response's ``Retry-After`` (or ``retry-after-ms``) asks to wait: a number of seconds
    or an HTTP date; None without a usable header."""
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    try:
        if millis is not None:
            return max(0.0, float(millis) / 1000)
    except ValueError:
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def malformed(exc: BaseException) -> str | None:
    """The reason a failure is a malformed reply (an unusable 200 body), or None."""
    if isinstance(exc, MalformedReply):
        return f"malformed reply: {exc}"
    if isinstance(exc, json.JSONDecodeError):
        return f"malformed reply: the body is not JSON ({exc.msg} at char {exc.pos})"
    return None


@dataclass(frozen=True)
class RetryPolicy:
    """How many attempts a request gets and how long it waits between them."""

    max_retries: int
    backoff_initial: float
    backoff_max: float

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        asked = exc.wait if isinstance(exc, Failure) else None
        if asked is not None:
            return min(self.backoff_max, asked)
        backoff = wait_exponential(multiplier=self.backoff_initial, max=self.backoff_max)(state)
        return min(self.backoff_max, backoff * (1 + random.uniform(0, 0.1)))

    def retrying(self, model: str, retries: list[str]) -> AsyncRetrying:
        """A tenacity loop over attempts that raise `Failure`; each retried reason is appended to `retries`
        and logged; the last Failure is re-raised when the attempts run out or it is not retried."""

        def before_sleep(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome is not None else None
            reason = exc.reason if isinstance(exc, Failure) else str(exc)
            retries.append(reason)
            wait = state.next_action.sleep if state.next_action is not None else 0.0
            log.warning("model %s: %s; retrying in %.1f s", model, reason, wait)

        return AsyncRetrying(stop=stop_after_attempt(self.max_retries + 1),
                             retry=retry_if_exception(lambda e: isinstance(e, Failure) and e.retry),
                             wait=self._wait, before_sleep=before_sleep, reraise=True)
