"""Every resolver the apps' configs use, registered in this one place when engine.apps.compose is imported
(every composition, the apps' and the tests', goes through it), so any config root composes in a fresh
interpreter without importing the app that reads it:

- ``${project_path:REL}``: a path inside the project, wherever it is installed (conf/shared, rollout/...);
- ``${rollout_path:REL}``: the same under rollout/ (the older spelling of ``${project_path:rollout/REL}``);
- ``${sweep_subdir:${hydra.job.num},${hydra.job.override_dirname}}``: a multirun job's folder (every app's
  hydra.sweep.subdir);
- ``${app_groups:APP}``: the config groups an app's --help lists;
- ``${judged_name:${model},${predictions}}``: the judged model's name, else its file's stem (the judge app's
  folder names).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path

from omegaconf import OmegaConf

PROJECT_ROOT = Path(__file__).resolve().parents[2]
"""The project's folder (conf/, rollout/, engine/ ...)."""
CONF_ROOT = PROJECT_ROOT / "conf"
"""The apps' config roots: conf/<app>/."""


@functools.cache
def config_roots(app: str) -> tuple[Path, ...]:
    """The folders of the app's config groups: conf/<app>/, then the folders its config adds to the search
    path (`hydra.searchpath`, `file://` entries: conf/shared/, whose data sets the score, judge and rollout
    apps share)."""
    entries = OmegaConf.select(OmegaConf.load(CONF_ROOT / app / "config.yaml"), "hydra.searchpath") or []
    return (CONF_ROOT / app, *(Path(e.removeprefix("file://")) for e in entries if e.startswith("file://")))


def config_groups(app: str) -> dict[str, list[str]]:
    """The config groups on the app's search path (not Hydra's) and their options."""
    groups: dict[str, set[str]] = {}
    for root in config_roots(app):
        for d in sorted(root.iterdir()):
            if d.is_dir() and d.name != "hydra":
                groups.setdefault(d.name, set()).update(f.stem for f in d.glob("*.yaml"))
    return {name: sorted(groups[name]) for name in sorted(groups)}


def project_path(rel: str) -> str:
    """A path inside the project."""
    return str(PROJECT_ROOT / rel)


def rollout_path(rel: str) -> str:
    """A path inside the rollout package."""
    return str(PROJECT_ROOT / "rollout" / rel)


def sweep_subdir(num: int, dirname: str) -> str:
    """A multirun job's folder: its swept settings (`hydra.job.override_dirname`, the kit keeps only
    the swept keys in it), with path separators replaced; the job's number when nothing is swept."""
    return dirname.replace("/", "_").replace(os.sep, "_") or str(num)


def app_groups(app: str) -> str:
    """`group: option, ...` for each config group of the app, one a line: the groups of its --help
    (Hydra's own list, $APP_CONFIG_GROUPS, leaves out those of hydra.searchpath)."""
    return "\n".join(f"{name}: {', '.join(options)}" for name, options in config_groups(app).items())


def judged_name(model: str | None, predictions: str | None) -> str:
    """The judged model's name, else its prediction file's stem, else `unnamed`: a folder name."""
    return model or (Path(predictions).stem if predictions else "unnamed")


RESOLVERS: dict[str, Callable[..., str]] = {"project_path": project_path, "rollout_path": rollout_path,
                                            "sweep_subdir": sweep_subdir, "app_groups": app_groups,
                                            "judged_name": judged_name}
"""Every resolver of the apps' configs, by name."""

for _name, _resolver in RESOLVERS.items():
    OmegaConf.register_new_resolver(_name, _resolver, replace=True)
