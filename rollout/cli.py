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

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException

from engine.apps import kit
from engine.apps.compose import compose, config_groups
from engine.apps.config import APPS, typed
from engine.apps.config.fields import TASK_IDS
from engine.apps.config.rollout import RolloutConfig
from engine.apps.kit import closest
from engine.apps.overrides import CommandLineError, override_values
from engine.contract import InputError
from engine.contract.settings import setting_text
from rollout.runner import run

SPEC = APPS["rollout"]

TASKS_ALIASES = {"demo": "rollout_demo"}
"""The rollout's own names of shared data sets: tasks=demo is the rollout demo (data=demo is the score
app's generated demo, which has no tasks)."""


def tasks_shorthand(argv: list[str]) -> list[str]:
    """argv with `tasks=NAME` (a data set of the shared group data, or a sweep of them) spelt out as
    `data=NAME` (TASKS_ALIASES first), a NAME the group lacks a CommandLineError naming the closest; and
    `tasks.ids=ID` (one id) as the list of it, `tasks.ids=[ID]`, what no task id can be refused in one line."""
    options = config_groups("rollout")["data"]
    out = []
    for token in argv:
        try:
            override = OverridesParser.create().parse_override(token) \
                if token.startswith(("tasks=", "tasks.ids=")) else None
        except HydraException:
            override = None  # the kit's check says why
        if override is not None and token.startswith("tasks.ids="):
            out.append(_one_id_listed(token, override.value()) if not override.is_sweep_override() else token)
            continue
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


def _one_id_listed(token: str, value: object) -> str:
    """`tasks.ids=ID` as `tasks.ids=[ID]` (a list or null as it is); a value holding what no task id is (a
    mapping, a list in the list, a flag, a fraction) is a CommandLineError saying so."""
    problem = TASK_IDS.problem(value)
    if problem is not None:
        raise CommandLineError(f"tasks.ids={setting_text(value)}: {problem}")
    if value is None or isinstance(value, list):
        return token
    return f"tasks.ids=[{token.split('=', 1)[1]}]"


def compose_config(overrides: Sequence[str] = ()) -> RolloutConfig:
    """The typed config a command line with these overrides would run with (its shorthands spelt out:
    `tasks_shorthand`), made as the app kit makes it (engine.apps.config.typed)."""
    return typed(SPEC, compose("rollout", tasks_shorthand(list(overrides))), missing_as_none=SPEC.missing_as_none)


def run_config(cfg: RolloutConfig, run_folder: Path) -> int:
    """Run the configured stage(s) (the run folder is cfg.run_dir, Hydra's); bad input is one line on stderr
    and status 2."""
    try:
        return run(cfg)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


OPEN_KEYS = SPEC.open_keys
"""New keys a rollout reads: a model's (and the curator's) extra request fields (engine.apps.config.rollout)."""

NAME_KEYS = SPEC.names
"""The settings whose values become part of file and folder names (engine.contract.check_name)."""

main = kit.hydra_app(SPEC, run_config, rewrite=tasks_shorthand)
