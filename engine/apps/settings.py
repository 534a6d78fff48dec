"""The composed configs of the Hydra apps: what a command line would run with, and what a run was told
(the settings its config changes from the app's defaults, the config of conf/<app>/ composed with no
override; a group option or a key changes them, an environment variable the config reads does not)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.initialize import get_gh_backup, restore_gh_from_backup
from omegaconf import DictConfig, OmegaConf

from engine.apps.kit import CONF_ROOT

_ABSENT = object()


def compose_config(app: str, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """The resolved config the command line of app (config root conf/<app>/) with these overrides
    would run with, as a plain dict."""
    with initialize_config_dir(config_dir=str(CONF_ROOT / app), version_base="1.3"):
        cfg = compose(config_name="config", overrides=list(overrides))
    return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]


def default_config(app: str) -> DictConfig:
    """The config of conf/<app>/ with no override, unresolved; composable inside a running app too
    (the running app's Hydra is put back afterwards)."""
    backup = get_gh_backup()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF_ROOT / app), version_base="1.3"):
            return compose(config_name="config")
    finally:
        restore_gh_from_backup(backup)


def _changed(default: Any, given: Any, key: str) -> Iterator[str]:
    if isinstance(default, dict) and isinstance(given, dict):
        for name in sorted({*default, *given}, key=str):
            yield from _changed(default.get(name, _ABSENT), given.get(name, _ABSENT), f"{key}.{name}" if key else name)
    elif default != given:
        yield key


def changed_settings(app: str, cfg: DictConfig) -> list[str]:
    """The dotted keys whose (unresolved) value in cfg differs from the app's defaults, in key order: a
    leaf, or a node added or removed whole. A setting given its default value is not changed."""
    default = OmegaConf.to_container(default_config(app), resolve=False)
    given = OmegaConf.to_container(cfg, resolve=False)
    given.pop("hydra", None)  # type: ignore[union-attr]
    return list(_changed(default, given, ""))
