"""scripts/servers.py init DIR: a servers config derived from a tree of Python and Node server folders
(install blocks, entry points, variables read), what could not be derived named, and a config the
reader loads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rollout_helpers import ROOT, write_json

from rollout.mcp.config import read_servers_config


def _tree(root: Path) -> None:
    """Server folders of every kind `init` knows, and two it cannot derive."""
    files = {
        "weather/requirements.txt": "mcp>=1.2,<2\nhttpx==0.27.0  # client\n\n# a comment\n",
        "weather/weather_mcp.py": 'import os\nKEY = os.environ.get("WEATHER_API_KEY")\n',
        "weather/helpers.py": "",
        "opts/requirements.txt": "--index-url https://example.org/simple\nmcp\n",
        "opts/server.py": "",
        "papers/pyproject.toml": '[project]\nname = "papers"\ndependencies = ["mcp<2"]\n[project.scripts]\n'
                                 'papers-mcp = "papers.server:main"\npapers-cli = "papers.cli:main"\n',
        "papers/src/papers/server.py": 'import os\nTOKEN = os.getenv("PAPERS_TOKEN")\n',
        "maps/package.json": json.dumps({"name": "maps-mcp", "bin": {"maps-mcp": "./dist/index.js"},
                                         "scripts": {"build": "tsc"}, "dependencies": {"zod": "^3"}}),
        "maps/src/index.ts": "const key = process.env.MAPS_API_KEY;\n",
        "maps/node_modules/zod/index.js": "process.env.ZOD_DEBUG",
        "notes/package.json": json.dumps({"name": "notes", "main": "index.js"}),
        "notes/index.js": "",
        "lonely/server.py": "",
        "docs/README.md": "no server here",
        "twins/pyproject.toml": '[project]\nname = "twins"\n[project.scripts]\none = "a:main"\ntwo = "b:main"\n',
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _init(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "servers.py"), "init", *args], capture_output=True,
                          text=True, timeout=120)


def test_init_derives_a_config_from_server_folders(tmp_path):
    root = tmp_path / "servers"
    _tree(root)
    done = _init(str(root))
    assert done.returncode == 1, done.stdout + done.stderr  # some folders could not be derived
    config = json.loads((root / "mcp_servers.json").read_text())
    servers = {name: {k: v for k, v in entry.items() if k != "_derived"} for name, entry in config["servers"].items()}
    assert servers == {
        "lonely": {"command": "python", "args": ["server.py"], "cwd": "lonely"},
        "maps": {"command": "node", "args": ["dist/index.js"], "cwd": "maps", "inherit": ["MAPS_API_KEY"],
                 "install": {"build": [["npm", "install"], ["npm", "run", "build"]], "dir": "maps"}},
        "notes": {"command": "node", "args": ["index.js"], "cwd": "notes"},  # nothing to install
        "opts": {"command": "python", "args": ["server.py"], "cwd": "opts",
                 "install": {"requirements": ["-r", "./opts/requirements.txt"]}},
        "papers": {"command": "papers-mcp", "args": [], "cwd": "papers", "inherit": ["PAPERS_TOKEN"],
                   "install": {"requirements": ["./papers"]}},
        "weather": {"command": "python", "args": ["weather_mcp.py"], "cwd": "weather", "inherit": ["WEATHER_API_KEY"],
                    "install": {"requirements": ["mcp>=1.2,<2", "httpx==0.27.0"]}},
    }
    assert "pyproject.toml [project.scripts] papers-mcp" in config["servers"]["papers"]["_derived"]
    out = done.stdout
    missing = out[out.index("could not derive"):]
    assert "docs" in missing and "LEFT OUT: no pyproject.toml, requirements.txt, package.json" in missing
    assert "twins" in missing and "LEFT OUT: entry point: pyproject.toml has several scripts (one, two)" in missing
    assert "lonely" in missing and "install: no pyproject.toml" in missing and "notes" not in missing
    assert f"wrote {root / 'mcp_servers.json'}: 6 of 8 folder(s)" in out
    specs = {s.name: s for s in read_servers_config(root / "mcp_servers.json", tmp_path / "envs")}
    assert specs["lonely"].cwd == str(root / "lonely") and not specs["lonely"].problem
    assert specs["papers"].install.requirements == (str(root / "papers"),)
    assert specs["opts"].install.requirements == ("-r", str(root / "opts" / "requirements.txt"))
    assert specs["maps"].install.build_dir == str(root / "maps") and "not installed" in specs["maps"].problem
    again = _init(str(root))
    assert again.returncode == 2 and again.stderr == f"error: {root / 'mcp_servers.json'}: exists already (use " \
                                                     "--force to replace it)\n"
    elsewhere = tmp_path / "conf" / "s.json"
    elsewhere.parent.mkdir()
    assert _init(str(root), "--output", str(elsewhere)).returncode == 1
    moved = json.loads(elsewhere.read_text())["servers"]
    assert moved["weather"]["cwd"] == "../servers/weather" and moved["papers"]["install"]["requirements"] == \
        ["../servers/papers"]


def test_init_of_a_tree_it_fully_derives(tmp_path):
    root = tmp_path / "servers"
    write_json(root / "one" / "package.json", {"name": "one", "bin": "cli.js"})
    done = _init(str(root))
    assert done.returncode == 0 and "could not derive" not in done.stdout, done.stdout
    assert _init(str(tmp_path / "nowhere")).returncode == 2


def _published(root: Path) -> dict:
    """A suite in the published shape: servers/ with single files and server folders of every kind the
    completion knows, and a config that runs them as the published one does (plus entries it cannot derive)."""
    files = {
        "servers/weather_mcp.py": "import os\nimport json\nimport requests\nfrom mcp.server.fastmcp import FastMCP\n"
                                  "import cv2\nfrom helpers import fmt\nfrom . import x\n"
                                  'KEY = os.environ.get("WEATHER_API_KEY")\n',
        "servers/helpers.py": "",
        "servers/clock_mcp.py": "import time\nfrom datetime import datetime\n",
        "servers/broken_mcp.py": "def (:\n",
        "servers/yolo/requirements.txt": "mcp\nultralytics\n",
        "servers/yolo/server.py": "from mcp.server.fastmcp import FastMCP\n", "servers/yolo/pyzbar_mcp.py": "",
        "servers/yolo/tests/test_it.py": "import mcp.server.fastmcp\n",
        "servers/papers/pyproject.toml": '[project]\nname = "papers"\ndependencies = ["mcp"]\n',
        "servers/papers/papers/server.py": 'import os\nos.getenv("PAPERS_TOKEN")\nfrom mcp.server import Server\n',
        "servers/papers/build/lib/server.py": "from mcp.server.fastmcp import FastMCP\n",  # a build folder: skipped
        "servers/vl/pyproject.toml": '[project]\nname = "vl"\n',
        "servers/vl/src/vl/server.py": "",
        "servers/tm/package.json": json.dumps({"name": "tm", "main": "dist/index.js", "scripts": {"build": "tsc"},
                                               "dependencies": {"zod": "^3"}}),
        "servers/tm/src/index.ts": 'const t = process.env.TM_TOKEN; const u = process.env.TM_URL;\n',
        "servers/dual/package.json": json.dumps({"name": "dual", "scripts": {"build": "smithery build",
                                                                             "build:stdio": "tsc"}}),
        "servers/plain/package.json": json.dumps({"name": "plain", "main": "index.js"}),
        "servers/plain/index.js": "",
        "servers/nothing/run.py": "",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "reqs.txt").write_text("torch\nmcp\nrequests\nopencv-python-headless==4.10.0.84  # cv2\npandas\n")
    config = {"servers": {
        "weather": {"_comment": "kept", "command": "python", "args": ["servers/weather_mcp.py"], "env": {}},
        "clock": {"command": "python", "args": ["servers/clock_mcp.py"]},
        "broken": {"command": "python", "args": ["servers/broken_mcp.py"]},
        "yolo": {"command": "servers/yolo/.venv/bin/python", "args": ["servers/yolo/server.py"], "env": {},
                 "disabled": True},
        "papers": {"command": "uv", "args": ["run", "--directory", "servers/papers", "-m", "papers.server"],
                   "env": {"PAPERS_TOKEN": "x"}},
        "vl": {"command": "servers/vl/.venv/bin/python", "args": ["-m", "vl.server"],
               "env": {"PYTHONPATH": "servers/vl/src"}},
        "tm": {"command": "node", "args": ["servers/tm/dist/index.js"], "env": {"TM_URL": "u"}, "autoApprove": []},
        "plain": {"command": "node", "args": ["servers/plain/index.js"]},
        "dual": {"command": "node", "args": ["servers/dual/build/index.js"]},
        "excel": {"command": "uvx", "args": ["excel-mcp-server", "stdio"], "env": {"EXCEL_FILES_PATH": "media"}},
        "maps": {"command": "npx", "args": ["-y", "@some/maps-mcp"], "disabled": True},
        "own": {"command": "python", "args": ["servers/clock_mcp.py"], "install": {"requirements": ["mcp<2"]}},
        "ocr": {"command": "python", "args": ["-m", "mcp_ocr"]},
        "shell": {"command": "bash", "args": ["servers/nothing/run.py"]},
        "bare": {"command": "python", "args": ["servers/nothing/run.py"]},
    }}
    write_json(root / "mcp_servers.json", config)
    return config


def _without_notes(config: dict) -> dict:
    return {name: {k: v for k, v in entry.items() if k != "_derived"} for name, entry in config["servers"].items()}


def test_init_completes_a_published_config(tmp_path):
    published = _published(tmp_path)
    done = _init(str(tmp_path / "servers"), "--complete", str(tmp_path / "mcp_servers.json"), "--offline")
    assert done.returncode == 1, done.stdout + done.stderr
    written = json.loads((tmp_path / "mcp_servers.derived.json").read_text())
    assert {k: v for k, v in written.items() if k not in ("servers", "_derived")} == {}
    servers = _without_notes(written)
    assert servers == {
        "weather": {"_comment": "kept", "command": "python", "args": ["servers/weather_mcp.py"], "env": {},
                    "install": {"requirements": ["requests", "mcp<2"]},  # FastMCP: written for mcp 1.x
                    "inherit": ["WEATHER_API_KEY"]},
        "clock": published["servers"]["clock"],  # the standard library only: nothing to install
        "broken": published["servers"]["broken"],
        "yolo": {"command": "python", "args": ["servers/yolo/server.py"], "env": {}, "disabled": True,
                 "install": {"requirements": ["mcp", "ultralytics", "mcp<2"]}},
        "papers": {"command": "python", "args": ["-m", "papers.server"], "env": {"PAPERS_TOKEN": "x"},
                   "cwd": "servers/papers", "install": {"requirements": ["./servers/papers"]}},
        "vl": {"command": "python", "args": ["-m", "vl.server"], "env": {"PYTHONPATH": "servers/vl/src"},
               "install": {"requirements": ["./servers/vl"]}},
        "tm": {"command": "node", "args": ["servers/tm/dist/index.js"], "env": {"TM_URL": "u"}, "autoApprove": [],
               "install": {"build": [["npm", "install"], ["npm", "run", "build"]], "dir": "servers/tm"},
               "inherit": ["TM_TOKEN"]},
        "plain": published["servers"]["plain"],
        "dual": {"command": "node", "args": ["servers/dual/build/index.js"],  # the build a host runs over stdio
                 "install": {"build": [["npm", "install"], ["npm", "run", "build:stdio"]], "dir": "servers/dual"}},
        "excel": published["servers"]["excel"],
        "maps": published["servers"]["maps"],
        "own": published["servers"]["own"],
        "ocr": published["servers"]["ocr"],
        "shell": published["servers"]["shell"],
        "bare": published["servers"]["bare"],
    }
    assert "servers/yolo/.venv/bin/python servers/yolo/server.py -> python servers/yolo/server.py" in \
        written["servers"]["yolo"]["_derived"]
    assert "mcp<2: server.py imports mcp.server.fastmcp (mcp 1.x; mcp 2 renamed it)" in \
        written["servers"]["yolo"]["_derived"] and "mcp<2" in written["servers"]["weather"]["_derived"]
    out = done.stdout
    rows = {line.split()[0]: line for line in out[:out.index("could not derive")].splitlines() if line.strip()}
    assert "(disabled)" in rows["yolo"] and "uv run --directory servers/papers -m papers.server -> python -m " \
        "papers.server in servers/papers" in rows["papers"]
    assert "nothing to install: uvx fetches its package" in rows["excel"] and "npx" in rows["maps"]
    assert "kept: it names its own install block" in rows["own"]
    assert "nothing (it imports the standard library only)" in rows["clock"]
    assert "nothing (package.json has no dependencies or build)" in rows["plain"]
    left = {line.split()[0]: line for line in out[out.index("could not derive"):].splitlines()[1:] if line.strip()
            and not line.startswith("wrote")}
    assert set(left) == {"weather", "broken", "ocr", "shell", "bare"}
    assert "no distribution of the same name known here provides: cv2 " in left["weather"]
    assert "broken_mcp.py cannot be parsed" in left["broken"]
    assert f"python -m mcp_ocr runs nothing under {tmp_path / 'servers'}, and no distribution of its name was " \
        "found (no requirements file given; the registry was not asked)" in left["ocr"]
    assert "cannot tell what runs bash" in left["shell"]
    assert "servers/nothing has no pyproject.toml or requirements.txt" in left["bare"]
    assert f"wrote {tmp_path / 'mcp_servers.derived.json'}: 10 of 15 entries covered (6 from their folders, 1 " \
           "single files, 0 python -m of a distribution, 2 uvx/npx, 1 with their own environment), 5 left " \
           "(weather, broken, ocr, shell, bare)" in out
    specs = {s.name: s for s in read_servers_config(tmp_path / "mcp_servers.derived.json", tmp_path / "envs")}
    assert specs["papers"].cwd == str(tmp_path / "servers" / "papers") and \
        specs["papers"].install.requirements == (str(tmp_path / "servers" / "papers"),)
    assert "not installed" in specs["vl"].problem and specs["tm"].install.build_dir == str(tmp_path / "servers" / "tm")
    assert specs["yolo"].disabled and specs["excel"].install is None


def test_init_completes_single_files_from_a_requirements_file(tmp_path):
    _published(tmp_path)
    config = tmp_path / "mcp_servers.json"
    data = json.loads(config.read_text())
    for name in ("broken", "ocr", "shell", "bare"):
        del data["servers"][name]
    write_json(config, data)
    output = tmp_path / "complete.json"
    done = _init(str(tmp_path / "servers"), "--complete", str(config), "--requirements", str(tmp_path / "reqs.txt"),
                 "--output", str(output), "--offline")  # uvx/npx packages: the registry is not asked
    assert done.returncode == 0 and "could not derive" not in done.stdout, done.stdout + done.stderr
    assert "11 of 11 entries covered (6 from their folders, 2 single files, 0 python -m of a distribution, " \
           "2 uvx/npx" in done.stdout
    servers = json.loads(output.read_text())["servers"]
    # the lines providing its imports (cv2 from opencv-python-headless), never the whole file (no torch)
    assert servers["weather"]["install"] == {"requirements": ["opencv-python-headless==4.10.0.84", "requests",
                                                              "mcp<2"]}
    assert "install" not in servers["clock"]  # the standard library only
    assert "the lines of reqs.txt providing its imports" in servers["weather"]["_derived"]
    specs = {s.name: s for s in read_servers_config(output, tmp_path / "envs")}
    assert specs["weather"].install.requirements == ("opencv-python-headless==4.10.0.84", "requests", "mcp<2")
    again = _init(str(tmp_path / "servers"), "--complete", str(config), "--output", str(output))
    assert again.returncode == 2 and "exists already" in again.stderr


def test_init_complete_refuses_bad_input(tmp_path):
    _published(tmp_path)
    servers, config = str(tmp_path / "servers"), str(tmp_path / "mcp_servers.json")
    elsewhere = tmp_path / "conf" / "out.json"
    cases = {
        ("--complete", config, "--output", str(elsewhere)): "must be in the folder of",
        ("--complete", config, "--output", config, "--force"): "is the config being completed",
        ("--complete", str(tmp_path / "none.json")): "no such servers config",
        ("--complete", config, "--requirements", str(tmp_path / "none.txt")): "no such requirements file",
        ("--requirements", str(tmp_path / "reqs.txt")): "--requirements goes with --complete",
    }
    for args, message in cases.items():
        done = _init(servers, *args)
        assert done.returncode == 2 and message in done.stderr and done.stderr.count("\n") == 1, (args, done.stderr)
    (tmp_path / "bad.json").write_text('{"servers": []}')
    done = _init(servers, "--complete", str(tmp_path / "bad.json"))
    assert done.returncode == 2 and "expected an object with a 'servers' object" in done.stderr
