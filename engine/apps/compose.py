"""The one place the Hydra apps' configs are composed: the config roots under conf/, their groups, and
`compose`, what the apps, their command-line check and the tests compose a config with."""

from __future__ import annotations

from collections.abc import Sequence

from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.initialize import get_gh_backup, restore_gh_from_backup
from omegaconf import DictConfig

import engine.apps.config  # noqa: F401  (stores the apps' schemas in Hydra's ConfigStore)
from engine.apps.resolvers import CONF_ROOT as CONF_ROOT
from engine.apps.resolvers import PROJECT_ROOT as PROJECT_ROOT
from engine.apps.resolvers import config_groups as config_groups
from engine.apps.resolvers import config_roots as config_roots


def compose(app: str, overrides: Sequence[str] = (), *, hydra: bool = False) -> DictConfig:
    """The config of conf/<app>/ with these overrides, unresolved (with Hydra's own node when `hydra`),
    checked against the app's schema (engine.apps.config); Hydra's exception when it cannot compose it.
    Composable inside a running app too: the running app's Hydra is put back afterwards."""
    backup = get_gh_backup()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF_ROOT / app), version_base="1.3"):
            return hydra_compose(config_name="config", overrides=list(overrides), return_hydra_config=hydra)
    finally:
        restore_gh_from_backup(backup)
