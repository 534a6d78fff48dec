"""Every app's config composes, and resolves, with every option of every one of its groups (as
lightning-hydra-template's tests/test_configs.py does): a group option that cannot be composed, or a
setting whose interpolation cannot be resolved, fails here rather than on a user's command line."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from omegaconf import OmegaConf

import engine.apps.score  # noqa: F401  (registers the kit's resolvers)
import rollout.cli  # noqa: F401  (registers the rollout's resolvers)
import rollout.judges.cli  # noqa: F401
from engine.apps.kit import CONF_ROOT, config_groups

APPS = sorted(d.name for d in CONF_ROOT.iterdir() if (d / "config.yaml").is_file())
CHOICES = [(app, group, option) for app in APPS for group, options in config_groups(app).items()
           for option in options]


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
