"""Which environment variables a server that failed to start read and did not get (best effort).

Two sources, named apart in the hint: the server's stderr (``KeyError: 'NASA_API_KEY'``, ``NASA_API_KEY
is not set``, ``missing environment variable NASA_API_KEY``, a traceback line
``os.environ["NASA_API_KEY"]``), and the source files of the server's own folder (``os.getenv("X")``,
``os.environ["X"]``, ``os.environ.get("X")``, ``process.env.X``, ``process.env["X"]``). Only names the
server's environment lacks are reported; a name in the files need not be required by the server, and
none is named from files when the stderr shows another cause (a missing module, a missing library).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_NAME = r"([A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9]|[A-Z]{3,}[0-9]*)"
_STDERR = [re.compile(p) for p in (
    rf"KeyError: ['\"]{_NAME}['\"]",
    rf"\b{_NAME}['\"`]? (?:environment variable )?(?:is |was )?(?:not set|not defined|not found|missing|required|"
    rf"must be set|is empty)",
    rf"(?i:missing|required|set the|please set|no)(?: required)? (?:environment |env )?(?:variable|var|key)s?:? "
    rf"['\"`]?{_NAME}\b",
    rf"\b{_NAME}['\"`]? (?:environment|env) variable",
    rf"(?i:\bset|export) ['\"`]?{_NAME}\b",
    rf"(?:environ\[|getenv\(|environ\.get\()['\"]{_NAME}['\"]",
    rf"process\.env(?:\.|\[['\"]){_NAME}\b",
)]
_SOURCE = re.compile(rf"(?:os\.environ\[|os\.getenv\(|environ\.get\(|getenv\(|process\.env\.|process\.env\[)"
                     rf"['\"]?{_NAME}\b")
_OTHER_CAUSE = re.compile(r"ModuleNotFoundError|ImportError|Cannot find (?:module|package)|ERR_MODULE_NOT_FOUND|"
                          r"SyntaxError|No module named|command not found|Unable to find \w+ shared library")
"""A failed start whose stderr shows one of these has another cause than a variable: no names from files."""
_SOURCE_SUFFIXES = {".py", ".js", ".mjs", ".cjs", ".ts"}
_SKIPPED = {"node_modules", ".venv", "venv", ".git", "__pycache__", "site-packages", ".tox", "tests", "test"}
_PROJECT_FILES = ("pyproject.toml", "package.json", "requirements.txt", "setup.py")
MAX_FILES = 400
MAX_BYTES = 1_000_000


def read_in_stderr(text: str) -> list[str]:
    """Variable names a server's stderr says it looked for, in order of appearance."""
    found: list[tuple[int, str]] = []
    for pattern in _STDERR:
        found += [(m.start(), m.group(1)) for m in pattern.finditer(text)]
    return list(dict.fromkeys(name for _, name in sorted(found)))


def server_folder(command: str, args: tuple[str, ...], cwd: str | None) -> Path | None:
    """The server's own code: the project folder (with a pyproject.toml, package.json, ...) holding the first
    script argument, below the working directory; else the script alone (a folder of single-file servers
    holds other servers' code too)."""
    base = Path(cwd or ".")
    for arg in (command, *args):
        if arg.startswith("-") or not arg.endswith(tuple(_SOURCE_SUFFIXES)):
            continue
        try:
            script = (base / arg).resolve()
            if not script.is_file():
                continue
        except (OSError, ValueError):
            continue
        folder = script.parent
        for parent in [folder, *folder.parents]:
            if parent == base.resolve() or parent == parent.parent:
                break
            if any((parent / name).is_file() for name in _PROJECT_FILES):
                return parent
        return script
    return None


def read_in_files(folder: Path) -> list[str]:
    """Variable names the source files of a folder read (at most MAX_FILES files), sorted."""
    names: set[str] = set()
    seen = 0
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED and not d.startswith("."))
        for filename in sorted(filenames):
            path = Path(dirpath) / filename
            if path.suffix not in _SOURCE_SUFFIXES:
                continue
            seen += 1
            if seen > MAX_FILES:
                return sorted(names)
            try:
                if path.stat().st_size <= MAX_BYTES:
                    names.update(_SOURCE.findall(path.read_text(encoding="utf-8", errors="replace")))
            except OSError:
                continue
    return sorted(names)


def read_in_file(path: Path) -> list[str]:
    """Variable names one source file reads, sorted (none when it cannot be read)."""
    try:
        return sorted(set(_SOURCE.findall(path.read_text(encoding="utf-8", errors="replace"))))
    except OSError:
        return []


def missing_variables_hint(stderr: str, env: dict[str, str], command: str, args: tuple[str, ...],
                           cwd: str | None, exited: bool = True) -> str:
    """One sentence naming the variables the server read and its environment lacks ('' when none is known);
    names from its files only when it exited (not when it was slow to answer) for no other cause it shows."""
    said = [n for n in read_in_stderr(stderr) if not env.get(n)]
    folder = server_folder(command, args, cwd)
    in_files = []
    if folder is not None and exited and not _OTHER_CAUSE.search(stderr):
        read = read_in_file(folder) if folder.is_file() else read_in_files(folder)
        in_files = [n for n in read if not env.get(n) and n not in said]
    parts = []
    if said:
        parts.append(f"its stderr names {', '.join(said)}")
    if in_files:
        parts.append(f"its files ({folder}) read {', '.join(in_files)}")
    if not parts:
        return ""
    return ("environment variables it did not get: " + "; ".join(parts) +
            " (give them in its env or inherit, or use environment: whole)")
