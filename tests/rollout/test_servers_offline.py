"""The published suite's recipe offline: placeholder keys that no redaction takes for secrets and placeholder
task images (``servers.py placeholders``), a build the registry cannot serve reported once and then skipped
(exit status 0 with its reason) unless forced, and ``check`` warning about a system package that a tool of a
started server needs."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image
from rollout_helpers import FLAKY_SERVER, HERE, ROOT, write_json

from engine.contract import read_tasks
from rollout.mcp.config import read_servers_config
from rollout.mcp.host import MCPHost
from rollout.mcp.placeholders import IMAGE_SIZE, key_names, placeholder_value


def _servers(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "servers.py"), *args], capture_output=True,
                          text=True, timeout=600, env={**os.environ, **(env or {})}, check=False)


def _rows(out: str) -> dict[str, str]:
    return {line.split()[0]: line for line in out.splitlines() if line[:1].strip()}


SUITE = {"servers": {
    "maps": {"command": "python", "args": ["maps.py"], "inherit": ["GOOGLE_MAPS_API_KEY", "CACHE_TTL", "LC_*"]},
    "films": {"command": "node", "args": ["--token", "${TMDB_ACCESS_TOKEN}"], "env": {"AUTH": "${AUTH_TOKEN:-x}",
                                                                                     "PORT": "${PORT}"}},
    "off": {"command": "node", "disabled": True, "inherit": ["OPENAI_API_KEY"]}}}


def test_placeholder_keys_are_written_for_the_secrets_the_servers_read_and_never_redacted(tmp_path, monkeypatch):
    config = write_json(tmp_path / "mcp_servers.json", SUITE)
    assert key_names(config) == ["AUTH_TOKEN", "GOOGLE_MAPS_API_KEY", "TMDB_ACCESS_TOKEN"]  # no PORT, no disabled
    keys = tmp_path / "keys.sh"
    done = _servers("placeholders", "--config", str(config), "--keys", str(keys))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 placeholder key(s) (AUTH_TOKEN GOOGLE_MAPS_API_KEY TMDB_ACCESS_TOKEN)" in done.stdout
    read = subprocess.run(["bash", "-c", f". {keys} && echo $GOOGLE_MAPS_API_KEY"], capture_output=True, text=True,
                          check=True)
    assert read.stdout == "m3bench-placeholder-google-maps-api-key\n" == placeholder_value("GOOGLE_MAPS_API_KEY") + "\n"
    again = _servers("placeholders", "--config", str(config), "--keys", str(keys))
    assert again.returncode == 2 and "exists already (use --force" in again.stderr

    # the servers get them; a result naming one keeps it, a real key is redacted, and no word of a result is
    whole = write_json(tmp_path / "whole.json", {"environment": "whole", "servers": {
        "flaky": {"command": "python", "python": "host", "args": [str(FLAKY_SERVER)], "env": {}}}})
    monkeypatch.setenv("NASA_API_KEY", "placeholder")
    assert "placeholder" in read_servers_config(whole)[0].secrets  # an obvious value would redact the word
    monkeypatch.setenv("NASA_API_KEY", "sk-real-0123456789")
    monkeypatch.setenv("GOOGLE_MAPS_API_KEY", placeholder_value("GOOGLE_MAPS_API_KEY"))
    spec = read_servers_config(whole)[0]
    assert placeholder_value("GOOGLE_MAPS_API_KEY") not in spec.secrets and "sk-real-0123456789" in spec.secrets

    async def echo(text: str) -> str:
        async with MCPHost([spec], start_timeout=60) as host:
            return (await host.call("flaky/echo", {"text": text})).text

    said = asyncio.run(echo(f"maps={placeholder_value('GOOGLE_MAPS_API_KEY')}; nasa=sk-real-0123456789; "
                            "<input placeholder='Search'>"))
    assert said == "maps=m3bench-placeholder-google-maps-api-key; nasa=[redacted]; <input placeholder='Search'>"


def test_placeholder_images_stand_in_for_the_missing_ones_only(tmp_path):
    tasks = write_json(tmp_path / "data" / "tasks_fuzzy.json", [
        {"id": "00010000", "image": "images/00010000.png", "question": "q"},
        {"id": "00010001", "image": "./images/00010001.png", "question": "q"},
        {"id": "00010002", "image": "images/00010001.png", "question": "q"},
        {"id": "multi", "question": "q", "turns": [{"prompt": "a", "images": ["turns/m1.png"]}, {"prompt": "b"}]}])
    images = tmp_path / "placeholders"
    real = images / "images" / "00010001.png"
    real.parent.mkdir(parents=True)
    Image.new("RGB", (10, 10), "red").save(real)
    before = real.read_bytes()
    done = _servers("placeholders", "--tasks", str(tasks), "--images", str(images))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"wrote 2 placeholder image(s) under {images} (1 already there)" in done.stdout
    assert real.read_bytes() == before
    with Image.open(images / "images" / "00010000.png") as image:
        assert image.size == IMAGE_SIZE and image.format == "PNG"
    assert (images / "turns" / "m1.png").is_file()
    # the rollout's own reader finds every image there
    assert [t.id for t in read_tasks(tasks, images)] == ["00010000", "00010001", "00010002", "multi"]
    again = _servers("placeholders", "--tasks", str(tasks), "--images", str(images))
    assert "wrote 0 placeholder image(s)" in again.stdout and "(3 already there)" in again.stdout

    escaping = write_json(tmp_path / "escaping.json", [{"id": "x", "image": "../outside.png", "question": "q"}])
    refused = _servers("placeholders", "--tasks", str(escaping), "--images", str(images))
    assert refused.returncode == 2 and "escaping.json" in refused.stderr and "x" in refused.stderr
    assert not (tmp_path / "outside.png").exists()
    alone = _servers("placeholders", "--tasks", str(tasks))
    assert alone.returncode == 2 and "--tasks and --images go together" in alone.stderr


# a build step that prints what a package registry answered (or what pip says with no network) and fails
FAILING_BUILD = """import sys
from pathlib import Path
runs = Path("runs.txt")
runs.write_text(runs.read_text() + "x" if runs.exists() else "x")
sys.stderr.write({output!r})
sys.exit(1)
"""
NO_SUCH_VERSION = "npm error code ETARGET\nnpm error notarget No matching version found for gone-dep@^0.0.1.\n"
PIP_OFFLINE = ("WARNING: Retrying ... NewConnectionError('Failed to establish a new connection: [Errno -3] "
               "Temporary failure in name resolution')\nERROR: No matching distribution found for requests\n")


def _failing(tmp_path: Path, name: str, output: str) -> dict:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "build.py").write_text(FAILING_BUILD.format(output=output))
    return {"command": "node", "args": ["index.js"], "install": {"build": [[sys.executable, "build.py"]],
                                                                 "dir": name}}


def test_a_build_the_registry_cannot_serve_is_reported_once_then_skipped(tmp_path):
    config = write_json(tmp_path / "servers.json", {"servers": {
        "gone": _failing(tmp_path, "gone", NO_SUCH_VERSION),
        "offline": _failing(tmp_path, "offline", PIP_OFFLINE),
        "fine": {"command": sys.executable, "args": [str(HERE / "counter_server.py")],
                 "install": {"build": [[sys.executable, "-c", "pass"]], "dir": "fine"}}}})
    (tmp_path / "fine").mkdir()
    envs = {"M3BENCH_SERVER_ENVS": str(tmp_path / "envs")}
    first = _servers("install", "--config", str(config), "--only", "gone", "fine", env=envs)
    rows = _rows(first.stdout)
    assert first.returncode == 1 and "1 installed, 1 failed (gone)" in first.stdout, first.stdout + first.stderr
    assert "the registry lacks gone-dep@^0.0.1, so later installs and checks skip this server (exit status 0); " \
        "python scripts/servers.py install --force --only gone tries again" in rows["gone"]

    again = _servers("install", "--config", str(config), "--only", "gone", "fine", env=envs)
    rows = _rows(again.stdout)
    assert again.returncode == 0, again.stdout + again.stderr
    assert rows["gone"].split()[1] == "skipped" and "the registry has no gone-dep@^0.0.1 (404)" in rows["gone"]
    assert "1 up to date, 1 skipped (gone: the registry lacks gone-dep@^0.0.1)" in again.stdout
    assert (tmp_path / "gone" / "runs.txt").read_text() == "x"  # not built again

    check = _servers("check", "--config", str(config), "--only", "gone", "fine", env=envs)
    rows = _rows(check.stdout)
    assert check.returncode == 0, check.stdout + check.stderr
    assert rows["gone"].split()[1] == "skipped" and "its build cannot succeed as written" in rows["gone"]
    assert "1 of 2 server(s) started" in check.stdout and "1 skipped (gone: " in check.stdout

    forced = _servers("install", "--config", str(config), "--only", "gone", "--force", env=envs)
    assert forced.returncode == 1 and (tmp_path / "gone" / "runs.txt").read_text() == "xx"

    # no network is no missing package: the build is tried every time and fails the install and the check
    for _ in range(2):
        offline = _servers("install", "--config", str(config), "--only", "offline", env=envs)
        assert offline.returncode == 1 and "1 failed (offline)" in offline.stdout
        assert "later installs" not in offline.stdout and "the registry has no" not in offline.stdout
    assert (tmp_path / "offline" / "runs.txt").read_text() == "xx"
    assert _servers("check", "--config", str(config), "--only", "offline", env=envs).returncode == 1


def test_a_build_failure_kept_by_an_older_install_is_read_as_its_reason(tmp_path):
    config = write_json(tmp_path / "servers.json", {"servers": {"old": _failing(tmp_path, "old", NO_SUCH_VERSION)}})
    spec = read_servers_config(config, tmp_path / "envs")[0]
    Path(spec.env_folder).parent.mkdir(parents=True)
    Path(f"{spec.env_folder}.failed").write_text("npm install exited with 1: the registry has no x@1 (404)\n")
    spec = read_servers_config(config, tmp_path / "envs")[0]
    assert spec.problem == "its build failed: npm install exited with 1: the registry has no x@1 (404)"
    assert spec.unbuildable is None  # an older record does not say what the registry lacks: built again


def test_check_warns_when_a_started_server_lacks_a_package_a_tool_needs(tmp_path):
    # a server whose environment holds pdf2image starts without poppler-utils, and its PDF tool then fails
    config = write_json(tmp_path / "servers.json", {"servers": {"ocr": {
        "command": sys.executable, "args": [str(HERE / "counter_server.py")],
        "install": {"requirements": ["mcp-ocr==0.2.0"]}}}})
    env = Path(read_servers_config(config, tmp_path / "envs")[0].env_folder)
    (env / "venv" / "lib" / "python3.11" / "site-packages" / "pdf2image-1.17.0.dist-info").mkdir(parents=True)
    (env / ".installed.json").write_text("{}")
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "tesseract").write_text("#!/bin/sh\n")
    (bare / "tesseract").chmod(0o755)
    envs = {"M3BENCH_SERVER_ENVS": str(tmp_path / "envs"), "PATH": str(bare)}
    check = _servers("check", "--config", str(config), env=envs)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "warning: started without poppler-utils (missing here), which its perform_pdf_ocr tool (pdf2image " \
        "runs pdfinfo and pdftoppm) needs" in _rows(check.stdout)["ocr"]
    assert "warning: ocr started without poppler-utils" in check.stdout
    deps = _servers("system-deps", "--config", str(config), env=envs)
    assert deps.stdout == "tesseract-ocr poppler-utils\n"
    assert "missing here: poppler-utils; as root: apt-get update && apt-get install -y poppler-utils" in deps.stderr
    (bare / "pdftoppm").write_text("#!/bin/sh\n")
    (bare / "pdftoppm").chmod(0o755)
    quiet = _servers("check", "--config", str(config), env=envs)
    assert quiet.returncode == 0 and "warning" not in quiet.stdout, quiet.stdout


@pytest.mark.parametrize("args", [["placeholders"], ["placeholders", "--images", "x"]])
def test_placeholders_needs_something_to_write(args):
    done = _servers(*args)
    assert done.returncode == 2 and done.stderr.startswith("error: ") and len(done.stderr.splitlines()) == 1

