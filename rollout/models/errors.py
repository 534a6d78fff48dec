"""Errors of the model layer, and the check that tells a model on loopback it cannot be reached."""

from __future__ import annotations

import errno
import ipaddress
import socket
from urllib.parse import urlsplit

LOOPBACK_DOWN = "the loopback interface is down (a network namespace without `ip link set lo up`?)"
_UNREACHABLE = (errno.ENETUNREACH, errno.EADDRNOTAVAIL)


class ModelError(RuntimeError):
    """A model call that failed for good (after the retries it was allowed): `reason` in one line and
    the number of `attempts` made (0 when none could be made)."""

    def __init__(self, message: str, *, reason: str | None = None, attempts: int = 0) -> None:
        super().__init__(message)
        self.reason = reason or message
        self.attempts = attempts


class MalformedReply(ValueError):
    """A 200 reply that holds no usable answer (a body cut short, no ``choices``, no content): retried
    like a server error."""


def on_loopback(url: str | None) -> bool:
    """Whether a base URL names this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    host = urlsplit(url).hostname if url else None
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def loopback_down() -> bool:
    """Whether 127.0.0.1 cannot be reached from here: a connection to a socket listening there fails as
    unreachable (ENETUNREACH, as in a network namespace whose ``lo`` was never brought up)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        try:
            listener.bind(("127.0.0.1", 0))
            listener.listen(1)
        except OSError as exc:
            return exc.errno in _UNREACHABLE
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as client:
            client.settimeout(5)
            try:
                client.connect(listener.getsockname())
            except OSError as exc:
                return exc.errno in _UNREACHABLE
    return False
