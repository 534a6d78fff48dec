"""Every app's config composes, and resolves, with every option of every one of its groups (as
lightning-hydra-template's tests/test_configs.py does): a group option that cannot be composed, or a
setting whose interpolation cannot be resolved, fails here rather than on a user's command line. The
data sets (conf/shared/data/) are declared once, each with every setting the apps read, and compose in
each of the three apps that share them."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from omegaconf import OmegaConf

import engine.apps.score  # noqa: F401  (registers the kit's resolvers)
import rollout.cli
import rollout.judges.cli
from engine.apps.compose import CONF_ROOT, config_groups, config_roots
from engine.apps.compose import compose as compose_app
from engine.apps.config import SCHEMAS
from engine.apps.shorthands import spelt_out
from rollout.cli import TASKS_ALIASES

APPS = sorted(d.name for d in CONF_ROOT.iterdir() if (d / "config.yaml").is_file())
CHOICES = [(app, group, option) for app in APPS for group, options in config_groups(app).items()
           for option in options]
SHARED = CONF_ROOT / "shared"
DATA_SETS = sorted(p.stem for p in (SHARED / "data").glob("*.yaml"))
SHARING = ["judge", "rollout", "score"]
DATA_KEYS = ["name", "gt", "references", "tasks", "images_dir"]
"""Every data set's settings, in this order: its name, its reference trajectories, several reference files
(the score app), its tasks file or folder, the folder its tasks' image paths are relative to."""
INTERPOLATION = re.compile(r"^\$\{(oc\.select:)?[A-Za-z_.]+(,[^}]*)?\}$")
"""A setting that reads another one (`${data.gt}`, `${oc.select:data.tasks,null}`)."""

def resolved_config(app: str, argv: list[str]) -> dict[str, Any]:
    """The config the app's command line with these overrides would run with (its shorthands spelt out), as a
    plain dict with its interpolations resolved."""
    plain = OmegaConf.to_container(compose_app(app, spelt_out(app, argv)), resolve=True)
    assert isinstance(plain, dict)
    return {str(k): v for k, v in plain.items()}


def test_every_app_has_a_config_root() -> None:
    assert APPS == ["calibrate", "judge", "rollout", "score"]
    assert len(CHOICES) > 40


@pytest.mark.parametrize(("app", "group", "option"), CHOICES, ids=lambda v: str(v))
def test_every_option_composes_and_resolves(app: str, group: str, option: str, tmp_path: Path,
                                            monkeypatch) -> None:
    monkeypatch.setenv("M3BENCH_HOME", str(tmp_path))
    with initialize_config_dir(version_base="1.3", config_dir=str(CONF_ROOT / app)):
        cfg = compose(config_name="config", overrides=[f"{group}={option}"], return_hydra_config=True)
    assert OmegaConf.select(cfg, f"hydra.runtime.choices.{group}") == option
    HydraConfig.instance().set_config(cfg)  # for ${hydra:...} and the run folder's interpolations
    try:
        for key in (k for k in cfg if k != "hydra"):
            value = OmegaConf.select(cfg, str(key), throw_on_missing=False)  # resolves a leaf
            if OmegaConf.is_config(value):
                OmegaConf.to_container(value, resolve=True, throw_on_missing=False)  # resolves every leaf below
    finally:
        HydraConfig.instance().cfg = None  # later tests see no Hydra run, as a plain process does


def test_the_apps_read_hydra_through_its_public_api() -> None:
    """The kit and the apps compose, list groups and help through Hydra's public API, never hydra._internal."""
    root = CONF_ROOT.parent
    sources = [*(root / "engine" / "apps").glob("*.py"), root / "rollout" / "cli.py",
               root / "rollout" / "judges" / "cli.py"]
    assert [p.name for p in sources if "hydra._internal" in p.read_text(encoding="utf-8")] == []


def _declared(name: str) -> dict[str, Any]:
    """A data set as its file declares it, resolved."""
    return OmegaConf.to_container(OmegaConf.load(SHARED / "data" / f"{name}.yaml"), resolve=True)


def _leaves(node: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted key -> value of every leaf of a plain config (lists are leaves)."""
    if isinstance(node, dict):
        return {k: v for key, value in node.items() for k, v in _leaves(value, f"{prefix}{key}.").items()}
    return {prefix[:-1]: node}


def test_the_data_sets_are_shared_by_the_score_judge_and_rollout_apps() -> None:
    assert [app for app in APPS if SHARED in config_roots(app)] == SHARING
    assert DATA_SETS == ["demo", "m3bench", "mcpverse", "mcpverse_demo", "rollout_demo", "tobench", "tobench_demo",
                         "vtb", "vtb_demo"]
    for app in SHARING:
        assert config_groups(app)["data"] == DATA_SETS


@pytest.mark.parametrize("name", DATA_SETS)
def test_a_data_set_declares_every_setting_and_its_own_name(name: str) -> None:
    declared = OmegaConf.load(SHARED / "data" / f"{name}.yaml")
    assert list(declared) == DATA_KEYS and declared.name == name


def test_no_data_set_is_declared_twice(tmp_path: Path, monkeypatch) -> None:
    """No app has a data group of its own (nor the rollout its former tasks group), no two data sets name
    the same file, and no setting outside a data set names a data set's file: it reads the data set's
    setting instead (the rollout's tasks.file is ${oc.select:data.tasks,null}, the scripted model's script
    ${tasks.reference})."""
    monkeypatch.setenv("M3BENCH_HOME", str(tmp_path))
    for app in APPS:
        assert not {d.name for d in (CONF_ROOT / app).iterdir() if d.is_dir()} & {"data", "tasks"}, app
    files = [v for name in DATA_SETS for k, v in _declared(name).items()
             if k in ("gt", "tasks") and v not in (None, "???")]
    assert len(files) == len(set(files)) and len(files) >= 10
    copies = []
    for app, group, option in CHOICES:
        with initialize_config_dir(version_base="1.3", config_dir=str(CONF_ROOT / app)):
            cfg = compose(config_name="config", overrides=[f"{group}={option}"])
        raw = _leaves(OmegaConf.to_container(cfg, resolve=False))
        resolved = _leaves(OmegaConf.to_container(cfg, resolve=True))
        copies += [f"{app} {group}={option}: {key}" for key, value in resolved.items()
                   if value in files and not key.startswith("data.") and not INTERPOLATION.match(str(raw[key]))]
    assert copies == []


@pytest.mark.parametrize(("app", "name"), [(app, name) for app in SHARING for name in DATA_SETS])
def test_every_data_set_composes_in_every_app_that_shares_it(app: str, name: str, tmp_path: Path,
                                                             monkeypatch) -> None:
    monkeypatch.setenv("M3BENCH_HOME", str(tmp_path))
    scripted = ["model=scripted"] if app == "rollout" else []
    cfg = resolved_config(app, [f"data={name}", *scripted])
    assert cfg["data"] == _declared(name)
    if app == "rollout":  # tasks=NAME picks the same data set (tasks=demo: rollout_demo), the tasks node reads it
        spellings = sorted(t for t in {name, *TASKS_ALIASES} if TASKS_ALIASES.get(t, t) == name)
        assert spellings == {"demo": [], "rollout_demo": ["demo", "rollout_demo"]}.get(name, [name])
        assert all(rollout.cli.compose_config([f"tasks={t}", *scripted])
                   == rollout.cli.compose_config([f"data={name}", *scripted]) for t in spellings)
        data, tasks = cfg["data"], cfg["tasks"]
        assert tasks["file"] == (None if data["tasks"] == "???" else data["tasks"])
        assert (tasks["reference"], tasks["images_dir"]) == (data["gt"], data["images_dir"])
        assert cfg["model"]["script"] == data["gt"]  # the scripted model follows the data set's reference


def test_one_compose_function_serves_every_app() -> None:
    """The apps, their command-line check and their shorthands compose through engine.apps.compose.compose
    only: no other module of the project imports Hydra's compose (once four compose_config functions)."""
    root = CONF_ROOT.parent
    found = []
    for path in sorted([*root.glob("engine/**/*.py"), *root.glob("rollout/**/*.py"), *root.glob("scripts/*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in ("hydra", "hydra.compose"):
                found += [f"{path.relative_to(root)}: {a.name}" for a in node.names if a.name == "compose"]
    assert found == ["engine/apps/compose.py: compose"]
    for module, name in (("engine.apps.check", "compose"),
                         ("rollout.cli", "compose"), ("rollout.judges.cli", "compose")):
        source = Path(importlib.import_module(module).__file__ or "").read_text(encoding="utf-8")
        assert re.search(rf"\b{name}\(", source), module


@pytest.mark.parametrize("app", APPS)
def test_every_app_composes_on_its_schema(app: str) -> None:
    """Each config.yaml names its schema (engine.apps.config) first, so that Hydra types its settings."""
    assert OmegaConf.load(CONF_ROOT / app / "config.yaml").defaults[0] == f"{app}_schema"
    assert OmegaConf.get_type(compose_app(app)) is SCHEMAS[app]
