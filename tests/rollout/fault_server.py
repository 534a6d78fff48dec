"""A model API that misbehaves on purpose: a policy over the scripted plan answering some requests with
a fault (loopback.Reply) instead, chosen by the request's number and the task it belongs to.

Run ``python tests/rollout/fault_server.py --plans REF --scenario NAME`` to serve one scenario on
loopback from another process (its first line printed is the base URL).
"""

from __future__ import annotations

import argparse
import email.utils
import json
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from rollout.models.loopback import Reply, message_texts, serve
from rollout.scripted import PlanPolicy

Fault = Callable[[int, str, str], "Reply | None"]
"""(request number from 1, the task's first user message, the last user message) -> a fault or None."""

CUT_BODY = b'{"id": "chatcmpl-x", "object": "chat.completion", "choices": [{"index": 0, "mess'
NO_CHOICES = b'{"id": "chatcmpl-x", "object": "chat.completion", "created": 0, "model": "m"}'


def malformed(every: int) -> Fault:
    """Every `every`-th request answered 200 with a body cut short, or (alternately) without choices."""
    return lambda n, task, last: Reply(body=CUT_BODY if n // every % 2 else NO_CHOICES) if n % every == 0 else None


def resets(every: int) -> Fault:
    """Every `every`-th request's connection reset without an answer."""
    return lambda n, task, last: Reply(reset=True) if n % every == 0 else None


def trickle(first: int, interval: float, pieces: int = 4) -> Fault:
    """The first `first` requests answered with their body in `pieces`, `interval` seconds apart."""
    return lambda n, task, last: Reply(trickle=interval, pieces=pieces) if n <= first else None


def dated_retry_after(seconds: float) -> Fault:
    """The first request answered 429 with a Retry-After HTTP date `seconds` ahead."""
    def fault(n: int, task: str, last: str) -> Reply | None:
        if n != 1:
            return None
        return Reply(status=429, error="slow down", headers={
            "Retry-After": email.utils.formatdate(time.time() + seconds, usegmt=True)})
    return fault


def storm(first: int, retry_after: str | None = "0") -> Fault:
    """The first `first` requests answered 429 (with `retry_after` when given), then calm."""
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return lambda n, task, last: Reply(status=429, error="rate limited", headers=headers) if n <= first else None


def storm_rate(rate: float, seed: int = 0, retry_after: str | None = None) -> Fault:
    """A 429 storm: each request answered 429 with probability `rate` (a seeded draw per request number)."""
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    draws = random.Random(seed)
    lock = threading.Lock()

    def fault(n: int, task: str, last: str) -> Reply | None:
        with lock:
            hit = draws.random() < rate
        return Reply(status=429, error="rate limited", headers=headers) if hit else None
    return fault


def bad_arguments(task_id: str) -> Fault:
    """Every PROCESS reply of one task (its retry too): a call whose arguments are a string that is not JSON."""
    def fault(n: int, task: str, last: str) -> Reply | None:
        if task.startswith(f"Task {task_id}:") and last.startswith("## PROCESS"):
            return Reply(content=json.dumps({"tool_calls": [{"name": "math/mean", "arguments": "{numbers: [1, 3"}]}))
        return None
    return fault


class FaultPolicy:
    """The plan's replies, except where one of `faults` answers first; `served` counts the faults given.

    With `once`, only a request's first asking can meet a fault (a retry of it never does) and requests
    are numbered by their first asking: the faults are then the same however the tasks interleave.
    """

    def __init__(self, base: PlanPolicy, *faults: Fault, once: bool = False) -> None:
        self.base, self.faults, self.once = base, faults, once
        self.n, self.served = 0, 0
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> str | Reply:
        key = json.dumps(request, sort_keys=True)
        with self._lock:
            if self.once and key in self._seen:
                return self.base(request)
            self._seen.add(key)
            self.n += 1
            n = self.n
        users = [t for role, t in message_texts(request) if role == "user"]
        for fault in self.faults:
            reply = fault(n, users[0] if users else "", users[-1] if users else "")
            if reply is not None:
                with self._lock:
                    self.served += 1
                return reply
        return self.base(request)


SCENARIOS: dict[str, Callable[[], tuple[Fault, ...]]] = {
    "none": lambda: (),
    "bad_arguments": lambda: (bad_arguments("t03"),),
    "malformed_30": lambda: (malformed(3),),
    "trickle": lambda: (trickle(1, 4.0),),
    "dated_retry_after": lambda: (dated_retry_after(3.0),),
    "storm_50": lambda: (storm_rate(0.5, seed=1),),
    "resets": lambda: (resets(4),),
}
"""Named scenarios for serving from the command line (the measurement of the closing table)."""


def main() -> None:
    """Serve one scenario until interrupted; the first line printed is the base URL."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plans", required=True)
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), required=True)
    args = parser.parse_args()
    serve(FaultPolicy(PlanPolicy.from_file(args.plans), *SCENARIOS[args.scenario]()))


if __name__ == "__main__":
    main()
