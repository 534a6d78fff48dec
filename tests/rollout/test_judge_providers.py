"""The Responses API and Gemini drivers against loopback servers answering in each API's JSON shape:
the requests they send, field by field, images included, and the replies they read; the judge pool
showing a judge the images its question names."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from engine.judging import COMPLETION, Question
from rollout.judges.cache import ReplyCache
from rollout.judges.images import TaskImages
from rollout.judges.pool import JudgePool, judge_specs
from rollout.models.registry import build_driver


def _responses_reply(path: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "created_at": 0, "model": body.get("model"),
            "status": "completed", "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": "\\boxed{7}", "annotations": []}]}],
            "usage": {"input_tokens": 11, "output_tokens": 3, "total_tokens": 14,
                      "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}}


def _gemini_reply(path: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": "\\boxed{8}"}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 2, "totalTokenCount": 14},
            "modelVersion": "gemini-2.5-flash"}


class Loopback:
    """An HTTP server on 127.0.0.1 that records every POST (path, headers, JSON body) and answers
    with `answer(path, body)`: a JSON object (status 200), or (status, JSON object)."""

    def __init__(self, answer) -> None:
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                answered = answer(self.path, body)
                status, reply = answered if isinstance(answered, tuple) else (200, answered)
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Loopback:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def image(tmp_path: Path) -> Path:
    path = tmp_path / "task.png"
    Image.new("RGB", (3, 2), (200, 10, 10)).save(path)
    return path


def _complete(cfg: dict[str, Any], messages: list[dict[str, Any]]):
    async def go():
        driver = build_driver(cfg)
        try:
            return await driver.complete(messages)
        finally:
            await driver.aclose()

    return asyncio.run(go())


def _judge(provider: str, url: str, model: str, **params: Any) -> dict[str, Any]:
    return {"provider": provider, "name": model, "api_name": model, "base_url": url, "api_key_env": None,
            "params": params, "image_max_side": None, "timeout": 10, "max_retries": 0}


def test_responses_api_request_and_reply(image: Path) -> None:
    messages = [{"role": "system", "content": "S"},
                {"role": "user", "content": [{"type": "text", "text": "U"}, {"type": "image", "mime": "image/png",
                                                              "data": image.read_bytes()}]}]
    with Loopback(_responses_reply) as server:
        completion = _complete(_judge("openai_responses", server.url + "/v1", "gpt-5-mini",
                                      max_output_tokens=32768), messages)
    assert completion.content == "\\boxed{7}" and completion.model == "gpt-5-mini"
    assert completion.finish_reason == "completed"
    assert completion.usage == {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
    (request,) = server.requests
    assert request["path"] == "/v1/responses"
    body = request["body"]
    assert set(body) == {"model", "input", "max_output_tokens"}
    assert body["model"] == "gpt-5-mini" and body["max_output_tokens"] == 32768
    data_url = "data:image/png;base64," + base64.b64encode(image.read_bytes()).decode()
    assert body["input"] == [
        {"role": "system", "content": [{"type": "input_text", "text": "S"}]},
        {"role": "user", "content": [{"type": "input_text", "text": "U"},
                                     {"type": "input_image", "image_url": data_url}]}]


def test_gemini_request_and_reply(image: Path) -> None:
    messages = [{"role": "system", "content": "S"},
                {"role": "user", "content": [{"type": "text", "text": "U"}, {"type": "image", "mime": "image/png",
                                                              "data": image.read_bytes()}]}]
    with Loopback(_gemini_reply) as server:
        completion = _complete(_judge("gemini", server.url, "gemini-2.5-flash", temperature=0.7,
                                      max_output_tokens=32768), messages)
    assert completion.content == "\\boxed{8}" and completion.model == "gemini-2.5-flash"
    assert completion.finish_reason == "STOP"
    assert completion.usage == {"prompt_tokens": 12, "completion_tokens": 2, "total_tokens": 14}
    (request,) = server.requests
    assert request["path"].endswith("/models/gemini-2.5-flash:generateContent")
    assert {k.lower(): v for k, v in request["headers"].items()}["x-goog-api-key"] == "EMPTY"
    body = request["body"]
    assert body["generationConfig"] == {"temperature": 0.7, "maxOutputTokens": 32768}
    (content,) = body["contents"]
    assert content["role"] == "user"
    picture, text = content["parts"]
    inline = picture["inlineData"]  # the SDK writes the MIME type's key in either spelling the API reads
    assert set(inline) in ({"data", "mimeType"}, {"data", "mime_type"}) and set(picture) == {"inlineData"}
    assert inline["data"] == base64.b64encode(image.read_bytes()).decode()
    assert inline.get("mimeType", inline.get("mime_type")) == "image/png"
    assert text == {"text": "[system] S\n[user] U"}


def test_a_gemini_error_status_is_one_line_and_retried_only_when_transient() -> None:
    from rollout.models.errors import ModelError

    replies = iter([(503, {"error": {"code": 503, "message": "Overloaded", "status": "UNAVAILABLE"}}),
                    (400, {"error": {"code": 400, "message": "Bad image", "status": "INVALID_ARGUMENT"}})])
    with Loopback(lambda path, body: next(replies)) as server:
        cfg = {**_judge("gemini", server.url, "gemini-2.5-flash"), "max_retries": 3,
               "backoff": {"initial": 0.01, "max": 0.02}}
        with pytest.raises(ModelError, match="^model gemini-2.5-flash: HTTP 400: Bad image$"):
            _complete(cfg, [{"role": "user", "content": "U"}])
    assert len(server.requests) == 2  # the 503 retried once, the 400 not


def test_the_pool_shows_a_judge_the_images_its_question_names(tmp_path: Path, image: Path, caplog) -> None:
    missing = tmp_path / "gone.jpg"
    payload = {"question": f"Describe it. [with images]\n- img1: file={image}\n- img2: file={missing}",
               "prediction": {"steps": [{"calls": [{"arguments": {"path": f"file={image}"}}]}]}}
    other = tmp_path / "input.png"
    Image.new("RGB", (1, 1)).save(other)
    with Loopback(_responses_reply) as server:
        specs = judge_specs({"g": _judge("openai_responses", server.url + "/v1", "gpt-5-mini"),
                             "t": {**_judge("openai_responses", server.url + "/v1", "text-only"), "images": False}})

        async def go() -> list[str | None]:
            async with JudgePool(specs, ReplyCache(None)) as pool:
                question = Question(COMPLETION, payload, (str(other),))
                return [await pool.ask(spec, question, 1, images=TaskImages((tmp_path,))) for spec in specs]

        with caplog.at_level(logging.WARNING, logger="judge"):
            assert asyncio.run(go()) == ["\\boxed{7}", "\\boxed{7}"]
    shown, text_only = (r["body"]["input"][-1]["content"] for r in server.requests)
    images = [part["image_url"] for part in shown if part["type"] == "input_image"]
    assert images == ["data:image/png;base64," + base64.b64encode(p.read_bytes()).decode() for p in (image, other)]
    assert [part["type"] for part in text_only] == ["input_text"]
    assert [r.getMessage() for r in caplog.records] == [f"image {missing} not shown to the judges: not found"]


def test_the_published_pool_calls_each_judge_with_its_settings() -> None:
    from rollout_helpers import compose_judge

    cfg = compose_judge("judges=published")
    pool = cfg.judges.pool
    assert pool["gpt5_mini"].provider == "openai_responses"
    assert pool["gpt5_mini"].params == {"max_output_tokens": 32768}
    assert pool["gemini25_flash"].provider == "gemini"
    for name in ("gemini25_flash", "grok4_fast"):
        assert pool[name].params["temperature"] == 0.7
    assert pool["gemini25_flash"].params["max_output_tokens"] == 32768
    assert pool["grok4_fast"].params["max_tokens"] == 32768
    assert pool["deepseek_chat"].params == {} and pool["deepseek_chat"].images is False
    assert cfg.judges.classifier is not None and cfg.judges.classifier.api_name == "gemini-2.5-flash-lite"
    assert [s.identity["provider"] for s in judge_specs(pool)] == ["openai_responses", "gemini", "openai", "openai"]
