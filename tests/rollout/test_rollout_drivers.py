"""Model drivers against the scripted HTTP server: images as data URLs, usage, the Anthropic SDK, the registry."""

from __future__ import annotations

import asyncio
import re
import urllib.error
import urllib.request

import pytest
from rollout_helpers import make_image, write_json

from engine.contract import InputError
from engine.judging import COMPLETION
from rollout.judges.scripted import JudgePolicy
from rollout.models.base import Completion, ModelDriver, usage_of
from rollout.models.errors import ModelError
from rollout.models.loopback import Reply, policies
from rollout.models.registry import build_driver, providers, register_provider

MESSAGES = [{"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "What is in the picture?"},
                                         {"type": "image", "path": "media/p.png"}]}]


def test_openai_driver_sends_images_and_reads_usage(tmp_path, chat_server):
    make_image(tmp_path / "media" / "p.png", (3000, 1000))
    server = chat_server(lambda body: "A red rectangle.")
    driver = build_driver({"provider": "openai", "name": "m", "base_url": server.base_url, "api_key_env": None,
                           "image_max_side": 600, "json_mode": True, "params": {"temperature": 0}})

    async def go():
        try:
            return await driver.complete(MESSAGES, workspace=tmp_path, json_mode=True)
        finally:
            await driver.aclose()

    completion = asyncio.run(go())
    assert completion.content == "A red rectangle." and completion.usage["total_tokens"] > 0
    body = server.requests[0]["body"]
    assert body["model"] == "m" and body["temperature"] == 0 and body["response_format"] == {"type": "json_object"}
    url = body["messages"][1]["content"][1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    import base64
    import io

    from PIL import Image
    assert Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).size == (600, 200)


def test_openai_driver_gives_up_after_retries(tmp_path, chat_server):
    server = chat_server(lambda body: Reply(status=503, error="overloaded"))
    driver = build_driver({"provider": "openai", "name": "m", "base_url": server.base_url, "max_retries": 2,
                           "backoff": {"initial": 0.01, "max": 0.02}})
    with pytest.raises(ModelError, match=r"HTTP 503: overloaded \(gave up after 3 attempts\)"):
        asyncio.run(driver.complete([{"role": "user", "content": "hi"}]))
    assert len(server.requests) == 3


def test_unknown_provider_and_non_rollout_model_are_config_errors():
    with pytest.raises(InputError, match="field 'model.provider'"):
        build_driver({"provider": "carrier-pigeon", "name": "x"})
    with pytest.raises(InputError, match="not a rollout model config"):
        build_driver({"name": "gpt5", "predictions": "results/gpt5.json"})
    with pytest.raises(InputError, match=r"field 'model.max_retries': must be an integer >= 0, got -1"):
        build_driver({"provider": "openai", "name": "m", "max_retries": -1})


def test_anthropic_driver(tmp_path, chat_server, monkeypatch):
    pytest.importorskip("anthropic")
    make_image(tmp_path / "media" / "p.png")
    monkeypatch.setenv("M3_TEST_ANTHROPIC_KEY", "ak-test-123")
    server = chat_server(lambda body: "Two shapes.")
    driver = build_driver({"provider": "anthropic", "name": "claude-test", "api_key_env": "M3_TEST_ANTHROPIC_KEY",
                           "base_url": server.base_url.removesuffix("/v1"), "params": {"max_tokens": 100}})
    completion = asyncio.run(driver.complete(MESSAGES, workspace=tmp_path))
    assert completion.content == "Two shapes." and completion.usage["prompt_tokens"] > 0
    request = server.requests[0]
    assert request["path"] == "/v1/messages"
    assert "ak-test-123" in request["x_api_key"] + request["authorization"]
    body = request["body"]
    assert body["system"] == "Be brief." and body["max_tokens"] == 100
    assert body["messages"][0]["content"][1]["source"]["media_type"] == "image/png"


@pytest.mark.parametrize("provider", ["openai", "anthropic", "openai_responses", "gemini"])
def test_a_workspace_image_is_read_beneath_the_workspace_and_only_when_it_is_one(tmp_path, chat_server, provider):
    """The agent's own images (workspace paths) follow the one path rule: a link in the workspace to a key,
    a text named .png and a path out of the workspace are never read into a request; each fails the
    request in one line naming the image, and nothing reaches the server."""
    canary = tmp_path / "home" / ".ssh" / "id_rsa"
    canary.parent.mkdir(parents=True)
    canary.write_text("canary-private-key")
    ws = tmp_path / "ws"
    make_image(ws / "media" / "p.png")
    (ws / "media" / "key.png").symlink_to(canary)
    (ws / "media" / "text.png").write_text("canary-text")
    (ws / "out").symlink_to(canary.parent)
    server = chat_server(lambda body: "ok")
    driver = build_driver({"provider": provider, "name": "m", "base_url": server.base_url, "api_key_env": None,
                           "max_retries": 0, "image_max_side": None})  # files as they are: nothing decodes them
    cases = {"media/key.png": "a symbolic link", "media/text.png": "not an image", "out/id_rsa": "on its way",
             "../home/.ssh/id_rsa": "leaves the folder", str(canary): "leaves the folder"}

    async def go():
        try:
            for path, why in cases.items():
                messages = [{"role": "user", "content": [{"type": "text", "text": "see"},
                                                         {"type": "image", "path": path}]}]
                with pytest.raises(ModelError, match=f"^model m: image {re.escape(path)} not sent: .*{why}"):
                    await driver.complete(messages, workspace=ws)
        finally:
            await driver.aclose()

    asyncio.run(go())
    assert server.requests == []


def test_scripted_provider_owns_its_loopback_server(tmp_path):
    script = write_json(tmp_path / "script.json", [{"id": "a", "question": "How much is 2+2?", "steps": [],
                                                    "final_reply": "4."}])
    driver = build_driver({"provider": "scripted", "name": "scripted", "script": str(script)})
    base_url = driver.settings.base_url
    assert base_url.startswith("http://127.0.0.1:")

    async def go():
        try:
            return await driver.complete([{"role": "user", "content": [{"type": "text", "text": "How much is 2+2?"}]}])
        finally:
            await driver.aclose()

    assert asyncio.run(go()).content == "4."
    with pytest.raises(urllib.error.URLError) as refused:  # the driver stopped its server
        urllib.request.urlopen(base_url + "/chat/completions", data=b"{}", timeout=5)
    assert isinstance(refused.value.reason, ConnectionRefusedError)
    with pytest.raises(InputError, match="field 'model.script'"):
        build_driver({"provider": "scripted", "name": "scripted"})


def test_the_rubric_purpose_reaches_a_scripted_judge_and_no_api(chat_server):
    server = chat_server(JudgePolicy())
    payload = {"question": "q", "prediction": {"id": "a", "steps": [], "final_reply": "done"}}
    scripted = build_driver({"provider": "scripted", "name": "judge", "base_url": server.base_url})
    api = build_driver({"provider": "openai", "name": "judge", "base_url": server.base_url, "api_key_env": None})

    async def go():
        try:
            return [(await d.complete(COMPLETION.messages(payload))).content for d in (scripted, api)]
        finally:
            await scripted.aclose()
            await api.aclose()

    assert "judge" in policies() and "plan" in policies()
    assert asyncio.run(go()) == ["\\boxed{4.00}", "I only judge."]  # a final reply alone: 4 of 10
    sent = [r["body"]["messages"][0] for r in server.requests]
    assert sent[0]["purpose"] == "task_completion" and "purpose" not in sent[1]
    with pytest.raises(InputError, match="field 'model.policy'"):
        build_driver({"provider": "scripted", "name": "scripted", "policy": "oracle"})


class _Upper(ModelDriver):
    async def _request(self, messages, workspace, json_mode):
        return Completion(messages[-1]["content"].upper(), usage_of(1, 1), self.name)


def test_registered_provider_builds_its_driver():
    register_provider("test-upper", _Upper.from_config)
    assert "test-upper" in providers()
    driver = build_driver({"provider": "test-upper", "name": "up", "api_name": "upper-1"})
    assert isinstance(driver, _Upper) and driver.name == "upper-1"
    completion = asyncio.run(driver.complete([{"role": "user", "content": "shout"}]))
    assert completion.content == "SHOUT" and completion.model == "upper-1"
