"""scripts/servers.py: install is idempotent, check prints one row per server within a bounded time even
when servers fail or hang, and bad input is one line."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time

import pytest
from rollout_helpers import ROOT, THIRD_PARTY, third_party_config, write_json


def _servers(*args: str, timeout: float = 300) -> tuple[subprocess.CompletedProcess, float]:
    began = time.monotonic()
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "servers.py"), *args], capture_output=True,
                          text=True, timeout=timeout)
    return done, time.monotonic() - began


def _rows(table: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split() for line in table.splitlines()[1:] if "server(s) started" not in line}


@pytest.mark.slow
def test_check_the_test_servers(python_servers, node_servers):
    done, took = _servers("install", "--config", str(THIRD_PARTY), "--envs", str(python_servers))
    assert done.returncode == 0 and done.stdout.count("up to date") == 4, done.stdout + done.stderr
    done, took = _servers("check", "--config", str(THIRD_PARTY), "--envs", str(python_servers))
    assert done.returncode == 0, done.stdout + done.stderr
    rows = _rows(done.stdout)
    assert list(rows) == ["time", "excel", "filesystem", "everything"]
    assert all(row[1] == "started" and int(row[2]) > 0 and row[4] == "s" for row in rows.values())
    assert rows["time"][2] == "2" and "(get_current_time)" in rows["time"]
    assert "4 of 4 server(s) started" in done.stdout and took <= 15, took


@pytest.mark.slow
def test_check_reports_failed_and_hanging_servers_in_bounded_time(tmp_path, python_servers):
    config = third_party_config(tmp_path / "s.json", python_servers, {"time": None}, shipped=("math",))
    data = json.loads(config.read_text())
    data["servers"]["broken"] = {"command": "python", "args": ["-c", "import sys; print('boom: no such dependency', "
                                                                     "file=sys.stderr); sys.exit(3)"]}
    data["servers"]["hangs"] = {"command": "python", "args": ["-c", "import time; time.sleep(600)"]}
    data["servers"]["off"] = {"command": "nothing", "disabled": True}
    write_json(config, data)
    done, took = _servers("check", "--config", str(config), "--start-timeout", "3", "--logs", str(tmp_path / "logs"))
    assert done.returncode == 1, done.stdout + done.stderr
    rows = _rows(done.stdout)
    assert list(rows) == ["math", "time", "broken", "hangs"]
    assert rows["math"][1] == rows["time"][1] == "started" and rows["broken"][1] == rows["hangs"][1] == "FAILED"
    broken = next(line for line in done.stdout.splitlines() if line.startswith("broken"))
    assert "stderr: boom: no such dependency" in broken
    assert "2 of 4 server(s) started" in done.stdout and took < 3 + 15, took
    assert (tmp_path / "logs" / "broken.log").read_text().count("boom") == 1


def test_bad_config_is_one_line(tmp_path):
    bad = write_json(tmp_path / "s.json", {"servers": {"a": {"command": "x", "install": {"npm": "pkg"}}}})
    done, _ = _servers("install", "--config", str(bad))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"error: {bad}: field 'servers.a.install.npm': must be a list of non-empty strings\n"
    done, _ = _servers("check", "--config", str(bad), "--only", "b")
    assert done.returncode == 2 and done.stderr.count("\n") == 1


def test_check_without_servers_is_an_error(tmp_path):
    for servers in ({}, {"off": {"command": "x", "disabled": True}}):
        config = write_json(tmp_path / "s.json", {"servers": servers})
        done, _ = _servers("check", "--config", str(config))
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr == (f"error: {config}: field 'servers': no server to check (the config has no enabled "
                               "server)\n")


def test_a_node_build_runs_in_its_folder(tmp_path):
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed, so a Node build cannot run")
    source = tmp_path / "server-src"
    source.mkdir()
    write_json(source / "package.json", {"name": "built-server", "version": "1.0.0", "private": True, "scripts": {
        "build": "node -e \"require('fs').mkdirSync('dist',{recursive:true});"
                 "require('fs').writeFileSync('dist/index.js','// built')\""}})
    config = write_json(tmp_path / "s.json", {"environments": "envs", "servers": {
        "built": {"command": "node", "args": ["server-src/dist/index.js"],
                  "install": {"build": [["npm", "run", "build"]], "dir": "server-src"}},
        "fails": {"command": "node", "install": {"build": [["npm", "run", "no-such-script"]], "dir": "server-src"}}}})
    done, _ = _servers("install", "--config", str(config))
    assert done.returncode == 1
    lines = {line.split()[0]: line for line in done.stdout.splitlines()}
    assert " installed " in lines["built"] and (source / "dist" / "index.js").read_text() == "// built"
    assert " failed " in lines["fails"] and "npm run no-such-script exited with" in lines["fails"]
    done, _ = _servers("install", "--config", str(config), "--only", "built")
    assert done.returncode == 0 and "up to date" in done.stdout
