"""What a servers-config entry runs, read from its command line alone (rollout.mcp.complete completes it from
that): the file or folder under the servers' root it points into (`pointed`), what runs it from an environment
of its own (`in_environment`: python, a virtualenv's script, ``uv run``, node), and the third-party modules a
single-file Python server imports (`third_party_imports`)."""

from __future__ import annotations

import ast
import os
import re
import sys
from pathlib import Path

from engine.contract import JsonObject, JsonValue
from rollout.mcp.environments import PYTHON_NAMES

PYTHON = re.compile(r"python(?:3(?:\.\d+)?)?(?:\.exe)?")
VENV_BIN = re.compile(r"(?:^|/)\.?venv/(?:bin|Scripts)/([^/]+)$")
SCRIPT = (".py", ".js", ".mjs", ".cjs")
PACKAGE_RUNNERS = ("uvx", "npx")


def entry_list(entry: JsonObject, key: str) -> list[JsonValue]:
    """An entry's list (``args``, ``inherit``); empty when it has none or it is not a list."""
    value = entry.get(key)
    return value if isinstance(value, list) else []


def entry_object(entry: JsonObject, key: str) -> JsonObject:
    """An entry's object (``env``); empty when it has none or it is not an object."""
    value = entry.get(key)
    return value if isinstance(value, dict) else {}


def entry_words(entry: JsonObject) -> list[str]:
    """An entry's command and args as strings (for a line that names them)."""
    return [str(entry.get("command")), *map(str, entry_list(entry, "args"))]



def third_party_imports(path: Path) -> list[str]:
    """The top-level modules a Python file imports that are neither the standard library's nor files or
    folders beside it, sorted; ValueError when it does not parse."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path.name} cannot be parsed ({exc})") from None
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    beside = {p.stem if p.is_file() else p.name for p in path.parent.iterdir()}
    return sorted(n for n in names if n not in sys.stdlib_module_names and n not in beside)


def inside(path: Path, root: Path) -> Path | None:
    """The file or folder directly under `root` that `path` is or lies in (None: not under `root`)."""
    try:
        parts = Path(os.path.normpath(path)).relative_to(root).parts
    except ValueError:
        return None
    return root / parts[0] if parts else None


def pointed(entry: JsonObject, base: Path, root: Path) -> tuple[Path, bool] | None:
    """(the server folder or single file under `root` the entry runs, whether it is a file), or None."""
    given, command = entry.get("cwd"), entry.get("command")
    cwd = base / given if isinstance(given, str) else base
    refs = [base / command] if isinstance(command, str) and "/" in command else []
    refs += [cwd / a for a in entry_list(entry, "args") if isinstance(a, str) and not a.startswith("-")
             and ("/" in a or a.endswith(SCRIPT))]
    if isinstance(given, str):
        refs.append(cwd)
    pythonpath = entry_object(entry, "env").get("PYTHONPATH")
    if isinstance(pythonpath, str):
        refs += [cwd / p for p in pythonpath.split(os.pathsep) if p and "$" not in p]
    for ref in refs:
        target = inside(ref, root)
        if target is None:
            continue
        if target.is_dir():
            return target, False
        if target.is_file() and Path(os.path.normpath(ref)) == target:
            return target, True
    return None


def uv_run(args: list[str]) -> tuple[str | None, list[str]] | None:
    """(``--directory``, the command after the options) of ``uv run`` arguments; None for anything else."""
    if args[:1] != ["run"]:
        return None
    rest, directory = args[1:], None
    while rest and rest[0].startswith("-") and rest[0] not in ("-m", "--module"):
        if rest[0] == "--directory" and len(rest) >= 2:
            directory, rest = rest[1], rest[2:]
        elif rest[0].startswith("--directory="):
            directory, rest = rest[0].split("=", 1)[1], rest[1:]
        elif rest[0] == "--":
            rest = rest[1:]
            break
        else:
            return None
    if rest[:1] == ["--module"]:
        rest = ["-m", *rest[1:]]
    return (directory, rest) if rest else None


def in_environment(entry: JsonObject) -> tuple[str, JsonObject] | str:
    """(python or node, the entry's command, args and cwd as its environment runs them), or why not known."""
    command, args = entry.get("command"), [a for a in entry_list(entry, "args") if isinstance(a, str)]
    if not isinstance(command, str):
        return "no command"
    name = command.rsplit("/", 1)[-1]
    if name in ("node", "node.exe"):
        return "node", {"command": "node"}
    if command == "uv":
        run = uv_run(args)
        if run is None:
            return "uv with arguments other than run [--directory D] ..."
        directory, rest = run
        moved: JsonObject = {}
        if directory is not None:
            cwd = entry.get("cwd")
            moved["cwd"] = os.path.normpath(os.path.join(cwd, directory)) if isinstance(cwd, str) else directory
        if rest[0] == "-m" or rest[0].endswith(".py"):
            return "python", {"command": "python", "args": [*rest], **moved}
        return "python", {"command": rest[0], "args": [*rest[1:]], **moved}
    venv = VENV_BIN.search(command)
    if venv is not None:
        script = venv.group(1)
        return "python", {"command": "python" if PYTHON.fullmatch(script) else script}
    if command in PYTHON_NAMES or PYTHON.fullmatch(name):
        return "python", {"command": "python"}
    return f"cannot tell what runs {command} (not python, a virtualenv's script, uv run or node)"
