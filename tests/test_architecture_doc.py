"""docs/architecture.md's tables stay in step with the tree: every path the page names exists, and every
package of engine/, kernels/ and rollout/ and every script under scripts/ is named on the page (a package
or a script added without a line there fails here)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "architecture.md"
TOP = ("engine", "kernels", "rollout", "scripts", "conf", "tests")
NOT_PACKAGES = ("rollout/demo",)
"""Folders of Python files that are not the project's modules: the demo data sets' check modules (mypy
excludes them too). The page names the folder all the same."""


def named_paths(text: str) -> set[str]:
    """Every backticked span of the page that is a path in the tree (`engine/stats/`, `kernels/bootstrap.py`):
    it starts with a top folder, holds only path characters (no `<name>` placeholders, no spaces) and ends as a
    folder (`/`) or a file (`.py`, `.yaml`, ...), not as a dotted name (`engine/metrics.task_scores`)."""
    spans = re.findall(r"`([^`\s]+)`", text)
    return {span for span in spans
            if re.fullmatch(rf"(?:{'|'.join(TOP)})/(?:[\w./-]*(?:/|\.(?:py|yaml|json|jsonl|md)))?", span)}


def packages() -> list[str]:
    """Every folder of engine/, kernels/ and rollout/ that holds Python files, as `engine/stats/`."""
    found = set()
    for top in ("engine", "kernels", "rollout"):
        for path in (ROOT / top).rglob("*.py"):
            folder = path.parent.relative_to(ROOT).as_posix()
            if "__pycache__" not in folder and not folder.startswith(NOT_PACKAGES):
                found.add(folder + "/")
    return sorted(found)


def scripts() -> list[str]:
    """Every script under scripts/, as `scripts/bench.py`."""
    return sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "scripts").glob("*.py"))


def test_every_path_the_page_names_exists() -> None:
    named = named_paths(PAGE.read_text(encoding="utf-8"))
    assert len(named) > 30, sorted(named)  # the tables are read at all
    missing = sorted(path for path in named if not (ROOT / path).exists()
                     or (path.endswith("/") and not (ROOT / path).is_dir()))
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_every_package_and_script_is_named_on_the_page() -> None:
    named = named_paths(PAGE.read_text(encoding="utf-8"))
    found = packages() + scripts()
    assert "engine/stats/" in found and "scripts/bench.py" in found, found  # the walk finds the tree
    missing = [path for path in found if path not in named]
    assert not missing, (f"docs/architecture.md does not name {missing}: give each package a row of the layout "
                         "table (or of the step table) and each script a mention in the scripts row")
