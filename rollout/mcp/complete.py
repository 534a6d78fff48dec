"""A servers config in the published shape completed from the server folders it runs
(``python scripts/servers.py init DIR --complete CONFIG``), for review.

Each entry keeps its ``command``, ``args``, ``env``, ``cwd`` and ``disabled`` as written and gets what it
lacks:

- an entry whose command, script argument, ``cwd``, ``PYTHONPATH`` or ``uv run --directory`` points into a
  folder directly under DIR gets that folder's install block, derived from its own files as ``init DIR``
  derives it (`rollout.mcp.derive`); a command that named an interpreter of its own
  (``servers/x/.venv/bin/python``, ``uv run --directory servers/x -m pkg.server``) becomes a bare
  ``python`` (or the bare script name), which an entry with an install block runs from its environment;
- a Node server installs from the ``package.json`` nearest its entry point (``server/package.json``);
- a Python server folder whose code confines its saves to a folder of its own (``os.environ.get(
  "PPT_OUTPUT_DIR", "./media")``) gets ``paths`` keeping that folder (`rollout.mcp.derive.own_output_folder`);
- a single-file server directly under DIR run with ``python`` (``python servers/x_mcp.py``) gets what it
  imports: the lines of the requirements file the user names that provide its imports, else distributions
  of the imports' names (the rest is named as not derived);
- ``python -m MODULE`` that no folder provides gets the distribution named like the module, from the
  requirements file or the package registry (`rollout.mcp.requirements`);
- ``uvx PKG`` gets the folder under DIR that vendors PKG, with the SDK versions its ``uv.lock`` pins;
  other ``uvx`` and ``npx`` entries fetch their package when they start: nothing is added;
- an entry with an ``install`` or ``python`` of its own is kept as it is.

``inherit`` gets the variables the server's files read that its ``env`` does not set. Whatever could not
be derived is named per entry.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from engine.contract import JsonObject, JsonValue, read_json
from rollout.mcp.derive import (
    Derived,
    local_path,
    mcp_pin,
    node_install,
    own_output_folder,
    python_files,
    python_install,
    read_package,
)
from rollout.mcp.envhints import read_in_file, read_in_files
from rollout.mcp.launch import (
    PACKAGE_RUNNERS,
    SCRIPT,
    entry_list,
    entry_object,
    entry_words,
    in_environment,
    pointed,
    third_party_imports,
)
from rollout.mcp.published import npm_pin, plain_entry, root_variables, servers_of
from rollout.mcp.requirements import (
    distributions_of,
    lock_pins,
    module_distribution,
    requirement_lines,
    requirement_name,
    system_packages,
    vendored_project,
)


@dataclass
class Completion:
    """One entry: how it was completed (`kind`: folder, file, package, kept, other), what was added, what is left."""

    name: str
    kind: str
    disabled: bool
    added: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def _rel(path: Path, base: Path) -> str:
    return Path(os.path.relpath(path, base)).as_posix()


def _inherit(entry: JsonObject, variables: list[str], out: Completion) -> None:
    given = set(entry_object(entry, "env")) | set(entry_list(entry, "inherit"))
    new = [v for v in variables if v not in given]
    if new:
        entry["inherit"] = [*entry_list(entry, "inherit"), *new]
        out.added.append(f"inherit: the variables its files read ({', '.join(new)})")


def _folder(entry: JsonObject, folder: Path, base: Path, out: Completion) -> None:
    """Give an entry that runs a server folder the folder's install block and a command run from it."""
    out.kind = "folder"
    runs = in_environment(entry)
    if isinstance(runs, str):
        out.missing.append(f"command: {runs}")
        return
    kind, launch = runs
    rel = _rel(folder, base)
    derived = Derived(out.name, None)
    if kind == "python":
        install, _ = python_install(folder, rel, derived)
        if install is None and not derived.missing:
            derived.missing.append(f"install: {rel} has no pyproject.toml or requirements.txt to build from")
    elif (nearest := _package_folder(entry, folder, base)) is not None:
        data = read_package(nearest / "package.json")
        install = None
        if nearest != folder:
            rel = _rel(nearest, base)
            derived.sources.append(f"install: {rel}/package.json, the one beside its entry point")
        if isinstance(data, str):
            derived.missing.append(f"install: package.json {data}")
        else:
            install = node_install(data, rel, derived)
            if install is None:
                derived.sources.append("install: nothing (package.json has no dependencies or build)")
    else:
        install = None
        derived.missing.append(f"install: {rel} has no package.json to build from")
    out.added += derived.sources
    out.missing += derived.missing
    if install is None:
        return
    before = " ".join(entry_words(entry))
    entry.update(launch)
    after = " ".join(entry_words(entry))
    if after != before:
        out.added.append(f"command: {before} -> {after}" +
                         (f" in {launch['cwd']}" if "cwd" in launch else "") + " (from its environment)")
    entry["install"] = install
    if kind == "python":
        _own_output(entry, folder, out)
    _inherit(entry, read_in_files(folder), out)


def _package_folder(entry: JsonObject, folder: Path, base: Path) -> Path | None:
    """The folder of the ``package.json`` nearest to the entry's script (a server folder may hold another
    package beside its entry point, ``server/package.json``), else the server folder's own; None: neither."""
    given = entry.get("cwd")
    cwd = base / given if isinstance(given, str) else base
    for arg in entry_list(entry, "args"):
        if not isinstance(arg, str) or not arg.endswith(SCRIPT[1:]):
            continue
        script = Path(os.path.normpath(cwd / arg))
        if not script.is_relative_to(folder):
            continue
        for parent in script.parents:
            if (parent / "package.json").is_file():
                return parent
            if parent == folder:
                break
    return folder if (folder / "package.json").is_file() else None


def _own_output(entry: JsonObject, folder: Path, out: Completion) -> None:
    """`paths` keeping the folder a server confines its saves to (`own_output_folder`), and that folder's
    variable set to the server's working directory when the entry does not set it, so that a path the model
    writes (``./media/deck.pptx``) is saved where it says, not one folder deeper."""
    found = own_output_folder(python_files(folder))
    if found is None or "paths" in entry:
        return
    variable, default, where = found
    env = entry_object(entry, "env")
    folder_value = env.get(variable, default)
    if not isinstance(folder_value, str) or folder_value.startswith("/") or ".." in folder_value.split("/"):
        return
    keep = f"./{folder_value.removeprefix('./').rstrip('/')}"
    entry["paths"] = {"mode": "workspace", "keep": [keep]}
    out.added.append(f"paths: keep {keep} ({where} saves only under ${variable}, default {default})")
    if variable not in env:
        entry["env"] = {**env, variable: "."}
        out.added.append(f"env: {variable}=. (relative saves under the working directory, so "
                         f"{keep}/x lands there, not in {default}/{default.removeprefix('./')}/x)")


def _file(entry: JsonObject, script: Path, lines: dict[str, str] | None, requirements: Path | None,
          out: Completion) -> None:
    """Give a single-file Python server an environment with what it imports: the requirements file's lines
    that provide its imports (never the whole file), else distributions of the imports' names."""
    out.kind = "file"
    runs = in_environment(entry)
    if isinstance(runs, str) or runs[0] != "python":
        out.missing.append(f"install: a single file run with {entry['command']}, not python")
        return
    derived = Derived(out.name, None)
    pin = mcp_pin([script], derived)
    try:
        modules = third_party_imports(script)
    except ValueError as exc:
        out.missing.append(f"install: {exc}")
        return
    found, left = distributions_of(modules, lines)
    if pin:
        found = [d for d in found if d != "mcp"]
    if found or pin:
        entry["install"] = {"requirements": [*found, *pin]}
        source = f"the lines of {requirements.name} providing its imports" if requirements else "its imports"
        out.added.append(f"install: {source} ({', '.join(found)})")
        out.added += derived.sources
        _system(found, out)
    elif not modules:
        out.added.append("install: nothing (it imports the standard library only)")
    if left:
        out.missing.append(f"install: imports no requirement line names and no distribution of the same name "
                           f"known here provides: {', '.join(left)} (name them in its install block, or give "
                           "--requirements)")
    _inherit(entry, read_in_file(script), out)


def _system(requirements: list[str], out: Completion) -> None:
    packages = system_packages(n for n in map(requirement_name, requirements) if n)
    if packages:
        out.added.append(f"system packages: {' '.join(packages)} (python scripts/servers.py system-deps)")


def _registry_pin(entry: JsonObject, package: str | None, lines: dict[str, str] | None, registry: bool,
                  out: Completion) -> None:
    """An ``uvx PKG`` or ``npx PKG`` entry no folder vendors: an install block with PKG at the version it names,
    else the requirements file's line or the registry's newest (so ``install`` fetches it once and the server
    starts offline); nothing when none is known."""
    found: tuple[JsonObject, str] | None = None
    why = "" if registry else "; the registry was not asked"
    if package and entry["command"] == "npx":
        pin = npm_pin(package, registry)
        if isinstance(pin, str) and " has no " in pin:
            out.missing.append(f"install: {pin}, so npx cannot fetch it either")
            return
        if isinstance(pin, tuple):
            found, why = ({"npm": [pin[0]]}, f"{pin[0]}, {pin[1]}"), ""
        else:
            why = f"; {pin}"
    elif package:
        name = re.split(r"[<>=!~\[;@ ]", package, maxsplit=1)[0]
        named = re.fullmatch(r"([A-Za-z0-9._-]+)(?:==|@)([A-Za-z0-9.+!-]+)", package)
        if named and named.group(2) != "latest":
            found = ({"requirements": [f"{named.group(1)}=={named.group(2)}"]},
                     f"{named.group(1)}=={named.group(2)}, the version it names")
        elif (release := module_distribution(name, lines, registry)) is not None:
            found = ({"requirements": [*release[0]]}, f"{', '.join(release[0])}, from {release[1]}")
    if found is None:
        out.added.append(f"nothing to install: {entry['command']} fetches its package when the server starts "
                         f"(an install block with the package pinned would run it offline{why})")
        return
    entry["install"] = found[0]
    out.added.append(f"install: {found[1]} (fetched once by install instead of at every start)")


def _package(entry: JsonObject, base: Path, root: Path, lines: dict[str, str] | None, registry: bool,
             out: Completion) -> None:
    """An ``uvx PKG`` entry runs the folder under DIR that vendors PKG (the version the benchmark was built
    with, with the SDK versions of its ``uv.lock``) instead of the newest release fetched at start; other
    ``uvx`` and ``npx`` entries get their package pinned (`_registry_pin`)."""
    out.kind = "package"
    args = [a for a in entry_list(entry, "args") if isinstance(a, str)]
    package = args[args.index("--from") + 1] if "--from" in args[:-1] else next(
        (a for a in args if not a.startswith("-")), None)
    vendored = vendored_project(re.split(r"[=<>@\[ ]", package)[0], root) if entry["command"] == "uvx" and \
        package else None
    if vendored is None:
        _registry_pin(entry, package, lines, registry, out)
        return
    folder = vendored.folder
    derived = Derived(out.name, None)
    pins = lock_pins(folder) or mcp_pin(python_files(folder), derived)
    where = "its uv.lock" if (folder / "uv.lock").is_file() else "its files"
    if vendored.builds:
        first, what = local_path(_rel(folder, base)), f"the vendored folder {_rel(folder, base)}"
    else:
        first, what = f"{vendored.name}=={vendored.version}", f"the version {_rel(folder, base)} names"
    entry["install"] = {"requirements": [first, *pins]}
    version = "" if vendored.version is None else vendored.version
    out.added.append(f"install: {what} ({vendored.name} {version}) instead of the newest "
                     "release uvx fetches" + (f"; {', '.join(pins)} from {where}" if pins else ""))
    _inherit(entry, read_in_files(folder), out)


def _module(entry: JsonObject, lines: dict[str, str] | None, registry: bool, out: Completion) -> bool:
    """``python -m MODULE`` run from no folder: the distribution named like the module; False when none is."""
    args = entry_list(entry, "args")
    runs = in_environment(entry)
    if isinstance(runs, str) or runs[0] != "python" or len(args) < 2 or args[0] != "-m" or \
            not isinstance(args[1], str):
        return False
    found = module_distribution(args[1], lines, registry)
    if found is None:
        return False
    out.kind = "module"
    entry["install"] = {"requirements": [*found[0]]}
    out.added.append(f"install: {', '.join(found[0])} (the distribution of module {args[1]}, from {found[1]})")
    _system(found[0], out)
    return True


def complete_entry(name: str, given: JsonValue, base: Path, root: Path, requirements: Path | None,
                   registry: bool = True, rewritten: list[str] | None = None) -> tuple[JsonValue, Completion]:
    """One entry completed (a new object; the given one is unchanged) and how; `rewritten` says how the entry
    was already rewritten into a form this reads (`rollout.mcp.published.plain_entry`)."""
    if not isinstance(given, dict) or not isinstance(given.get("command"), str) or not given["command"]:
        return given, Completion(name, "other", False, missing=["not an entry with a command"])
    out = Completion(name, "other", given.get("disabled") is True, added=list(rewritten or []))
    entry: JsonObject = {k: (list(v) if isinstance(v, list) else v) for k, v in given.items()}
    if "install" in entry or "python" in entry:
        out.kind = "kept"
        out.added.append(f"kept: it names its own {'install block' if 'install' in entry else 'python'}")
    elif entry["command"] in PACKAGE_RUNNERS:
        _package(entry, base, root, requirement_lines(requirements) if requirements else None, registry, out)
    else:
        target = pointed(entry, base, root)
        lines = requirement_lines(requirements) if requirements else None
        if target is None:
            if not _module(entry, lines, registry, out):
                args = entry_list(entry, "args")
                looked = ("in the requirements file" if lines is not None else "no requirements file given") + \
                    ("" if registry else "; the registry was not asked")
                named = f", and no distribution of its name was found ({looked})" if args[:1] == ["-m"] else ""
                out.missing.append(f"install: {' '.join(entry_words(entry))} runs nothing under {root}"
                                   f"{named} (name what it needs in an install block)")
        elif target[1]:
            _file(entry, target[0], lines, requirements, out)
        else:
            _folder(entry, target[0], base, out)
    if out.added and ("install" in entry or rewritten) and out.kind != "kept":
        entry["_derived"] = "; ".join(out.added)
    return entry, out


def complete_config(root: Path, config: Path, requirements: Path | None = None,
                    registry: bool = True) -> tuple[JsonObject, list[Completion]]:
    """The config at `config` with each entry completed from the server folders and files directly under
    `root` (the written file goes beside it: its relative paths stay as they are), and how each entry was."""
    data = read_json(config, "servers config")
    key, servers = servers_of(data, config)
    variables = root_variables(config)
    base, root = config.resolve().parent, root.resolve()
    completed: JsonObject = {}
    how = []
    for name, entry in servers.items():
        plain, rewritten = plain_entry(f"{key}.{name}", entry, variables, config)
        completed[name], one = complete_entry(name, plain, base, root,
                                              requirements.resolve() if requirements else None, registry, rewritten)
        how.append(one)
    out = {**data, "_derived": f"completed by scripts/servers.py init from the server folders under {root} "
                               f"(Python {sys.version_info.major}.{sys.version_info.minor}); review before use",
           "servers": completed}
    if key != "servers":
        del out[key]  # written under the key the reader reads
    return out, how
