"""What the Hydra apps share: their config roots, the run folder, and the entry-point wrapper."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CONF_ROOT = PROJECT_ROOT / "conf"

# ${project_path:rollout/demo/reference.json}: a path inside the project, wherever it is installed.
OmegaConf.register_new_resolver("project_path", lambda rel: str(PROJECT_ROOT / rel), replace=True)


def output_folder(cfg: DictConfig) -> Path:
    """The run's output folder: Hydra's run (or multirun job) folder, else `output_dir`."""
    if HydraConfig.initialized():
        return Path(HydraConfig.get().runtime.output_dir)
    return Path(cfg.output_dir)


def hydra_app(app: str, run: Callable[[DictConfig], int]) -> Callable[[], None]:
    """The entry point of an app whose config root is conf/<app>/: runs `run`, exits with its status."""

    @hydra.main(version_base="1.3", config_path=str(CONF_ROOT / app), config_name="config")
    def main(cfg: DictConfig) -> None:
        code = run(cfg)
        if code:
            sys.exit(code)

    main.__doc__ = f"Entry point of m3bench-{app} (config root conf/{app}/)."
    return main
