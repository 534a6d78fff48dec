"""The rollout command: ``python scripts/rollout.py [group=option] [key=value]`` (or ``m3bench-rollout``).

Its Hydra config root is conf/rollout/ (config.yaml and the groups model, exposure, preset), and the data
sets of conf/shared/data/ (shared with the score and judge apps) are its tasks: ``tasks=NAME`` picks one
(the shorthand of ``data=NAME``; ``tasks=demo`` is ``rollout_demo``: engine.apps.shorthands.tasks_shorthand);
`--help` lists every setting. A run writes its predictions to
``<results_dir>/<model.name>_test_mcp_fuzzy.json`` and everything else, Hydra's
log and config included, to its run folder ``<results_dir>/rollout/<model.name>``. Bad input ends the run
with one line on stderr and exit status 2; a run where some tasks were lost to the infrastructure exits with 1
(run it again to retry them), else 0.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from engine.apps import kit
from engine.apps.compose import plain_config
from engine.apps.shorthands import resolved_config, tasks_shorthand
from engine.contract import InputError
from rollout.runner import run

PACKAGE_DIR = Path(__file__).resolve().parent

# ${rollout_path:servers.json}: a path inside the rollout package, wherever the package lives.
OmegaConf.register_new_resolver("rollout_path", lambda rel: str(PACKAGE_DIR / rel), replace=True)


def compose_config(overrides: Sequence[str] = ()) -> dict[str, Any]:
    """The resolved config a command line with these overrides would run with (tasks=NAME spelt out), as a
    plain dict (engine.apps.shorthands.resolved_config)."""
    return resolved_config("rollout", overrides)


def run_config(cfg: DictConfig) -> int:
    """Run the configured stage(s); bad input is one line on stderr and status 2."""
    try:
        return run(plain_config(cfg))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


# New keys a rollout reads: a model's (and the curator's) extra request fields.
OPEN_KEYS = ("model.params.*", "curate.model.params.*")

NAME_KEYS = ("model.name",)
"""The settings whose values become part of file and folder names (engine.contract.check_name)."""

main = kit.hydra_app("rollout", run_config, open_keys=OPEN_KEYS, names=NAME_KEYS, rewrite=tasks_shorthand)
