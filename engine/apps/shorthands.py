"""The apps' command-line shorthands, spelt out before the command line is checked (`spelt_out`). The score
app's:

- the demo is the data set by default (`data=demo`, conf/score/config.yaml); a command line that names
  what to score (any setting but those of HOW_SETTINGS) and no data set runs with `data=m3bench`, so
  that the built-in demo is never scored in place of what it names;
- `model=NAME` for any model whose predictions are under results_dir: the file
  ``<results_dir>/NAME_test_mcp_fuzzy.json`` that ``rollout.py model=NAME`` writes (and ``judge.py model=NAME``
  judges), scored as `inputs.file` when NAME is no option of the model group (conf/score/model/);
- `results_dir=R` without `output_dir`: the scores are written under ``R/scores/<time>/``, beside what they score;
- `predictions=` names the file(s) of predicted calls, as in the judge and rollout apps: `predictions=FILE` is
  `inputs.file=FILE`, `predictions=[F1,F2]` is `inputs.files=[F1,F2]` (one embedding pass), and the
  multirun sweep `-m predictions=F1,F2` is `inputs.file=F1,F2` (one job per file);
- a renamed setting (RENAMED) is read under its new name, with a note on stderr; an old spelling of what to
  score (MOVED: `model.predictions`, `sweep.predictions`, `trials.predictions`, `sweep.models`, ...) is read as
  its setting of the `inputs` node, with a warning naming it, for one more release.

The rollout's shorthand (`tasks=NAME`) is the rollout's own (rollout.cli).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import OmegaConf

from engine.apps.compose import CONF_ROOT, config_groups
from engine.apps.kit import closest
from engine.apps.overrides import CommandLineError, hydra_arguments
from engine.contract import InputError, check_name
from engine.evaluators import evaluators
from engine.inputs import PUBLISHED_NAME


def _value(token: str) -> str | None:
    """The value a plain `key=value` override gives (quotes removed); None for a sweep or what Hydra cannot parse."""
    try:
        override = OverridesParser.create().parse_override(token)
    except HydraException:
        return None
    if override.is_sweep_override() or override.is_delete() or override.is_add() or override.is_force_add():
        return None
    value = override.value()
    return None if value is None or isinstance(value, (list, dict)) else str(value)


def _results_dir(argv: Sequence[str]) -> str:
    """The results_dir a score command line runs with: its last `results_dir=` override, else the config's."""
    given = [v for v in (_value(t) for t in argv if t.startswith("results_dir=")) if v is not None]
    if given:
        return given[-1]
    written = OmegaConf.load(CONF_ROOT / "score" / "config.yaml").results_dir  # ${oc.env:...}: nothing to compose
    return str(OmegaConf.create({"results_dir": written}).results_dir)


SCORES_DIR = "${results_dir}/scores/${now:%Y-%m-%d_%H-%M-%S}"
"""The output folder of a score run that names results_dir and no output folder."""

_OUTPUT_KEYS = ("output_dir", "hydra.run.dir", "hydra.sweep.dir")


def _key(token: str) -> str:
    return token.split("=", 1)[0].lstrip("+~")


HOW_SETTINGS = ("device", "home", "output_dir", "index_dir", "reports", "progress", "encoder", "align", "metrics",
                "demo", "stats", "parse_string_arguments", "hydra")
"""The score app's settings (and groups of settings) that say how to score, not what: a command line that
sets any other names what to score, and without a data set of its own it runs with data=m3bench."""


def _settings(argv: Sequence[str]) -> set[str]:
    """The keys (or groups) the overrides of a command line set, `+`, `++` and `~` left out."""
    return {_key(t) for t in argv if "=" in t or t.startswith("~")}


RENAMED = {"predictions.parse_string_arguments": "parse_string_arguments"}
"""The score app's renamed settings: old spelling -> the setting it is read as."""


MOVED = {"model.predictions": "inputs.file", "model.name": "inputs.name", "sweep.predictions": "inputs.files",
         "sweep.models": "inputs.models", "sweep.discover": "inputs.discover", "trials.predictions": "inputs.trials",
         **{f"model.{e.card.option_name}": f"inputs.verdicts.{e.card.option_name}" for e in evaluators()
            if e.card.suffix is not None}}
"""What to score, as it was spelt before the `inputs` node (engine.inputs.InputsNode): old spelling -> the
setting it is read as, with a warning, until the next release (`+model.<option>=PATH` too, without its `+`)."""


def renamed(argv: list[str]) -> list[str]:
    """argv with each setting of RENAMED under its new name (the value as written), and one note on stderr
    for each; each of MOVED likewise, with one warning on stderr for each."""
    out = []
    for token in argv:
        prefix = token[:len(token) - len(token.lstrip("+~"))]
        key, sep, value = token[len(prefix):].partition("=")
        if key in RENAMED:
            token = f"{prefix}{RENAMED[key]}{sep}{value}"
            print(f"note: {key} is now {RENAMED[key]}: read as {token}", file=sys.stderr)
        elif key in MOVED:
            token = f"{prefix.replace('+', '')}{MOVED[key]}{sep}{value}"
            print(f"warning: {key} is now {MOVED[key]} (read as {token}); the old spelling goes in the next release",
                  file=sys.stderr)
        out.append(token)
    return out


def prediction_files(argv: list[str]) -> list[str]:
    """argv with `predictions=` (the file or files of predicted calls) spelt out as the setting that scores
    them, the value as written: a list `predictions=[F1,F2]` as `inputs.files=[F1,F2]`, one file or a
    multirun sweep of files `predictions=F1,F2` as `inputs.file=...`. An override Hydra cannot parse is
    left as it is, for the command line's check to name, and so is a sweep without -m (several values: refused)."""
    try:  # -m as Hydra reads it (abbreviated, among other flags)
        multirun = bool(hydra_arguments().parse_known_args(argv)[0].multirun)
    except (argparse.ArgumentError, SystemExit):
        multirun = False  # the command line's check says why
    out = []
    for token in argv:
        if not token.startswith("predictions="):
            out.append(token)
            continue
        try:
            override = OverridesParser.create().parse_override(token)
        except HydraException:
            out.append(token)
            continue
        if override.is_sweep_override() and not multirun:
            out.append(token)
            continue
        several = not override.is_sweep_override() and isinstance(override.value(), list)
        out.append(f"inputs.{'files' if several else 'file'}={token.partition('=')[2]}")
    return out


def score_shorthands(argv: list[str]) -> list[str]:
    """argv with the score app's shorthands spelt out (renamed settings; prediction_files; named_model;
    data=m3bench when argv names what to score and no data set; SCORES_DIR as output_dir when argv names
    results_dir and no output folder)."""
    argv = prediction_files(renamed(argv))
    keys = _settings(argv)
    out = named_model(argv)
    named = [k for k in keys if not any(k == how or k.startswith((f"{how}.", f"{how}/")) for how in HOW_SETTINGS)]
    if named and "data" not in keys:
        out.append("data=m3bench")
    if "results_dir" in keys and not keys.intersection(_OUTPUT_KEYS):
        out.append(f"output_dir={SCORES_DIR}")
    return out


def named_model(argv: list[str]) -> list[str]:
    """argv with `model=NAME`, when NAME is no option of the score app's model group, spelt out as
    `model=none inputs.name=NAME inputs.file=<results_dir>/NAME_test_mcp_fuzzy.json`; a NAME
    without that file is a CommandLineError naming the file and the closest names (of the group's options and
    the prediction files under results_dir)."""
    options = config_groups("score")["model"]
    out = []
    for token in argv:
        name = _value(token) if token.startswith("model=") else None
        if name is None or name in options or name in ("null", "None"):
            out.append(token)
            continue
        try:
            check_name(name, "model")
        except InputError as exc:
            raise CommandLineError(str(exc)) from None
        path = Path(_results_dir(argv)) / PUBLISHED_NAME.format(model=name)
        if not path.is_file():
            suffix = PUBLISHED_NAME.format(model="")
            found = sorted(p.name[:-len(suffix)] for p in path.parent.glob(f"?*{suffix}"))
            near = closest(name, [*found, *options], 3)
            raise CommandLineError(f"{token}: no prediction file {path}, and group model "
                                   f"has no option {name!r}; "
                                   + (f"closest: {', '.join(near)}" if near else f"options: {', '.join(options)}"))
        quoted = str(path).replace("'", "\\'")
        out += ["model=none", f"inputs.name={name}", f"inputs.file='{quoted}'"]
    return out


SHORTHANDS = {"score": score_shorthands}
"""Each app's shorthands here (the rollout's `tasks=NAME` is rollout.cli.tasks_shorthand, spelt out by its
compose_config; an app without any runs its command line as written)."""


def spelt_out(app: str, argv: Sequence[str]) -> list[str]:
    """A command line of the app with its shorthands spelt out, as the app runs it."""
    rewrite = SHORTHANDS.get(app)
    return rewrite(list(argv)) if rewrite else list(argv)
