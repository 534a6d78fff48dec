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
