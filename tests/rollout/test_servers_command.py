"""scripts/servers.py: install is idempotent, check prints one row per server within a bounded time even
when servers fail or hang, and bad input is one line."""

from __future__ import annotations

import inspect
import json
import shutil
import subprocess
import sys
import time

import pytest
import tomllib
from rollout_helpers import ROOT, THIRD_PARTY, third_party_config, write_json

from engine.apps import interrupt
from rollout.servers_command import SHIPPED_CONFIG, main


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
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and sum("up to date" in line for line in lines[:-1]) == 4, done.stdout + done.stderr
    assert lines[-1].startswith("4 up to date; 4 server(s), 1 at once"), lines[-1]
    done, took = _servers("check", "--config", str(THIRD_PARTY), "--envs", str(python_servers))
    assert done.returncode == 0, done.stdout + done.stderr
    rows = _rows(done.stdout)
    assert list(rows) == ["time", "excel", "filesystem", "everything"]
    assert all(row[1] == "started" and int(row[2]) > 0 and row[4] == "s" for row in rows.values())
    assert rows["time"][2] == "2" and "(get_current_time)" in rows["time"]
    assert "4 of 4 server(s) started" in done.stdout


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
    assert "2 of 4 server(s) started" in done.stdout and took < 3 + 60, took  # the hanging one: not its 600 s
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


def test_install_builds_in_parallel_with_a_log_per_server(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    # each build records when it started and ended; one waits until the others have started (or 60 s)
    step = [sys.executable, "-c", "import glob, sys, time; start = time.time(); open(sys.argv[1] + '.started', 'w')"
                                  ".close(); deadline = start + 60\n"
                                  "while len(glob.glob('*.started')) < 3 and time.time() < deadline: time.sleep(0.05)\n"
                                  "print('built', sys.argv[1]); open(sys.argv[1], 'w').write(f'{start} {time.time()}')"]
    servers = {f"s{i}": {"command": "x", "install": {"build": [[*step, f"out{i}"]], "dir": "src"}} for i in range(3)}
    servers["bad"] = {"command": "x", "install": {"build": [[sys.executable, "-c", "import sys; print('no compiler', "
                                                                             "file=sys.stderr); sys.exit(4)"]],
                                                   "dir": "src"}}
    servers["plain"] = {"command": "x"}
    config = write_json(tmp_path / "s.json", {"environments": "envs", "servers": servers})
    done, _ = _servers("install", "--config", str(config), "-j", "4")
    assert done.returncode == 1, done.stdout + done.stderr
    spans = [tuple(map(float, (source / f"out{i}").read_text().split())) for i in range(3)]
    assert max(start for start, _ in spans) < min(end for _, end in spans), spans  # the three builds ran at once
    lines = done.stdout.splitlines()
    rows = {line.split()[0]: line for line in lines[:-2]}
    assert sorted(rows) == ["bad", "plain", "s0", "s1", "s2"] and " failed " in rows["bad"]
    assert lines[-2].startswith("first start of each installed server (to fill its caches): 0 of 3 started")
    assert all(" installed " in rows[f"s{i}"] and (source / f"out{i}").is_file() for i in range(3))
    logs = tmp_path / "envs" / "logs"
    assert lines[-1].startswith("3 installed, 1 nothing to install, 1 failed (bad); 5 server(s), 4 at once, ")
    assert lines[-1].endswith(f"; build logs in {logs}")
    assert "built out1" in (logs / "s1.log").read_text() and "installed" in (logs / "s1.log").read_text()
    bad = (logs / "bad.log").read_text()
    assert "no compiler" in bad and "[exit status 4]" in bad and "FAILED: " in bad
    assert sorted(p.name for p in logs.iterdir()) == ["bad.log", "s0.log", "s1.log", "s2.log"]
    done, _ = _servers("install", "--config", str(config), "-j", "0")
    assert done.returncode == 2 and "-j/--jobs: must be an integer >= 1" in done.stderr


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


def test_a_build_answers_npx_and_reads_no_terminal(tmp_path):
    """A build script's npx would ask before installing what it needs, and cancel with no terminal to
    answer on: builds run with npm_config_yes=true (unless the environment sets it) and stdin closed."""
    (tmp_path / "src").mkdir()
    probe = [sys.executable, "-c", "import os, sys; open('seen', 'w').write(os.environ.get('npm_config_yes', '-') "
                                   "+ ' ' + repr(sys.stdin.read()))"]
    config = write_json(tmp_path / "s.json", {"environments": "envs", "servers": {
        "probe": {"command": "x", "install": {"build": [probe], "dir": "src"}}}})
    done, _ = _servers("install", "--config", str(config))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "src" / "seen").read_text() == "true ''"


def test_check_defaults_to_the_shipped_config_and_is_a_console_script():
    """`check` with no --config checks the shipped rollout/servers.json (its --help says so); pyproject installs
    the command as m3bench-servers."""
    done, _ = _servers("check", "--only", "math", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert list(_rows(done.stdout)) == ["math"] and "1 of 1 server(s) started" in done.stdout
    helped, _ = _servers("check", "--help", timeout=60)
    assert "default: the shipped rollout/servers.json" in " ".join(helped.stdout.split())
    assert SHIPPED_CONFIG == ROOT / "rollout" / "servers.json" and SHIPPED_CONFIG.is_file()
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["m3bench-servers"] == "engine.apps.interrupt:servers"  # which runs this module's main
    assert 'run_app("rollout.servers_command")' in inspect.getsource(interrupt.servers) and callable(main)
