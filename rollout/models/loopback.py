"""A scripted model behind a real HTTP server on loopback, for the demo, the tests and the benchmark.

`ScriptedChatServer` speaks the OpenAI chat completions protocol (``POST /v1/chat/completions``)
and Anthropic's messages protocol (``POST /v1/messages``) on 127.0.0.1, with a port chosen by the
OS. Each reply comes from a policy: a function of the request's JSON body returning the reply text,
or a `Reply` for an HTTP error or a fault (a body cut short, trickled in pieces, a connection reset).
Policies are registered by name (`register_policy`): the agent's
plan policy (rollout.scripted) and the scripted judges (rollout.judges.scripted) register
themselves when imported, and a scripted model config's ``policy`` picks one (`policy_of`).
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from engine.contract import check_choice
from engine.contract.settings import ModelConfig


@dataclass
class Reply:
    """A scripted answer other than a plain completion: an HTTP error, text after a delay, or a fault:
    `body` sent as the whole body instead (e.g. JSON cut short), the body `trickle`d in `pieces` that
    many seconds apart, or the connection `reset` without an answer."""

    status: int = 200
    content: str = ""
    error: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    body: bytes | None = None
    trickle: float = 0.0
    pieces: int = 4
    reset: bool = False


Policy = Callable[[dict[str, Any]], "str | Reply"]
PolicyFactory = Callable[[ModelConfig], Policy]
_POLICIES: dict[str, PolicyFactory] = {}


def register_policy(name: str, factory: PolicyFactory) -> None:
    """Make `factory` build the policy of scripted model configs with ``policy: <name>`` (replacing any
    other); the factory gets the whole model config."""
    _POLICIES[name] = factory


def policies() -> list[str]:
    """The registered policy names, sorted."""
    return sorted(_POLICIES)


def policy_of(model: ModelConfig) -> Policy:
    """The policy a scripted model config names (``policy``, default ``plan``)."""
    kind = check_choice(model.policy or "plan", policies(), "scripted policy", "model.policy")
    return _POLICIES[kind](model)


def message_texts(request: dict[str, Any]) -> list[tuple[str, str]]:
    """(role, text) of each message of a chat request, text parts joined (images left out)."""
    out = []
    for message in request.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            content = "\n".join(p.get("text", "") for p in content if p.get("type") == "text")
        out.append((message.get("role", ""), content or ""))
    return out


def _tokens(request: dict[str, Any]) -> int:
    count = len(str(request.get("system", ""))) // 4
    for message in request.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            for part in content:
                count += len(part.get("text", "")) // 4 if part.get("type") == "text" else 85
        else:
            count += len(content or "") // 4
    return count


class _ChatRequestHandler(BaseHTTPRequestHandler):
    """Answers POST requests of the chat completions and messages protocols from the owner's policy."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes
    server: _ChatHTTPServer

    def log_message(self, format: str, *args: object) -> None:
        """Keep the console quiet."""

    def _send(self, status: int, body: dict[str, object], headers: dict[str, str], reply: Reply | None = None) -> None:
        data = json.dumps(body).encode("utf-8") if reply is None or reply.body is None else reply.body
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        if reply is None or not reply.trickle:
            self.wfile.write(data)
            return
        size = -(-len(data) // max(1, reply.pieces))
        try:
            for start in range(0, len(data), size):
                self.wfile.write(data[start:start + size])
                self.wfile.flush()
                if start + size < len(data):
                    time.sleep(reply.trickle)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up waiting

    def _reset(self) -> None:
        """Close the connection at once, with a TCP reset (SO_LINGER 0) and no answer."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.connection.close()

    def do_POST(self) -> None:
        """Answer a chat completions or messages request from the policy."""
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        anthropic = self.path.rstrip("/").endswith("/messages")
        if not anthropic and not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}}, {})
            return
        owner = self.server.owner
        with owner.lock:
            owner.served += 1
            n = owner.served
            if owner.keep_requests:
                owner.requests.append({"path": self.path, "body": request,
                                       "authorization": self.headers.get("Authorization", ""),
                                       "x_api_key": self.headers.get("x-api-key", ""), "time": time.monotonic()})
        reply = owner.policy(request)
        if isinstance(reply, str):
            reply = Reply(content=reply)
        delay = reply.delay or owner.delay
        if delay:
            time.sleep(delay)
        if reply.reset:
            self._reset()
            return
        if reply.status != 200:
            self._send(reply.status, {"error": {"message": reply.error or f"scripted HTTP {reply.status}",
                                                "type": "scripted_error"}}, reply.headers, reply)
            return
        prompt_tokens, completion_tokens = _tokens(request), len(reply.content) // 4 + 1
        model = request.get("model", "scripted")
        if anthropic:
            body = {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": model,
                    "content": [{"type": "text", "text": reply.content}], "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": prompt_tokens, "output_tokens": completion_tokens}}
        else:
            body = {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0, "model": model,
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": reply.content}}],
                    "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                              "total_tokens": prompt_tokens + completion_tokens}}
        self._send(200, body, reply.headers, reply)


class _ChatHTTPServer(ThreadingHTTPServer):
    """The threaded HTTP server behind a ScriptedChatServer (its `owner`)."""

    daemon_threads = True
    request_queue_size = 256  # many clients connect at once (a judge pool, tasks in parallel)
    owner: ScriptedChatServer


class ScriptedChatServer:
    """A loopback HTTP server answering chat requests from a policy; use as a context manager.

    `served` counts the requests answered; with `keep_requests` (for tests that inspect what was sent)
    `requests` keeps each one, body and headers. Off by default: a dialogue's every request carries the
    whole dialogue, so keeping them would hold memory quadratic in its length."""

    def __init__(self, policy: Policy, *, delay: float = 0.0, keep_requests: bool = False) -> None:
        self.policy = policy
        self.delay = delay
        self.keep_requests = keep_requests
        self.served = 0
        self.requests: list[dict[str, object]] = []
        self.lock = threading.Lock()
        self._httpd: _ChatHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (ends with /v1)."""
        assert self._httpd is not None, "the server is not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> str:
        """Start serving in a background thread; returns the base URL."""
        self._httpd = _ChatHTTPServer(("127.0.0.1", 0), _ChatRequestHandler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="scripted-model", daemon=True)
        self._thread.start()
        return self.base_url

    def stop(self) -> None:
        """Stop serving."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> ScriptedChatServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve(policy: Policy, delay: float = 0.0) -> None:
    """Serve a policy on loopback until interrupted; the first line printed is the base URL."""
    server = ScriptedChatServer(policy, delay=delay)
    print(server.start(), flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()
