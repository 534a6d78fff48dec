"""Files a prediction names reach a judge only by the one path rule: the judge app run with the published
pool (plus an Anthropic judge) against one loopback server speaking chat completions, the Responses API,
Gemini and Anthropic messages, every request body logged whole. A fake home holds a canary key and a
canary text named .png; the prediction names them (``file=/abs/path`` in a tool result and in the final
reply), and a link inside the task's workspace points at the key: none of their bytes, raw or base64,
reaches any request; the real image in the task's workspace does, and the closing lines name the
files not shown."""

from __future__ import annotations

import base64
import io
import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from rollout_helpers import compose_judge, write_json

from engine.contract import safe_name
from engine.contract.settings import ModelConfig
from rollout.judges.run import run

REPLY = "\\boxed{1}"  # a score in both rubrics' ranges and a call class


def _reply(path: str, body: dict[str, Any]) -> dict[str, Any]:
    """The reply of each API in its own shape."""
    if path.endswith("/chat/completions"):
        return {"id": "c1", "object": "chat.completion", "created": 0, "model": body.get("model"),
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": REPLY}}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}
    if path.endswith("/messages"):
        return {"id": "m1", "type": "message", "role": "assistant", "model": body.get("model"),
                "content": [{"type": "text", "text": REPLY}], "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": 5, "output_tokens": 2}}
    if path.endswith("/responses"):
        return {"id": "r1", "object": "response", "created_at": 0, "model": body.get("model"), "status": "completed",
                "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
                "output": [{"type": "message", "id": "o1", "role": "assistant", "status": "completed",
                            "content": [{"type": "output_text", "text": REPLY, "annotations": []}]}],
                "usage": {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7,
                          "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens_details": {"reasoning_tokens": 0}}}
    assert path.endswith(":generateContent"), path
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": REPLY}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 2, "totalTokenCount": 7},
            "modelVersion": "gemini"}


class Recorder:
    """A loopback HTTP server answering every API above and keeping each request's path and raw body."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, bytes]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                outer.requests.append((self.path, raw))
                data = json.dumps(_reply(self.path, json.loads(raw))).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def recorder():
    server = Recorder()
    yield server
    server.close()


def encodings(secret: bytes) -> list[bytes]:
    """What of `secret` shows in a body however it was sent: raw, and the run of base64 characters (both
    alphabets) its bytes alone decide, at each of the three offsets a base64 stream can place it."""
    out = [secret]
    for shift in range(3):
        text = base64.b64encode(b"\0" * shift + secret + b"\0\0")[4:-8]
        out += [text, text.replace(b"+", b"-").replace(b"/", b"_")]
    return out


def leaked(requests: list[tuple[str, bytes]], secret: bytes) -> list[str]:
    """The paths of the requests whose body holds `secret` in any of its encodings."""
    return [path for path, body in requests if any(e in body for e in encodings(secret))]


def png(colour: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (5, 4), colour).save(out, "PNG")
    return out.getvalue()


@pytest.fixture
def named_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recorder: Recorder) -> dict[str, Any]:
    """A judge config over the published pool plus an Anthropic judge, all at the recorder; a fake home
    with a canary key and a canary text named .png; one task whose prediction names them, a link in its
    workspace to the key, a real image in its workspace's media folder and one from another machine."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    for env in ("OPENAI_API_KEY", "GEMINI_API_KEY", "XAI_API_KEY", "DEEPSEEK_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.setenv(env, "sk-test")
    key = f"-----BEGIN OPENSSH PRIVATE KEY-----\ncanary-key-{uuid.uuid4().hex}\n-----END OPENSSH PRIVATE KEY-----\n"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(key)
    fake = home / "notes.png"
    fake.write_text(f"canary-text-{uuid.uuid4().hex} is not an image\n")
    results, tid = tmp_path / "results", "task/1"
    media = results / "rollout" / "m" / "workspace" / safe_name(tid) / "media"
    media.mkdir(parents=True)
    shot = png((10, 200, 30))
    (media / "shot.png").write_bytes(shot)
    (media / "key.png").symlink_to(home / ".ssh" / "id_rsa")
    (media / "fake.png").write_bytes(fake.read_bytes())
    named = [home / ".ssh" / "id_rsa", fake, media / "key.png", media / "fake.png", media / "shot.png",
             Path("/data/other-machine/run7/shot.png"), Path("/etc/passwd")]
    listed = " ".join(f"file={p}" for p in named)
    reference = {"id": tid, "question": "Crop the sign.", "steps": [{"step": 1, "calls": [
        {"name": "images/crop", "arguments": {"path": "media/in.png"}}]}]}
    prediction = {**reference, "steps": [{"step": 1, "calls": [
        {"name": "images/crop", "arguments": {"path": "media/in.png"}, "result": f"saved: {listed}"}]}],
        "final_reply": f"Done, see file={home / '.ssh' / 'id_rsa'} and file={media / 'shot.png'}."}
    gt = write_json(tmp_path / "data" / "gt.json", [reference])
    write_json(results / "m_test_mcp_fuzzy.json", [prediction])
    cfg = compose_judge("model=m", f"results_dir={results}", f"data.gt={gt}", "judges=published",
                        "evaluators.call_outcomes.catalogue=null", "evaluators.call_outcomes.mode=published",
                        f"cache_dir={tmp_path / 'cache'}", f"run_dir={tmp_path / 'run'}", "attempts=1")
    judges = cfg.judges
    assert judges.classifier is not None
    for spec in [*judges.pool.values(), judges.classifier]:
        spec.base_url = recorder.url + ("" if spec.provider == "gemini" else "/v1")
        spec.max_retries, spec.timeout = 0, 20
    judges.pool["claude"] = ModelConfig(provider="anthropic", api_name="claude-test", base_url=recorder.url,
                                        api_key_env="ANTHROPIC_API_KEY", params={"max_tokens": 64},
                                        image_max_side=None, timeout=20, max_retries=0)
    return {"cfg": cfg, "key": key.encode(), "fake": fake.read_bytes(), "shot": shot, "named": named, "tid": tid}


def test_only_real_images_of_the_tasks_own_folders_reach_any_judge(named_files, recorder, capsys) -> None:
    assert run(named_files["cfg"]) == 0
    out = capsys.readouterr().out
    paths = {path.rsplit("/", 1)[-1].split(":")[-1] for path, _ in recorder.requests}
    assert paths == {"completions", "responses", "messages", "generateContent"}  # every provider was asked
    assert leaked(recorder.requests, named_files["key"].strip()) == []
    assert leaked(recorder.requests, named_files["fake"].strip()) == []
    passwd = Path("/etc/passwd").read_bytes().strip()
    if passwd:
        assert leaked(recorder.requests, passwd) == []
    shown = {path.rsplit("/", 1)[-1].split(":")[-1] for path in leaked(recorder.requests, named_files["shot"])}
    assert shown == {"completions", "responses", "messages", "generateContent"}
    home, media = named_files["named"][0], named_files["named"][4].parent
    lines = [line for line in out.splitlines() if "not shown" in line]
    assert len(lines) == 2, out  # one line per evaluator: m3_judges, call_outcomes
    for line in lines:
        assert "6 file reference(s) of 1 task(s) not shown to the judges" in line, line
        for path in (home, media / "key.png"):
            assert str(path) in line, line
    assert "not an image" in out and "a symbolic link" in out and "outside the task's folders" in out


def test_an_image_changed_under_the_same_path_is_judged_and_asked_again(named_files, recorder, capsys) -> None:
    """The bytes of the files a judge is shown are part of the verdict's input key and of the reply's cache
    key: a rerun with the same image sends nothing; a rerun after the image changed re-judges the task and asks
    the judges about the new bytes, never answering them from the replies about the old."""
    cfg, media = named_files["cfg"], named_files["named"][4].parent
    assert run(cfg) == 0
    first = len(recorder.requests)
    assert run(cfg) == 0
    assert len(recorder.requests) == first  # nothing changed: every verdict resumed
    capsys.readouterr()
    new = png((250, 10, 10))
    (media / "shot.png").write_bytes(new)
    assert run(cfg) == 0
    out = capsys.readouterr().out
    assert "m3_judges: 1 of 1 task(s) judged (1 now" in out, out
    again = recorder.requests[first:]
    assert again and leaked(again, new), "the judges were not shown the changed image"
    assert not leaked(again, named_files["shot"])
