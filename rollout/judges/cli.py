"""The judge command: ``python scripts/judge.py model=NAME [judges=POOL] [key=value]`` (or ``m3bench-judge``).

Its Hydra config root is conf/judge/ (config.yaml and the groups judges, evaluators; the data sets of
conf/shared/data/); `--help` describes every setting. It writes ``<predictions stem>_taskcompletion.json`` and
``<predictions stem>_callanalysis.json`` beside the predictions, where the scoring app finds them,
and its log and config to its run folder ``<results_dir>/judge/<model>``. Bad input ends the run with
one line on stderr and exit status 2; a run where some task could not be judged exits with 1; Ctrl-C
ends it with one line and 130.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from engine.apps import kit
from engine.apps.compose import plain_config
from engine.apps.config import APPS
from engine.apps.shorthands import resolved_config
from engine.contract import InputError, Interrupted
from rollout.judges.run import run

# ${judged_name:${model},${predictions}}: the judged model's name, else its file's stem, for folder names.
OmegaConf.register_new_resolver(
    "judged_name", lambda model, predictions: model or (Path(predictions).stem if predictions else "unnamed"),
    replace=True)


def compose_config(overrides: Sequence[str] = ()) -> dict[str, Any]:
    """The resolved config a command line with these overrides would run with, as a plain dict
    (engine.apps.shorthands.resolved_config)."""
    return resolved_config("judge", overrides)


def run_config(cfg: DictConfig) -> int:
    """Run a composed config; bad input is one line on stderr and status 2. A setting left for the
    user to give (``???``, e.g. data.tasks of data=mcpverse) is unset: what reads it names it."""
    for key in OmegaConf.missing_keys(cfg):
        OmegaConf.update(cfg, key, None)
    try:
        return run(plain_config(cfg))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        raise Interrupted("the tasks judged so far are in their files (each is written as a task is judged); "
                          "running the same command again judges the rest") from None


OPEN_KEYS = APPS["judge"].open_keys
"""New keys the judge app reads: a judge added to the pool, a judge's extra request fields, an evaluator's
entry and its options (engine.apps.config.judge)."""

NAME_KEYS = APPS["judge"].names
"""The settings whose values become part of file and folder names (engine.contract.check_name)."""

main = kit.hydra_app(APPS["judge"], run_config)
