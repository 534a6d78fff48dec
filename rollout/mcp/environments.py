"""Per-server environments: what a manifest's ``install`` block asks for, where it is built, and how a
server's command is launched from it.

An environment folder (``<root>/<server>-<digest of the install block>``) holds a virtualenv
(``venv/``, from ``requirements``), npm packages (``node_modules/``, from ``npm``) and a stamp written
when ``python scripts/servers.py install`` finished. A Node ``build`` runs in its source folder
(``dir``), as such projects expect. The launch rules: ``python`` is the environment's interpreter;
``uvx PKG ...`` and ``npx PKG ...`` run the installed package's script instead of fetching one; any
other bare command is looked up in the environment's script folders first; and those folders lead
the server's PATH.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from engine.contract import InputError

PYTHON_NAMES = ("python", "python3", "py")
STAMP = ".installed.json"
ENVS_VARIABLE = "M3BENCH_SERVER_ENVS"


@dataclass(frozen=True)
class BuildFailure:
    """Why an environment's last build failed, kept beside its folder (``<folder>.failed``): the reason, and the
    package the registry answered it does not have when that was the cause (a build that cannot succeed as
    written, which ``install`` then skips unless forced)."""

    reason: str
    registry_lacks: str | None = None
    when: str = ""


def failure_path(folder: Path) -> Path:
    """Where the reason of an environment's last failed build is kept (beside the folder)."""
    return folder.with_name(f"{folder.name}.failed")


def write_failure(folder: Path, failure: BuildFailure) -> None:
    """Keep a failed build's record beside its folder (one JSON line)."""
    record = {"reason": failure.reason, "registry_lacks": failure.registry_lacks, "when": failure.when}
    failure_path(folder).write_text(json.dumps(record) + "\n", encoding="utf-8")


def read_failure(folder: Path) -> BuildFailure | None:
    """The record of the folder's last failed build (None when there is none); a plain line of text, as older
    installs wrote it, is its reason."""
    try:
        text = failure_path(folder).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    try:
        record = json.loads(text)
    except ValueError:
        record = None
    if not isinstance(record, dict) or not isinstance(record.get("reason"), str):
        return BuildFailure(text)
    lacks = record.get("registry_lacks")
    return BuildFailure(record["reason"], lacks if isinstance(lacks, str) and lacks else None,
                        str(record.get("when") or ""))


def default_env_root() -> Path:
    """Where per-server environments go unless the manifest says: $M3BENCH_SERVER_ENVS, else ~/.cache."""
    value = os.environ.get(ENVS_VARIABLE)
    return Path(value) if value else Path.home() / ".cache" / "m3bench" / "server-envs"


@dataclass(frozen=True)
class InstallSpec:
    """A manifest entry's ``install`` block: what its environment holds."""

    requirements: tuple[str, ...] = ()
    python: str | None = None
    npm: tuple[str, ...] = ()
    build: tuple[tuple[str, ...], ...] = ()
    build_dir: str | None = None

    def digest(self) -> str:
        """A short digest of the block: a changed block gets a new environment folder."""
        text = json.dumps([self.requirements, self.python, self.npm, self.build, self.build_dir])
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def folder(self, root: Path, server: str) -> Path:
        """The environment folder of this block for a server."""
        return root / f"{re.sub(r'[^A-Za-z0-9._-]', '_', server)}-{self.digest()}"


def _strings(value: object, path: Path, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise InputError(path, "must be a list of non-empty strings", field=where)
    return tuple(value)


def parse_install(block: object, path: Path, where: str) -> InstallSpec:
    """The install block of a manifest entry; InputError naming the field when it is malformed.

    Requirements that are local paths (``./server``, ``../x/requirements.txt``) are relative to the manifest's
    folder."""
    if not isinstance(block, dict):
        raise InputError(path, "must be an object", field=where)
    unknown = sorted(set(block) - {"requirements", "python", "npm", "build", "dir"})
    if unknown:
        raise InputError(path, f"unknown key(s) {', '.join(unknown)} (expected requirements, python, npm, build, "
                         "dir)", field=where)
    python = block.get("python")
    if python is not None and (not isinstance(python, str) or not python.strip()):
        raise InputError(path, "must be a Python version or an interpreter path", field=f"{where}.python")
    build = block.get("build", [])
    if not isinstance(build, list):
        raise InputError(path, "must be a list of commands, each a list of strings", field=f"{where}.build")
    steps = tuple(_strings(step, path, f"{where}.build[{i}]") for i, step in enumerate(build))
    build_dir = block.get("dir")
    if steps and not isinstance(build_dir, str):
        raise InputError(path, "a build needs the folder it runs in", field=f"{where}.dir")
    requirements = tuple(str((path.parent / r).resolve()) if r.startswith(("./", "../")) else r
                         for r in _strings(block.get("requirements", []), path, f"{where}.requirements"))
    spec = InstallSpec(requirements,
                       python, _strings(block.get("npm", []), path, f"{where}.npm"), steps,
                       str((path.parent / build_dir).resolve()) if steps and isinstance(build_dir, str) else None)
    if not (spec.requirements or spec.npm or spec.build):
        raise InputError(path, "names nothing to install (requirements, npm or build)", field=where)
    return spec


@dataclass(frozen=True)
class Runtime:
    """What an entry's bare ``python`` means and where its scripts are looked up."""

    python: str | None
    bins: tuple[str, ...]
    origin: str

    @classmethod
    def of_folder(cls, folder: Path, origin: str) -> Runtime:
        """The runtime of an environment folder built by the installer."""
        venv = folder / "venv"
        python = venv_python(venv) if (venv / "pyvenv.cfg").exists() else None
        bins = tuple(str(d) for d in (venv / "bin", venv / "Scripts", folder / "node_modules" / ".bin") if d.is_dir())
        return cls(python, bins, origin)

    @classmethod
    def of_python(cls, given: Path) -> Runtime:
        """The runtime of an existing virtualenv folder or interpreter."""
        if given.is_dir():
            return cls(venv_python(given), tuple(str(d) for d in (given / "bin", given / "Scripts") if d.is_dir()),
                       f"the virtualenv {given}")
        return cls(str(given), (str(given.parent),), f"the interpreter {given}")


def venv_python(venv: Path) -> str:
    """The interpreter of a virtualenv folder."""
    unix = venv / "bin" / "python"
    return str(unix if unix.exists() or sys.platform != "win32" else venv / "Scripts" / "python.exe")


def _package_name(spec: str, separators: str) -> str:
    """A package spec without its version: name@1.2, name==1.2, name[extra]>=1 -> name."""
    scoped = spec.startswith("@")
    head = spec[1:] if scoped else spec
    head = re.split(f"[{re.escape(separators)}]", head, maxsplit=1)[0]
    return ("@" if scoped else "") + head


def _uvx_script(args: list[str], bins: tuple[str, ...]) -> tuple[str, list[str]] | None:
    """The installed script that ``uvx [--from PKG] CMD ...`` would run, and the rest of the arguments."""
    rest = list(args)
    if rest[:1] == ["--from"] and len(rest) >= 3:
        rest = rest[2:]
    elif rest and rest[0].startswith("--from="):
        rest = rest[1:]
    if not rest or rest[0].startswith("-"):
        return None
    name = _package_name(rest[0], "@=<>![~; ")
    for candidate in dict.fromkeys((name, name.replace("_", "-"), name.replace("-", "_"))):
        for folder in bins:
            script = Path(folder) / candidate
            if script.is_file():
                return str(script), rest[1:]
    return None


def _npx_script(args: list[str], folder: Path) -> tuple[str, list[str]] | None:
    """The installed bin that ``npx [-y] PKG ...`` would run, and the rest of the arguments."""
    rest = list(args)
    while rest and rest[0] in ("-y", "--yes", "-q", "--quiet"):
        rest = rest[1:]
    if not rest or rest[0].startswith("-"):
        return None
    name = _package_name(rest[0], "@")
    manifest = folder / "node_modules" / name / "package.json"
    if not manifest.is_file():
        return None
    bins = json.loads(manifest.read_text(encoding="utf-8")).get("bin")
    if isinstance(bins, str):
        bin_name = name.split("/")[-1]
    elif isinstance(bins, dict) and bins:
        bin_name = name.split("/")[-1] if name.split("/")[-1] in bins else next(iter(bins))
    else:
        return None
    script = folder / "node_modules" / ".bin" / bin_name
    return (str(script), rest[1:]) if script.exists() else None


def launch(command: str, args: list[str], runtime: Runtime | None, env_folder: Path | None, base: Path,
           path_variable: str) -> tuple[str, list[str], str]:
    """The command and arguments to start, and one line saying how the command was chosen.

    Relative commands with a folder part are taken from `base` (the manifest's folder).
    """
    if command in PYTHON_NAMES:
        if runtime is not None and runtime.python:
            return runtime.python, args, f"python -> {runtime.python} ({runtime.origin})"
        found = shutil.which("python", path=path_variable) or shutil.which("python3", path=path_variable)
        why = "the entry names no environment" if runtime is None else "its environment has no Python"
        return found or command, args, f"python -> {found or 'not found'} (from PATH: {why})"
    if runtime is not None:
        script = None
        if command == "uvx":
            script = _uvx_script(args, runtime.bins)
        elif command == "npx" and env_folder is not None:
            script = _npx_script(args, env_folder)
        elif "/" not in command:
            found = shutil.which(command, path=os.pathsep.join(runtime.bins))
            script = (found, args) if found else None
        if script is not None:
            return script[0], script[1], f"{command} -> {script[0]} ({runtime.origin})"
    if "/" in command and not Path(command).is_absolute():
        command = str((base / command).resolve())
    return command, args, f"{command} as written"
