"""The judge command: ``python scripts/judge.py model=NAME [judges=POOL] [key=value]`` (or ``m3bench-judge``).

Its Hydra config root is conf/judge/ (config.yaml and the groups judges, evaluators; the data sets of
conf/shared/data/); `--help` describes every setting. It writes ``<predictions stem>_taskcompletion.json`` and
``<predictions stem>_callanalysis.json`` beside the predictions, where the scoring app finds them,
and its log and config to its run folder ``<results_dir>/judge/<model>``. Its run gets the typed config
(engine.apps.config.judge.JudgeConfig). Bad input ends the run with one line on stderr and exit status 2; a
run where some task could not be judged exits with 1; Ctrl-C ends it with one line and 130.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import OmegaConf

from engine.apps import kit
from engine.apps.compose import compose
from engine.apps.config import APPS, typed
from engine.apps.config.fields import TASK_IDS
from engine.apps.config.judge import JudgeConfig
from engine.apps.overrides import CommandLineError, written
from engine.contract import InputError, Interrupted
from engine.contract.settings import Judges, setting_text
from rollout.judges.run import run

SPEC = APPS["judge"]


def ids_listed(argv: list[str]) -> list[str]:
    """argv with `ids=ID` (one id) spelt as the list of it, `ids=[ID]` (a list, null or a sweep as they are);
    what no task id can be is a CommandLineError saying so in one line."""
    out = []
    for token in argv:
        try:
            override = OverridesParser.create().parse_override(token) if token.startswith("ids=") else None
        except HydraException:
            override = None  # the kit's check says why
        if override is None or override.is_sweep_override():
            out.append(token)
            continue
        value = override.value()
        problem = TASK_IDS.problem(value)
        if problem is not None:
            raise CommandLineError(f"ids={setting_text(value)}: {problem}")
        out.append(token if value is None or isinstance(value, list) else f"ids=[{token.split('=', 1)[1]}]")
    return out


POOL = "judges.pool"


def judges_merged(argv: list[str]) -> list[str]:
    """argv with a key set beneath the pool (a judge added, ``+judges.pool.NAME=CONFIG``, or a judge's setting,
    ``judges.pool.NAME.KEY=VALUE``) spelt as a mapping merged into the pool, ``+judges.pool={NAME: CONFIG}``:
    Hydra adds a key by assigning its value, which a pool of typed judges refuses, and sets one beneath a
    null node (a judge's price or noise) not at all; it merges a mapping into either."""
    out = []
    for token in argv:
        try:
            override = OverridesParser.create().parse_override(token) \
                if token.lstrip("+").startswith(POOL + ".") else None
        except HydraException:
            override = None  # the kit's check says why
        if override is None or override.is_sweep_override() or override.is_delete() \
                or override.key_or_group.count(".") < 3 and not override.is_add():
            out.append(token)
            continue
        value: object = override.value()
        for key in reversed(override.key_or_group[len(POOL) + 1:].split(".")):
            value = {key: value}
        out.append(f"+{POOL}={written(value)}")
    return out


def spelt_out(argv: list[str]) -> list[str]:
    """The judge app's command line as it runs: `ids_listed`, then `judges_merged`."""
    return judges_merged(ids_listed(argv))


def compose_config(overrides: Sequence[str] = ()) -> JudgeConfig:
    """The typed config a command line with these overrides would run with (spelt out: `spelt_out`), made as
    the app kit makes it (engine.apps.config.typed)."""
    return typed(SPEC, compose("judge", spelt_out(list(overrides))), missing_as_none=SPEC.missing_as_none)


def judges_of(given: Mapping[str, object]) -> Judges:
    """A judge pool node from a mapping of its settings (``{"max_requests": 2, "pool": {name: model config}}``,
    as a pool's YAML gives them), over the node's defaults: a script's or a test's own pool."""
    made = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(Judges), dict(given)))
    assert isinstance(made, Judges), "a Judges node is made a Judges"
    return made


def run_config(cfg: JudgeConfig, run_folder: Path) -> int:
    """Run a typed config (the run folder is cfg.run_dir, Hydra's); bad input is one line on stderr and status
    2. A setting left for the user to give (``???``, e.g. data.tasks of data=mcpverse) is None: what reads it
    names it."""
    try:
        return run(cfg)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        raise Interrupted("the tasks judged so far are in their files (each is written as a task is judged); "
                          "running the same command again judges the rest") from None


OPEN_KEYS = SPEC.open_keys
"""New keys the judge app reads: a judge added to the pool, a judge's extra request fields, an evaluator's
entry and its options (engine.apps.config.judge)."""

NAME_KEYS = SPEC.names
"""The settings whose values become part of file and folder names (engine.contract.check_name)."""

main = kit.hydra_app(SPEC, run_config, rewrite=spelt_out)
