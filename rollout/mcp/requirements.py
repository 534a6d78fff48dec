"""What a Python server needs installed, derived from what it imports, runs and vendors.

- `requirement_lines`: the lines of a requirements file by distribution name;
- `distributions_of`: the requirement lines (else the distributions) providing a file's imports, so a
  single-file server installs what it imports and nothing else of a long requirements file;
- `module_distribution`: the distribution of a ``python -m MODULE`` that no folder provides, from the
  requirements file or the package registry (PyPI's JSON API, one look-up per name tried);
- `vendored_project`: the folder under DIR whose ``pyproject.toml`` names the package or script an
  ``uvx PKG`` entry runs, and `lock_pins`: the versions its ``uv.lock`` pins for the MCP SDK it was
  built with (``mcp``, ``fastmcp``, ``pydantic``, ``pydantic-core``);
- `system_packages`: the system (Debian) packages some distributions load at run time
  (``pyzbar``: ``libzbar0``), and whether this machine has each;
- `node_build_packages`: the headers a Node build with a native module compiles against (Debian's node:
  ``libnode-dev``), and `node_headers_prefix`, the local node's prefix holding them.
"""

from __future__ import annotations

import ctypes.util
import json
import re
import shutil
import subprocess
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib.metadata import packages_distributions
from pathlib import Path

IMPORT_NAMES = {
    "cv2": "opencv-python", "PIL": "Pillow", "bs4": "beautifulsoup4", "yaml": "PyYAML",
    "dotenv": "python-dotenv", "sklearn": "scikit-learn", "skimage": "scikit-image", "pptx": "python-pptx",
    "docx": "python-docx", "fitz": "PyMuPDF", "dateutil": "python-dateutil", "jwt": "PyJWT",
    "serial": "pyserial", "Crypto": "pycryptodome", "attr": "attrs", "magic": "python-magic",
    "google": "google-genai",
}
"""Import names whose distribution has another name (checked after the requirement lines' own names)."""

ALTERNATIVES = {"opencv-python": ("opencv-python-headless", "opencv-contrib-python",
                                  "opencv-contrib-python-headless")}
"""Distributions that provide the same import as another (a requirements file may name any of them)."""

LOCK_PINNED = ("mcp", "fastmcp", "pydantic", "pydantic-core")
"""The distributions pinned from a vendored project's ``uv.lock``: the MCP SDK and its data model, whose
newer releases change the tools or stop the server starting."""

SYSTEM_PACKAGES: dict[str, tuple[str, ...]] = {
    "pyzbar": ("libzbar0",), "pytesseract": ("tesseract-ocr",), "mcp-ocr": ("tesseract-ocr", "poppler-utils"),
    "tesserocr": ("tesseract-ocr",), "opencv-python": ("libgl1", "libglib2.0-0"),
    "python-magic": ("libmagic1",), "pdf2image": ("poppler-utils",),
}
"""Distributions that load a system library or program at run time, and the Debian packages providing it
(``mcp-ocr``: tesseract to start, poppler's ``pdfinfo``/``pdftoppm`` for its ``perform_pdf_ocr`` tool, through
pdf2image)."""

TOOL_NEEDS: dict[tuple[str, str], str] = {
    ("mcp-ocr", "poppler-utils"): "its perform_pdf_ocr tool (pdf2image runs pdfinfo and pdftoppm)",
    ("pdf2image", "poppler-utils"): "PDF pages as images (pdf2image runs pdfinfo and pdftoppm)",
}
"""(distribution, system package) -> what needs the package where a server can start without it: a tool fails."""

NODE_HEADERS = "libnode-dev"
"""Debian's package of the headers of Debian's node (``/usr/include/node``), which node-gyp compiles against."""

_PRESENT: dict[str, Callable[[], bool]] = {
    "libzbar0": lambda: ctypes.util.find_library("zbar") is not None,
    "tesseract-ocr": lambda: shutil.which("tesseract") is not None,
    "libgl1": lambda: ctypes.util.find_library("GL") is not None,
    "libglib2.0-0": lambda: ctypes.util.find_library("glib-2.0") is not None,
    "libmagic1": lambda: ctypes.util.find_library("magic") is not None,
    "poppler-utils": lambda: shutil.which("pdftoppm") is not None,
    NODE_HEADERS: lambda: node_headers_prefix() is not None,
}
_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
REGISTRY = "https://pypi.org/pypi/{name}/json"


def normal(name: str) -> str:
    """A distribution name as the registries compare them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_lines(path: Path) -> dict[str, str]:
    """normal name -> the line, for each requirement of a requirements file (options and comments skipped)."""
    lines: dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split(" #", 1)[0].strip()
        match = _NAME.match(line)
        if line and not line.startswith(("#", "-")) and match:
            lines.setdefault(normal(match.group(1)), line)
    return lines


@cache
def _installed() -> Mapping[str, list[str]]:
    """module -> the distributions of this interpreter providing it (read once: it scans every one)."""
    return packages_distributions()


def _candidates(module: str) -> list[str]:
    """Distribution names that may provide an import, most likely first."""
    named = [module, IMPORT_NAMES.get(module, "")]
    named += [d for d in _installed().get(module, [])]
    out = []
    for name in named:
        if name and normal(name) not in out:
            out.append(normal(name))
            out += [normal(a) for a in ALTERNATIVES.get(name, ())]
    return out


def distributions_of(modules: Iterable[str], lines: dict[str, str] | None) -> tuple[list[str], list[str]]:
    """(requirements, modules left) for a file's third-party imports: the requirement line of `lines` naming a
    distribution that provides each (``cv2`` -> ``opencv-python``), else, with no line for it, the distribution
    of the import's own name that this interpreter has (``requests``); imports found neither way are left,
    never guessed."""
    found: list[str] = []
    left = []
    for module in modules:
        candidates = _candidates(module)
        line = next((lines[c] for c in candidates if lines and c in lines), None)
        if line is None:
            known = [d for d in _installed().get(module, []) if normal(d) == normal(module)]
            line = known[0] if known else None
        if line is None:
            left.append(module)
        elif line not in found:
            found.append(line)
    return found, left


def _registry_release(name: str, timeout: float) -> tuple[str, list[str]] | None:
    """(newest version, its requirements) of a distribution on PyPI; None when it has none (or the registry
    cannot be reached)."""
    try:
        with urllib.request.urlopen(REGISTRY.format(name=name), timeout=timeout) as response:
            info: object = json.load(response).get("info") or {}
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(info, dict):
        return None
    version, requires = info.get("version"), info.get("requires_dist") or []
    return (version, [r for r in requires if isinstance(r, str)]) if isinstance(version, str) else None


_MCP1_FLOOR = re.compile(r"^mcp(?:\[[^\]]*\])?\s*>=\s*1\.[0-9.]*\s*$")


def module_distribution(module: str, lines: dict[str, str] | None, registry: bool = True,
                        timeout: float = 10.0) -> tuple[list[str], str] | None:
    """(requirements, where they came from) for ``python -m MODULE``: the requirements file's line naming a
    distribution of the module's name (``mcp_ocr`` -> ``mcp-ocr``), else that distribution on PyPI, pinned to
    its newest version, with ``mcp<2`` when that release asks for ``mcp>=1.x`` and no bound above (written
    for mcp 1.x, which mcp 2 no longer runs); None when neither names one."""
    top = module.split(".")[0]
    candidates = _candidates(top)
    for name in candidates:
        if lines and name in lines:
            return [lines[name]], "the requirements file"
    if registry:
        for name in candidates:
            release = _registry_release(name, timeout)
            if release is not None:
                version, requires = release
                pin = ["mcp<2"] if any(_MCP1_FLOOR.match(r.split(";")[0].strip()) for r in requires) else []
                return [f"{name}=={version}", *pin], ("the package registry (PyPI), its newest version" +
                                                      ("; mcp<2: it asks for mcp>=1.x with no bound above"
                                                       if pin else ""))
    return None


def read_pyproject(folder: Path) -> dict[str, object] | None:
    """The folder's parsed ``pyproject.toml``, None when it has none or it does not parse."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        return None
    try:
        return tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


@dataclass(frozen=True)
class Vendored:
    """A project folder under DIR: its ``[project]`` name and version (as written; None when it names none) and
    whether it has a ``[build-system]`` (pip can then build it from the folder)."""

    folder: Path
    name: str
    version: object
    builds: bool


def vendored_project(package: str, root: Path) -> Vendored | None:
    """The folder directly under `root` whose ``pyproject.toml`` names the project `package` or has a script of
    that name; None when none does."""
    wanted = normal(package)
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        data = read_pyproject(folder) or {}
        project = data.get("project")
        if not isinstance(project, dict) or not isinstance(project.get("name"), str):
            continue
        name, listed = project["name"], project.get("scripts")
        scripts = listed if isinstance(listed, dict) else {}
        if normal(name) == wanted or package in scripts:
            return Vendored(folder, name, project.get("version"), "build-system" in data)
    return None


def lock_pins(folder: Path) -> list[str]:
    """``name==version`` for each of `LOCK_PINNED` that the folder's ``uv.lock`` holds (none without one)."""
    try:
        text = (folder / "uv.lock").read_text(encoding="utf-8")
    except OSError:
        return []
    versions = dict(re.findall(r'^name = "([^"]+)"\nversion = "([^"]+)"', text, re.MULTILINE))
    return [f"{name}=={versions[name]}" for name in LOCK_PINNED if name in versions]


def requirement_name(line: str) -> str | None:
    """The normal distribution name of a requirement line (None for a path, an option or a URL)."""
    match = _NAME.match(line)
    if line.startswith(("-", ".", "/")) or "://" in line or match is None:
        return None
    return normal(match.group(1))


def system_packages(distributions: Iterable[str]) -> list[str]:
    """The system packages the given distributions (normal names) load at run time, in table order."""
    names = {normal(d) for d in distributions}
    return list(dict.fromkeys(p for d, packages in SYSTEM_PACKAGES.items() if normal(d) in names for p in packages))


def missing_here(packages: Iterable[str]) -> list[str]:
    """The system packages this machine lacks (those it cannot probe count as present)."""
    return [p for p in packages if p in _PRESENT and not _PRESENT[p]()]


def environment_distributions(env_folder: str | Path | None) -> list[str]:
    """The normal names of the distributions installed in an environment folder's virtualenv (none when it
    has none)."""
    if env_folder is None:
        return []
    found = Path(env_folder).glob("venv/lib/python*/site-packages/*.dist-info")
    return sorted({normal(p.name[:-len(".dist-info")].split("-")[0]) for p in found})


def system_package_uses(requirements: Iterable[str], env_folder: str | Path | None) -> dict[str, str]:
    """System package -> what needs it, for the system packages of a server's Python distributions (its
    requirements and what its environment installed): `TOOL_NEEDS`' words where it has them."""
    names = {normal(n) for n in [*filter(None, map(requirement_name, requirements)),
                                 *environment_distributions(env_folder)]}
    uses: dict[str, str] = {}
    told: set[str] = set()
    for dist, packages in SYSTEM_PACKAGES.items():
        for package in packages if normal(dist) in names else ():
            said = TOOL_NEEDS.get((dist, package))
            if package not in uses or (said and package not in told):
                uses[package] = said or f"{dist} loads it at run time"
                told.update([package] if said else [])
    return uses


def server_system_packages(requirements: Iterable[str], env_folder: str | Path | None,
                           build_dir: str | Path | None = None) -> list[str]:
    """The system packages a server needs: those of its requirements and of what its environment installed, and
    the node headers of its Node build (see `node_build_packages`)."""
    names = [n for n in map(requirement_name, requirements) if n]
    return system_packages([*names, *environment_distributions(env_folder)]) + \
        (node_build_packages(build_dir, installed_nodejs_version()) if build_dir else [])


def node_headers_prefix() -> str | None:
    """The prefix of the ``node`` on PATH when it holds that node's headers (``include/node/node.h``): what
    ``npm_config_nodedir`` names so that node-gyp builds native modules against them instead of downloading
    headers from nodejs.org. None without a node or without its headers."""
    found = shutil.which("node")
    if found is None:
        return None
    prefix = Path(found).resolve().parent.parent
    return str(prefix) if (prefix / "include" / "node" / "node.h").is_file() else None


def native_node_build(build_dir: str | Path | None) -> bool:
    """Whether the Node project in `build_dir` compiles a native module on install: its ``package-lock.json``
    has a package with an install script that depends on node-gyp (``sqlite3``), or it has a ``binding.gyp``."""
    if build_dir is None:
        return False
    folder = Path(build_dir)
    if (folder / "binding.gyp").is_file():
        return True
    try:
        lock = json.loads((folder / "package-lock.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    packages = lock.get("packages") if isinstance(lock, dict) else None
    return isinstance(packages, dict) and any(
        isinstance(p, dict) and p.get("hasInstallScript") and any(
            isinstance(p.get(k), dict) and "node-gyp" in p[k]
            for k in ("dependencies", "optionalDependencies", "peerDependencies"))
        for p in packages.values())


def debian_node(version: str | None) -> bool:
    """Whether the installed ``nodejs`` package of that version is Debian's own (``18.19.0+dfsg-6~deb12u2``), whose
    headers are a package of their own, rather than NodeSource's (``20.20.2-1nodesource1``), which has them."""
    return version is not None and "nodesource" not in version


def installed_nodejs_version() -> str | None:
    """The version of the Debian package ``nodejs`` when it provides the ``node`` on PATH; None otherwise."""
    found = shutil.which("node")
    if found is None or not shutil.which("dpkg-query") or Path(found).resolve().parent != Path("/usr/bin"):
        return None
    done = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "nodejs"], capture_output=True, text=True,
                          check=False)
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def node_build_packages(build_dir: str | Path | None, nodejs_version: str | None) -> list[str]:
    """The system packages a Node build needs: Debian's node headers when it compiles a native module and the
    node is Debian's (`nodejs_version`, see `installed_nodejs_version`); nothing otherwise."""
    return [NODE_HEADERS] if native_node_build(build_dir) and debian_node(nodejs_version) else []
