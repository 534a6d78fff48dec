"""A command line's overrides as the app kit reads them: the values they give, the names among them that
become file names, and one line for an override Hydra's grammar refuses."""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Sequence

from hydra.core.override_parser.types import Override, Transformer
from hydra.errors import OverrideParseException

from engine.contract import InputError, check_name, shown


class CommandLineError(Exception):
    """A command line an app refuses before running: one line naming the override at fault."""


def override_values(override: Override) -> list[str] | None:
    """The values an override gives its key (every value of a choice sweep); None when not listable."""
    if override.is_delete():
        return []
    if override.is_sweep_override():
        return list(override.sweep_string_iterator()) if override.is_discrete_sweep() else None
    value = override.value()
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return [override.get_value_element_as_str()]


def check_names(overrides: Sequence[Override]) -> None:
    """A value of these overrides (each of a choice sweep or a list; null and ranges left to the run) that
    cannot be part of a file name (engine.contract.check_name) is a CommandLineError."""
    for o in overrides:
        given: list[object]
        if o.is_discrete_sweep():
            given = list(o.sweep_iterator(Transformer.identity))
        elif o.is_sweep_override():
            continue  # a range or an interval: numbers
        else:
            given = [o.value()]
        values = [v for item in given for v in (item if isinstance(item, list) else [item])]
        for value in (v for v in values if v is not None):
            try:
                check_name(value, o.key_or_group)
            except InputError as exc:
                raise CommandLineError(str(exc)) from None


def unparsable(exc: OverrideParseException) -> CommandLineError:
    """One line for an override Hydra's grammar refuses: the override, where the parser stopped, and how to quote."""
    first, *rest = [line for line in str(exc).splitlines()
                    if line.strip() and not line.startswith(("See ", "Error parsing"))] or ["cannot be parsed"]
    at = rest[0].find("^") - (len(first) - len(exc.override)) if rest and first.endswith(exc.override) else -1
    reason = f"unexpected {exc.override[at]!r} at character {at + 1}" if 0 <= at < len(exc.override) else first
    key = exc.override.split("=", 1)[0] if "=" in exc.override else "key"
    return CommandLineError(f"{shown(exc.override)}: not a valid override ({reason}); quote the value: "
                            f"{shown(key)}='...'")


def hydra_arguments() -> argparse.ArgumentParser:
    """A parser of the command line of a Hydra app (`@hydra.main`): its flags, as Hydra 1.3 defines them, and
    the overrides; it parses what Hydra would, for the app kit to read the overrides and flags before Hydra runs."""
    parser = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    for flag in ("--help/-h", "--hydra-help", "--version", "--resolve", "--run/-r", "--multirun/-m",
                 "--shell-completion/-sc"):
        parser.add_argument(*flag.split("/"), action="store_true")
    for flag in ("--package/-p", "--config-path/-cp", "--config-name/-cn", "--config-dir/-cd",
                 "--experimental-rerun"):
        parser.add_argument(*flag.split("/"))
    parser.add_argument("--cfg", "-c", choices=["job", "hydra", "all"])
    parser.add_argument("--info", "-i", const="all", nargs="?",
                        choices=["all", "config", "defaults", "defaults-tree", "plugins", "searchpath"])
    parser.add_argument("overrides", nargs="*")
    return parser


def sweep_jobs(overrides: Sequence[Override]) -> list[tuple[str, ...]] | None:
    """The jobs a basic sweep of these overrides runs, each as its `key=value` settings in order; None when a
    sweep's values cannot be listed (a range, an interval)."""
    choices = []
    for o in overrides:
        if not o.is_sweep_override():
            choices.append([f"{o.get_key_element()}={o.get_value_element_as_str()}"])
            continue
        values = override_values(o)
        if values is None:
            return None
        choices.append([f"{o.get_key_element()}={value}" for value in values])
    return list(itertools.product(*choices))


def written(value: object) -> str:
    """A value as a command line writes it (Hydra's grammar): mappings, lists, null, flags, numbers, quoted text."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {written(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(written(v) for v in value) + "]"
    if value is None or isinstance(value, bool):
        return "null" if value is None else str(value).lower()
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"

