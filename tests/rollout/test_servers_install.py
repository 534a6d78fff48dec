"""Builds of the published suite's kind: a Node package with a native module (node-gyp) built against the
local node's headers, and a failed build's reason naming its real cause and the full log."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rollout_helpers import HERE, ROOT, write_json

from rollout.mcp.config import ServerSpec
from rollout.mcp.environments import InstallSpec
from rollout.mcp.install import build_cause, install_server
from rollout.mcp.requirements import (
    native_node_build,
    node_build_packages,
    node_headers_prefix,
    server_system_packages,
)

ADDON = """#include <node_api.h>
static napi_value init(napi_env env, napi_value exports) { return exports; }
NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
"""

# npm's output for healthcare-mcp's sqlite3 (prebuild-install, then node-gyp) with no route to the internet
SQLITE3_OFFLINE = """npm error code 1
npm error path /srv/pub/servers/healthcare-mcp-public/server/node_modules/sqlite3
npm error command failed
npm error command sh -c prebuild-install -r napi || node-gyp rebuild
npm error prebuild-install warn install getaddrinfo ENOTFOUND github.com
npm error gyp info it worked if it ends with ok
npm error gyp info using node-gyp@8.4.1
npm error gyp http GET https://nodejs.org/download/release/v20.20.2/node-v20.20.2-headers.tar.gz
npm error gyp WARN install got an error, rolling back install
npm error gyp ERR! configure error
npm error gyp ERR! stack Error: This is most likely not a problem with node-gyp or the package itself and
npm error gyp ERR! stack is related to network connectivity. In most cases you are behind a proxy or have bad
npm error gyp ERR! stack network settings.
npm error gyp ERR! stack     at go (/srv/node_modules/node-gyp/lib/install.js:173:17)
npm error gyp ERR! cwd /srv/pub/servers/healthcare-mcp-public/server/node_modules/sqlite3
npm error gyp ERR! node -v v20.20.2
npm error gyp ERR! not ok
npm error A complete log of this run can be found in: /root/.npm/_logs/2026-01-01T00_00_00_000Z-debug-0.log
"""


def test_build_cause_names_the_download_not_the_tail():
    cause = build_cause(SQLITE3_OFFLINE)
    assert cause == ("sqlite3's native build failed: node-gyp could not download node's headers "
                     "(https://nodejs.org/download/release/v20.20.2/node-v20.20.2-headers.tar.gz): no network to "
                     "nodejs.org")
    resolved = SQLITE3_OFFLINE.replace("npm error gyp WARN install", "npm error gyp ERR! stack Error: getaddrinfo "
                                       "ENOTFOUND nodejs.org\nnpm error gyp WARN install")
    assert build_cause(resolved).startswith("sqlite3's native build failed: getaddrinfo ENOTFOUND nodejs.org: "
                                            "node-gyp could not download")
    assert build_cause("npm error 404 Not Found") is None


def _servers(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "servers.py"), *args], capture_output=True,
                          text=True, timeout=600, env={**os.environ, **env}, check=False)


def _npm_package(root: Path, native: bool) -> Path:
    """A Node package; with `native`, a one-function N-API addon that npm builds with node-gyp on install."""
    root.mkdir(parents=True)
    (root / "package.json").write_text(json.dumps({"name": "native-addon", "version": "1.0.0", "private": True}))
    if native:
        (root / "addon.c").write_text(ADDON)
        (root / "binding.gyp").write_text(json.dumps({"targets": [{"target_name": "addon", "sources": ["addon.c"]}]}))
    else:
        (root / "package.json").write_text(json.dumps({"name": "fails", "version": "1.0.0", "scripts": {
            "build": "node -e \"console.error('gyp ERR! stack Error: getaddrinfo ENOTFOUND nodejs.org'); "
                     "process.exit(1)\""}}))
    return root


def _spec(source: Path, envs: Path, step: list[str]) -> ServerSpec:
    install = InstallSpec(build=(tuple(step),), build_dir=str(source))
    return ServerSpec(name="addon", command="node", args=("index.js",), install=install,
                      env_folder=str(install.folder(envs, "addon")))


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("npm") is None or node_headers_prefix() is None or shutil.which("make") is None,
                    reason="needs npm, a node with its headers (include/node) and a C toolchain")
def test_native_module_builds_against_the_local_node_headers(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm-cache"))
    monkeypatch.delenv("npm_config_nodedir", raising=False)
    source = _npm_package(tmp_path / "addon", native=True)
    outcome = install_server(_spec(source, tmp_path / "envs", ["npm", "install", "--no-audit", "--no-fund"]),
                             log_path=tmp_path / "logs" / "addon.log")
    assert outcome.status == "installed", outcome.detail
    assert (source / "build" / "Release" / "addon.node").is_file()
    assert not (home / ".cache" / "node-gyp").exists()  # no headers were downloaded


@pytest.mark.skipif(shutil.which("npm") is None, reason="needs npm")
def test_failed_build_names_its_cause_and_the_log(tmp_path):
    source = _npm_package(tmp_path / "fails", native=False)
    log = tmp_path / "logs" / "addon.log"
    outcome = install_server(_spec(source, tmp_path / "envs", ["npm", "run", "build"]), log_path=log)
    assert outcome.status == "failed"
    assert outcome.detail == ("npm run build exited with 1: getaddrinfo ENOTFOUND nodejs.org; "
                              f"full log: {log}")


SLOW_FIRST_START = """import runpy, sys, time
from pathlib import Path
cache = Path("first-start.cache")
if not cache.exists():  # a first start filling its caches (bytecode, npx): slower than the check waits
    time.sleep(12)
    cache.write_text("filled")
sys.argv = [{server!r}]
runpy.run_path({server!r}, run_name="__main__")
"""


@pytest.mark.slow
def test_install_makes_the_first_start_so_the_first_check_passes(tmp_path):
    folder = tmp_path / "srv"
    folder.mkdir()
    (folder / "slow.py").write_text(SLOW_FIRST_START.format(server=str(HERE / "counter_server.py")))
    config = write_json(tmp_path / "servers.json", {"servers": {"slow": {
        "command": sys.executable, "args": ["slow.py"], "cwd": "srv",
        "install": {"build": [[sys.executable, "-c", "pass"]], "dir": "srv"}}}})
    envs = {"M3BENCH_SERVER_ENVS": str(tmp_path / "envs")}
    installed = _servers("install", "--config", str(config), env=envs)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert "first start of each installed server (to fill its caches): 1 of 1 started" in installed.stdout
    assert "MCP server 'slow', start 1" in (tmp_path / "envs" / "logs" / "slow.log").read_text()
    check = _servers("check", "--config", str(config), "--start-timeout", "8", env=envs)
    assert check.returncode == 0 and "1 of 1 server(s) started" in check.stdout, check.stdout
    again = _servers("install", "--config", str(config), env=envs)
    assert "1 up to date" in again.stdout and "first start" not in again.stdout


def test_system_deps_and_check_agree_on_what_ocr_needs(tmp_path):
    # mcp-ocr needs tesseract to start and poppler (through pdf2image) for its perform_pdf_ocr tool: system-deps
    # says so before the install, as the check does from the installed environment after it
    requirements = ["mcp-ocr==0.2.0", "mcp<2"]
    config = write_json(tmp_path / "servers.json", {"servers": {"ocr": {
        "command": "python", "args": ["-m", "mcp_ocr"], "install": {"requirements": requirements}}}})
    deps = _servers("system-deps", "--config", str(config), env={"M3BENCH_SERVER_ENVS": str(tmp_path / "envs")})
    assert deps.returncode == 0 and deps.stdout == "tesseract-ocr poppler-utils\n", deps.stdout + deps.stderr
    env = tmp_path / "env"
    for dist in ("mcp_ocr-0.2.0", "pdf2image-1.17.0", "opencv_python-4.10.0.84"):
        (env / "venv" / "lib" / "python3.11" / "site-packages" / f"{dist}.dist-info").mkdir(parents=True)
    assert server_system_packages(requirements, None) == \
        server_system_packages(requirements, env)[:2] == ["tesseract-ocr", "poppler-utils"]


def test_native_node_build_needs_debians_node_headers(tmp_path):
    lock = {"packages": {"": {"dependencies": {"sqlite3": "^5.1.6"}},
                         "node_modules/sqlite3": {"version": "5.1.7", "hasInstallScript": True,
                                                  "optionalDependencies": {"node-gyp": "8.x"}},
                         "node_modules/sharp": {"version": "0.34.4", "hasInstallScript": True}}}
    native = tmp_path / "native"
    native.mkdir()
    (native / "package-lock.json").write_text(json.dumps(lock))
    plain = tmp_path / "plain"
    plain.mkdir()
    del lock["packages"]["node_modules/sqlite3"]
    (plain / "package-lock.json").write_text(json.dumps(lock))
    assert native_node_build(native) and not native_node_build(plain)
    assert node_build_packages(native, "18.19.0+dfsg-6~deb12u2") == ["libnode-dev"]
    assert node_build_packages(native, "20.20.2-1nodesource1") == []  # NodeSource's node ships its headers
    assert node_build_packages(native, None) == [] and node_build_packages(plain, "18.19.0+dfsg-6~deb12u2") == []
