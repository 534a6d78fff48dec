"""A suite in the published shapes, completed, installed and checked with scripts/servers.py: a Node server
whose entry point has its own package.json with a lockfile pinning a version the registry lacks (a package
registry on loopback), one whose dependency the registry lacks altogether, an ``uvx`` entry with a vendored
folder, a single-file server importing a few packages of a long requirements file, ``python -m`` of a
distribution the requirements file names, and a server confining its saves to a folder of its own."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from rollout_helpers import ROOT, write_json

from rollout.mcp.config import read_servers_config

LONG_REQUIREMENTS = """# everything the benchmark's scripts use
fastapi
pydantic
numpy
torch
transformers
sentence-transformers
mcp[fastmcp]
httpx
openai
requests
opencv-python
ultralytics
pyzbar
python-pptx
tiny-ocr==0.1.0  # OCR
"""

NODE_SERVER = """const tiny = require('tiny');
const readline = require('readline');
const send = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
readline.createInterface({input: process.stdin}).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  if (m.method === 'initialize') send({jsonrpc: '2.0', id: m.id, result: {protocolVersion: m.params.protocolVersion,
    capabilities: {tools: {}}, serverInfo: {name: 'health', version: '1.0.0'}}});
  else if (m.method === 'tools/list') send({jsonrpc: '2.0', id: m.id, result: {tools: [
    {name: tiny.tool, description: 'from the tiny package', inputSchema: {type: 'object'}}]}});
  else if (m.method === 'ping') send({jsonrpc: '2.0', id: m.id, result: {}});
  else send({jsonrpc: '2.0', id: m.id, error: {code: -32601, message: 'unknown method'}});
});
"""


def _tarball() -> bytes:
    """The npm package tiny 1.0.0: package.json and index.js under package/."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in (("package.json", '{"name": "tiny", "version": "1.0.0", "main": "index.js"}'),
                           ("index.js", "module.exports = {tool: 'tiny_tool'};\n")):
            data = text.encode()
            info = tarfile.TarInfo(f"package/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.fixture
def registry():
    """An npm registry on loopback holding tiny 1.0.0 only: every other package or version is a 404."""
    tarball = _tarball()
    holder: dict[str, str] = {}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            url = holder["url"]
            bodies = {"/tiny": json.dumps({"name": "tiny", "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": {
                "name": "tiny", "version": "1.0.0", "main": "index.js",
                "dist": {"tarball": f"{url}/tiny/-/tiny-1.0.0.tgz", "shasum": hashlib.sha1(tarball).hexdigest(),
                         "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tarball).digest()).decode()}}}}
                                        ).encode(),
                      "/tiny/-/tiny-1.0.0.tgz": tarball}
            body = bodies.get(self.path)
            self.send_response(200 if body else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    holder["url"] = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield holder["url"]
    server.shutdown()


def _suite(root: Path, registry_url: str) -> Path:
    """The published shapes under root/servers, the published config and a long requirements file."""
    lock = {"name": "health-server", "lockfileVersion": 3, "requires": True, "packages": {
        "": {"name": "health-server", "dependencies": {"tiny": "^1.0.0"}},
        "node_modules/tiny": {"version": "1.0.3", "resolved": f"{registry_url}/tiny/-/tiny-1.0.3.tgz",
                              "integrity": "sha512-" + base64.b64encode(bytes(64)).decode()}}}
    files = {
        "servers/health/package.json": json.dumps({"name": "health", "version": "2.0.0", "scripts": {"test": "x"}}),
        "servers/health/server/package.json": json.dumps({"name": "health-server", "main": "index.js",
                                                          "dependencies": {"tiny": "^1.0.0"}}),
        "servers/health/server/package-lock.json": json.dumps(lock),
        "servers/health/server/index.js": NODE_SERVER,
        "servers/ghost/package.json": json.dumps({"name": "ghost", "dependencies": {"ghost-dep": "^0.0.1"}}),
        "servers/ghost/index.js": NODE_SERVER,
        "servers/vend/pyproject.toml": '[project]\nname = "vend-mcp"\nversion = "0.3.1"\ndependencies = ["mcp"]\n'
                                       '[project.scripts]\nvend_mcp = "vend.server:main"\n[build-system]\n'
                                       'requires = ["setuptools"]\n',
        "servers/vend/uv.lock": '[[package]]\nname = "mcp"\nversion = "1.6.0"\n\n[[package]]\nname = "pydantic"\n'
                                'version = "2.11.3"\n\n[[package]]\nname = "vend-mcp"\nversion = "0.3.1"\n',
        "servers/vend/src/vend/server.py": 'import os\nKEY = os.getenv("VEND_API_KEY")\n',
        "servers/solo_mcp.py": "import os\nimport cv2\nfrom pyzbar.pyzbar import decode\n"
                               "from mcp.server.fastmcp import FastMCP\nKEY = os.getenv('SOLO_KEY')\n",
        "servers/lost_mcp.py": "import no_such_module_anywhere\n",
        "servers/deck/pyproject.toml": '[project]\nname = "deck"\nversion = "1.0"\n',
        "servers/deck/deck_server.py": "from tools import save\n",
        "servers/deck/tools/save.py": "import os\nOUT = os.path.abspath(os.environ.get('DECK_OUTPUT_DIR', './media'))\n"
                                      "def check(p):\n    raise ValueError(f'Saving outside enforced output "
                                      "directory is not allowed: {p}')\n",
        "requirements_pip.txt": LONG_REQUIREMENTS,
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return write_json(root / "mcp_servers.json", {"servers": {
        "health": {"command": "node", "args": ["servers/health/server/index.js"], "env": {}},
        "ghost": {"command": "node", "args": ["servers/ghost/index.js"], "env": {}},
        "vend": {"command": "uvx", "args": ["vend_mcp"], "env": {}},
        "solo": {"command": "python", "args": ["servers/solo_mcp.py"], "env": {}},
        "ocr": {"command": "python", "args": ["-m", "tiny_ocr"], "env": {}},
        "deck": {"command": "python", "args": ["servers/deck/deck_server.py"],
                 "env": {"OUTPUT_DIR": "./media"}},
        "lost": {"command": sys.executable, "args": ["servers/lost_mcp.py"], "env": {}},
    }})


def _servers(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "servers.py"), *args], capture_output=True,
                          text=True, timeout=600, env={**os.environ, **(env or {})})


def test_init_completes_the_published_shapes(tmp_path, registry):
    config = _suite(tmp_path, registry)
    done = _servers("init", str(tmp_path / "servers"), "--complete", str(config), "--requirements",
                    str(tmp_path / "requirements_pip.txt"))
    out = done.stdout
    assert "could not derive" in out and "  lost " in out, out + done.stderr  # a file with an unknown import
    servers = json.loads((tmp_path / "mcp_servers.derived.json").read_text())["servers"]
    assert servers["health"]["install"] == {"build": [["npm", "install"]], "dir": "servers/health/server"}
    assert servers["ghost"]["install"] == {"build": [["npm", "install"]], "dir": "servers/ghost"}
    assert servers["vend"]["install"] == {"requirements": ["./servers/vend", "mcp==1.6.0", "pydantic==2.11.3"]}
    assert servers["vend"]["inherit"] == ["VEND_API_KEY"] and servers["vend"]["command"] == "uvx"
    # what the file imports, as the requirements file writes it; nothing else of it (no torch)
    assert servers["solo"]["install"] == {"requirements": ["opencv-python", "mcp[fastmcp]", "pyzbar", "mcp<2"]}
    assert servers["ocr"]["install"] == {"requirements": ["tiny-ocr==0.1.0"]}
    assert servers["deck"]["paths"] == {"mode": "workspace", "keep": ["./media"]}
    assert servers["deck"]["env"] == {"OUTPUT_DIR": "./media", "DECK_OUTPUT_DIR": "."}  # saves at ./media/x
    rows = {line.split()[0]: line for line in out.splitlines() if line[:1].strip()}
    assert "package.json, the one beside its entry point" in rows["health"]
    assert "vend-mcp 0.3.1) instead of the newest release uvx fetches; mcp==1.6.0, pydantic==2.11.3 from its " \
           "uv.lock" in rows["vend"]
    assert "system packages: libzbar0 libgl1 libglib2.0-0" in rows["solo"]
    assert "save.py saves only under $DECK_OUTPUT_DIR, default ./media" in rows["deck"]
    deps = _servers("system-deps", "--config", str(tmp_path / "mcp_servers.derived.json"))
    assert deps.returncode == 0 and deps.stdout == "libzbar0 libgl1 libglib2.0-0\n"
    assert deps.stderr.startswith("solo ")


@pytest.mark.skipif(shutil.which("npm") is None or shutil.which("node") is None, reason="needs npm and node")
def test_install_and_check_of_the_node_shapes(tmp_path, registry):
    config = _suite(tmp_path, registry)
    npm = {"npm_config_registry": f"{registry}/", "npm_config_cache": str(tmp_path / "npm-cache"),
           "npm_config_audit": "false", "npm_config_fund": "false", "npm_config_update_notifier": "false",
           "M3BENCH_SERVER_ENVS": str(tmp_path / "envs")}
    raw = _servers("install", "--config", str(config), "--only", "health", env=npm)
    assert raw.returncode == 0 and "1 nothing to install" in raw.stdout and "init SERVERS_DIR --complete" in raw.stdout
    lost = _servers("check", "--config", str(config), "--only", "lost", env=npm)
    assert "No module named 'no_such_module_anywhere'" in lost.stdout and "SOLO_KEY" not in lost.stdout
    assert "init SERVERS_DIR --complete" in lost.stdout

    _servers("init", str(tmp_path / "servers"), "--complete", str(config))
    derived = str(tmp_path / "mcp_servers.derived.json")
    done = _servers("install", "--config", derived, "--only", "health", "ghost", "-j", "2", env=npm)
    assert done.returncode == 1 and "1 installed, 1 failed (ghost)" in done.stdout, done.stdout + done.stderr
    log = (tmp_path / "envs" / "logs" / "health.log").read_text()
    assert "package-lock.json pins tiny@1.0.3, which the registry lacks; retrying with npm install " \
           "--no-package-lock" in log
    ghost = next(line for line in done.stdout.splitlines() if line.startswith("ghost"))
    assert "npm install exited with 1: the registry has no ghost-dep@^0.0.1 (404)" in ghost

    # a dependency the registry does not have: reported once, then skipped with its reason (exit status 0)
    check = _servers("check", "--config", derived, "--only", "health", "ghost", env=npm)
    rows = {line.split()[0]: line for line in check.stdout.splitlines()}
    assert check.returncode == 0 and rows["health"].split()[1:3] == ["started", "1"], check.stdout
    assert rows["ghost"].split()[1] == "skipped" and "its build cannot succeed as written (npm install exited " \
        "with 1: the registry has no ghost-dep@^0.0.1 (404))" in rows["ghost"]
    again = _servers("install", "--config", derived, "--only", "health", "ghost", env=npm)
    assert again.returncode == 0 and "1 up to date, 1 skipped (ghost: the registry lacks ghost-dep@^0.0.1)" in \
        again.stdout, again.stdout + again.stderr
    specs = {s.name: s for s in read_servers_config(Path(derived), tmp_path / "envs")}
    assert specs["health"].install.build_dir == str(tmp_path / "servers" / "health" / "server")
