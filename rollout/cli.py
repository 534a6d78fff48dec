"""The rollout command: ``python scripts/rollout.py [group=option] [key=value]`` (or ``m3bench-rollout``).

Its Hydra config root is conf/rollout/ (config.yaml and the groups model, exposure, preset), and the data
sets of conf/shared/data/ (shared with the score and judge apps) are its tasks: ``tasks=NAME`` picks one
(the shorthand of ``data=NAME``; ``tasks=demo`` is ``rollout_demo``: `tasks_shorthand`);
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

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf

from engine.apps import kit
from engine.apps.compose import config_groups, plain_config
from engine.apps.config import APPS
from engine.apps.kit import closest
from engine.apps.overrides import CommandLineError, override_values
from engine.apps.shorthands import resolved_config
from engine.contract import InputError
from rollout.runner import run

PACKAGE_DIR = Path(__file__).resolve().parent

# ${rollout_path:servers.json}: a path inside the rollout package, wherever the package lives.
OmegaConf.register_new_resolver("rollout_path", lambda rel: str(PACKAGE_DIR / rel), replace=True)


TASKS_ALIASES = {"demo": "rollout_demo"}
"""The rollout's own names of shared data sets: tasks=demo is the rollout demo (data=demo is the score
app's generated demo, which has no tasks)."""


def tasks_shorthand(argv: list[str]) -> list[str]:
    """argv with `tasks=NAME` (a data set of the shared group data, or a sweep of them) spelt out as
    `data=NAME` (TASKS_ALIASES first); a NAME the group lacks is a CommandLineError naming the closest."""
    options = config_groups("rollout")["data"]
    out = []
    for token in argv:
        try:
            override = OverridesParser.create().parse_override(token) if token.startswith("tasks=") else None
        except HydraException:
            override = None  # the kit's check says why
        values = override_values(override) if override is not None else None
        if not values:
            out.append(token)
            continue
        names = [TASKS_ALIASES.get(value, value) for value in values]
        for value, name in zip(values, names):
            if name not in options:
                near = closest(value, sorted({*options, *TASKS_ALIASES}), 3)
                raise CommandLineError(f"{token}: no data set {value!r} (conf/shared/data/); "
                                       + (f"closest: {', '.join(near)}" if near else f"options: {', '.join(options)}"))
        out.append(f"data={','.join(names)}")
    return out


def compose_config(overrides: Sequence[str] = ()) -> dict[str, Any]:
    """The resolved config a command line with these overrides would run with (tasks=NAME spelt out), as a
    plain dict (engine.apps.shorthands.resolved_config)."""
    return resolved_config("rollout", tasks_shorthand(list(overrides)))


def run_config(cfg: DictConfig) -> int:
    """Run the configured stage(s); bad input is one line on stderr and status 2."""
    try:
        return run(plain_config(cfg))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


OPEN_KEYS = APPS["rollout"].open_keys
"""New keys a rollout reads: a model's (and the curator's) extra request fields (engine.apps.config.rollout)."""

NAME_KEYS = APPS["rollout"].names
"""The settings whose values become part of file and folder names (engine.contract.check_name)."""

main = kit.hydra_app(APPS["rollout"], run_config, rewrite=tasks_shorthand)
