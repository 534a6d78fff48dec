"""The score app's command-line shorthands, spelt out before the command line is checked:

- `model=NAME` for any model whose predictions are under results_dir: the file
  ``<results_dir>/NAME_test_mcp_fuzzy.json`` that ``rollout.py model=NAME`` writes (and ``judge.py model=NAME``
  judges), scored as `model.predictions` when NAME is no option of the model group (conf/score/model/);
- `results_dir=R` without `output_dir`: the scores are written under ``R/scores/<time>/``, beside what they score.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException

from engine.apps.kit import closest, compose_config, config_groups
from engine.apps.overrides import CommandLineError
from engine.contract import InputError, check_name

PUBLISHED_NAME = "{model}_test_mcp_fuzzy.json"
"""A model's prediction file under results_dir (the published files' names, and the rollout's)."""


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
    cfg = compose_config("score", [])
    return str(cfg.results_dir) if cfg is not None else "results"


SCORES_DIR = "${results_dir}/scores/${now:%Y-%m-%d_%H-%M-%S}"
"""The output folder of a score run that names results_dir and no output folder."""

_OUTPUT_KEYS = ("output_dir", "hydra.run.dir", "hydra.sweep.dir")


def _key(token: str) -> str:
    return token.split("=", 1)[0].lstrip("+~")


def score_shorthands(argv: list[str]) -> list[str]:
    """argv with the score app's shorthands spelt out (named_model, then SCORES_DIR as output_dir when
    argv names results_dir and no output folder)."""
    keys = {_key(t) for t in argv if "=" in t}
    out = named_model(argv)
    if "results_dir" in keys and not keys.intersection(_OUTPUT_KEYS):
        out.append(f"output_dir={SCORES_DIR}")
    return out


def named_model(argv: list[str]) -> list[str]:
    """argv with `model=NAME`, when NAME is no option of the score app's model group, spelt out as
    `model=none model.name=NAME model.predictions=<results_dir>/NAME_test_mcp_fuzzy.json`; a NAME
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
        out += ["model=none", f"model.name={name}", f"model.predictions='{quoted}'"]
    return out
