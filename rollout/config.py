"""Hydra set-up of scripts/rollout.py: conf/rollout/ ahead of conf/ on the config search path.

conf/rollout.yaml is the primary config; its groups (model, exposure, tasks) live in conf/rollout/.
The scoring config has groups of the same names in conf/ (conf/model/gpt5.yaml, ...), so while the
rollout config is composed, conf/rollout/ is put first and ``model=gpt5`` means
conf/rollout/model/gpt5.yaml. Outside `rollout_config()` the search path is left alone, so other
Hydra apps of the project (in the same process too) see their own groups.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from hydra.core.config_search_path import ConfigSearchPath, SearchPathQuery
from hydra.core.plugins import Plugins
from hydra.plugins.search_path_plugin import SearchPathPlugin
from omegaconf import OmegaConf

from rollout.mcp.config import PROJECT_ROOT

CONF_DIR = PROJECT_ROOT / "conf"
_active = False


class RolloutSearchPath(SearchPathPlugin):
    """Puts conf/rollout/ before the primary config directory while the rollout config is composed."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        """Prepend conf/rollout/ ahead of the "main" entry (only inside rollout_config())."""
        if _active:
            search_path.prepend("m3bench-rollout", f"file://{CONF_DIR / 'rollout'}",
                                anchor=SearchPathQuery(provider="main"))


@contextmanager
def rollout_config() -> Iterator[None]:
    """Compose (or run hydra.main on) conf/rollout.yaml inside this block."""
    global _active
    if not OmegaConf.has_resolver("m3bench_root"):
        OmegaConf.register_new_resolver("m3bench_root", lambda: str(PROJECT_ROOT))
    plugins = Plugins.instance()
    if RolloutSearchPath not in plugins.discover(SearchPathPlugin):
        plugins.register(RolloutSearchPath)
    _active = True
    try:
        yield
    finally:
        _active = False
