"""Every driver (chat completions, Responses, Gemini, Anthropic) under the one retry policy, against a
loopback server answering in its API's JSON shape with faults first: a body cut short, a body without
its answer, a body trickled past the timeout, a connection reset, a 429 with a dated Retry-After."""

from __future__ import annotations

import asyncio
import email.utils
import gc
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from rollout.models.errors import ModelError
from rollout.models.loopback import Reply
from rollout.models.registry import build_driver
from rollout.models.retry import retry_after

GOOD = {
    "openai": {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
               "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
               "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}},
    "openai_responses": {"id": "r", "object": "response", "created_at": 0, "model": "m", "status": "completed",
                         "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
                         "output": [{"type": "message", "id": "o", "role": "assistant", "status": "completed",
                                     "content": [{"type": "output_text", "text": "ok", "annotations": []}]}],
                         "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
                                   "input_tokens_details": {"cached_tokens": 0},
                                   "output_tokens_details": {"reasoning_tokens": 0}}},
    "gemini": {"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}],
               "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1}, "modelVersion": "m"},
    "anthropic": {"id": "a", "type": "message", "role": "assistant", "model": "m", "stop_reason": "end_turn",
                  "content": [{"type": "text", "text": "ok"}], "usage": {"input_tokens": 1, "output_tokens": 1}},
}
EMPTY = {"openai": {"id": "c", "object": "chat.completion", "model": "m"},
         "openai_responses": {"id": "r", "object": "response", "model": "m"},
         "gemini": {"modelVersion": "m"},
         "anthropic": {"id": "a", "type": "message", "role": "assistant", "model": "m"}}


class FaultyAPI:
    """A loopback HTTP server answering every POST with the next of `faults` (loopback.Reply), then `good`."""

    def __init__(self, good: dict[str, Any], faults: list[Reply]) -> None:
        self.times: list[float] = []
        outer, queue = self, list(faults)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                outer.times.append(time.monotonic())
                reply = queue.pop(0) if queue else Reply()
                if reply.reset:
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                status = reply.status
                data = reply.body if reply.body is not None else json.dumps(
                    good if status == 200 else {"error": {"message": "slow down"}}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                size = max(1, len(data) // reply.pieces) if reply.trickle else len(data)
                try:
                    for start in range(0, len(data), size):
                        self.wfile.write(data[start:start + size])
                        self.wfile.flush()
                        time.sleep(reply.trickle)
                except OSError:
                    self.close_connection = True

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _complete(provider: str, url: str, **settings: Any) -> tuple[str, int]:
    base = url + ("/v1" if provider in ("openai", "openai_responses") else "")
    cfg = {"provider": provider, "name": "m", "base_url": base, "api_key_env": None, "image_max_side": None,
           "timeout": 2, "max_retries": 6, "backoff": {"initial": 0.01, "max": 1.5}, **settings}

    async def go() -> tuple[str, int]:
        driver = build_driver(cfg)
        try:
            completion = await driver.complete([{"role": "user", "content": "hi"}])
            return completion.content, driver.retries
        finally:
            await driver.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("provider", list(GOOD))
def test_every_driver_retries_what_a_real_api_does(provider: str) -> None:
    pytest.importorskip("anthropic") if provider == "anthropic" else None
    dated = email.utils.formatdate(time.time() + 60, usegmt=True)  # capped at backoff.max (1.5 s)
    faults = [Reply(body=json.dumps(GOOD[provider]).encode()[:40]), Reply(body=json.dumps(EMPTY[provider]).encode()),
              Reply(trickle=1.0, pieces=4), Reply(reset=True),
              Reply(status=429, headers={"Retry-After": dated}), Reply(status=503)]
    api = FaultyAPI(GOOD[provider], faults)
    gc.collect()  # no pause of a full collection of this process's heap inside an attempt's 2 s
    gc.disable()
    try:
        start = time.monotonic()
        assert _complete(provider, api.url) == ("ok", 6)
        elapsed = time.monotonic() - start
    finally:
        gc.enable()
        api.close()
    trickled, after_trickle = api.times[2], api.times[3]
    assert 1.95 <= after_trickle - trickled < 3.6  # abandoned at the 2 s deadline, not after 4 s
    assert api.times[5] - api.times[4] >= 1.4  # the dated Retry-After read (up to backoff.max), not 0.01 s
    assert len(api.times) == 7 and elapsed < 10


@pytest.mark.parametrize("provider", list(GOOD))
def test_every_driver_gives_up_after_its_retries_and_stops_at_a_client_error(provider: str) -> None:
    pytest.importorskip("anthropic") if provider == "anthropic" else None
    api = FaultyAPI(GOOD[provider], [Reply(status=500)] * 3 + [Reply(status=400)])
    try:
        with pytest.raises(ModelError, match=r"HTTP 500.*\(gave up after 3 attempts\)") as failed:
            _complete(provider, api.url, max_retries=2)
        assert failed.value.attempts == 3 and failed.value.reason.startswith("HTTP 500")
        with pytest.raises(ModelError, match="HTTP 400") as refused:
            _complete(provider, api.url)
        assert refused.value.attempts == 1 and len(api.times) == 4
    finally:
        api.close()


def test_retry_after_in_seconds_milliseconds_and_as_a_date() -> None:
    now = 1_700_000_000.0
    assert retry_after({"retry-after": "5"}) == 5.0
    assert retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    dated = email.utils.formatdate(now + 7, usegmt=True)
    assert retry_after({"retry-after": dated}, now=now) == pytest.approx(7, abs=1)
    assert retry_after({"retry-after": email.utils.formatdate(now - 60, usegmt=True)}, now=now) == 0.0
    assert retry_after({"retry-after": "soon"}) is None and retry_after({}) is None and retry_after(None) is None
