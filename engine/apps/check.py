"""The command-line check of the Hydra apps (`check_command_line`): a command line checked against the app's
config root before Hydra runs it, each mistake one line (a CommandLineError) naming the override, the
closest setting or option, and why."""

from __future__ import annotations

import argparse
import contextlib
import copy
import difflib
import io
import re
from collections.abc import Sequence
from fnmatch import fnmatchcase

from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override, Transformer
from hydra.errors import ConfigCompositionException, HydraException, OverrideParseException
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import ConfigTypeError, InterpolationResolutionError, OmegaConfBaseException, ValidationError

from engine.apps.compose import CONF_ROOT, compose, config_groups
from engine.apps.config import CHECKS, FLAGS, RANGES, check_ranges
from engine.apps.overrides import (
    CommandLineError,
    check_names,
    hydra_arguments,
    override_values,
    sweep_jobs,
    unparsable,
    written,
)
from engine.contract import ConfigError

# A command line that names no config (--help, --info ...) or another one is left to Hydra as it is.
_OWN_FLAGS = ("config_path", "config_name", "config_dir", "experimental_rerun", "shell_completion")


def _dotted_keys(node: object, prefix: str = "") -> list[str]:
    """Every dotted key of a composed config, inner nodes and leaves."""
    keys = []
    if isinstance(node, DictConfig):
        for key in node.keys():
            path = prefix + str(key)
            keys.append(path)
            keys += _dotted_keys(node._get_node(key), f"{path}.")
    return keys


def _first_new(cfg: DictConfig, key: str) -> str | None:
    """The shortest prefix of a dotted key that the config lacks; None when the key exists."""
    node: object = cfg
    parts = key.split(".")
    for i, part in enumerate(parts):
        if isinstance(node, ListConfig):
            return None
        if not isinstance(node, DictConfig) or node._is_none() or part not in node.keys():
            return ".".join(parts[:i + 1])
        node = node._get_node(part)
    return None


def _is_open(path: str, open_keys: Sequence[str]) -> bool:
    """Whether a new key at `path` is one an app reads: it matches a pattern of open_keys segment by
    segment (`*` stands for one segment)."""
    parts = path.split(".")
    for pattern in open_keys:
        segments = pattern.split(".")
        if len(segments) == len(parts) and all(fnmatchcase(p, s) for p, s in zip(parts, segments)):
            return True
    return False


def closest(word: str, candidates: Sequence[str], n: int) -> list[str]:
    """The (at most n) candidates closest to word, closest first."""
    return difflib.get_close_matches(word, list(candidates), n=n, cutoff=0.6)


RUN_FOLDER_SETTING = {"score": "output_dir", "calibrate": "output_dir", "rollout": "run_dir", "judge": "run_dir"}
"""The setting each app's run folder (hydra.run.dir, hydra.sweep.dir) is made of."""


def _check_run_folder(app: str, keys: Sequence[str]) -> None:
    """Refuse a command line naming the run folder twice: Hydra's folder setting and the app's own."""
    setting = RUN_FOLDER_SETTING.get(app)
    hydra_keys = sorted({"hydra.run.dir", "hydra.sweep.dir"}.intersection(keys))
    if setting in keys and hydra_keys:
        raise CommandLineError(f"{hydra_keys[0]} and {setting} both name the run folder, and only "
                               f"{hydra_keys[0]} would be used: give {setting} alone")


def check_flags(argv: Sequence[str]) -> None:
    """Refuse a flag Hydra lacks (``--model gpt5``, ``--model=gpt5``) with the one line that says how a
    setting is written (``model=gpt5``), in place of Hydra's usage text."""
    known = hydra_arguments()._option_string_actions
    for i, token in enumerate(argv):
        if not token.startswith("--") or token.split("=", 1)[0] in known:
            continue
        key, _, value = token[2:].partition("=")
        if not value and i + 1 < len(argv) and not argv[i + 1].startswith("-") and "=" not in argv[i + 1]:
            value = argv[i + 1]
        raise CommandLineError(f"{token}: settings are written key=value, not as flags: write "
                               f"{key.replace('-', '_')}={value or 'VALUE'} (--help lists the settings)")


def check_command_line(app: str, argv: Sequence[str], open_keys: Sequence[str] = (),
                       names: Sequence[str] = ()) -> list[str]:
    """Check a Hydra app's command line against its config root before Hydra runs it; returns the
    overrides Hydra is to run with (the command line's, plus, for a multirun, the keys left out of the
    jobs' folder names). Raises CommandLineError for: an option that its group lacks (naming the
    closest options), what Hydra refuses when it composes the command line on the app's schema (a setting
the config lacks, naming the closest setting; a value of the wrong type: engine.apps.config), a new key (`+key`,
    `++key`) that no app reads (open_keys: the dotted patterns where new keys are read, e.g. a model's
    extra request `params.*`; Hydra's own `hydra.*` settings are Hydra's to check), several values (a
    sweep) without -m, a multirun that would run the same settings twice, an override Hydra cannot
    parse, a value of a setting of `names` (those that name files, e.g. a model's name) that cannot be
    part of a file name (engine.contract.check_name), and a value outside its setting's range
    (engine.apps.config.check_ranges; each value of a sweep). A command line naming other config roots is
    returned unchecked."""
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            args = hydra_arguments().parse_args(list(argv))
        except (SystemExit, argparse.ArgumentError):
            check_flags(argv)
            return list(argv)
    if any(getattr(args, flag, None) for flag in _OWN_FLAGS):
        return list(argv)
    try:
        overrides = OverridesParser.create().parse_overrides(args.overrides)
    except OverrideParseException as exc:
        raise unparsable(exc) from None
    except HydraException:
        return list(argv)
    swept = [o for o in overrides if o.is_sweep_override()]
    if swept and not args.multirun:
        o = swept[0]
        key = o.get_key_element()
        raise CommandLineError(f"{o.input_line}: several values (a sweep) need -m, one job per value; a single "
                               f"value holding a comma is quoted: {key}='...'")
    _check_run_folder(app, [o.key_or_group for o in overrides])
    groups = config_groups(app)
    ours = [o for o in overrides if not (o.key_or_group == "hydra" or o.key_or_group.startswith(("hydra.", "hydra/")))]
    check_names([o for o in ours if o.key_or_group in names and not o.is_delete()])
    hydra_groups = [o for o in overrides if o.key_or_group.startswith("hydra/")]
    if hydra_groups:
        groups.update(_hydra_groups(app, [o.key_or_group for o in hydra_groups]))
    for o in [*hydra_groups, *ours]:
        if o.key_or_group in groups:
            _check_option(o, groups[o.key_or_group])
    group_lines = []
    for o in ours:
        if o.key_or_group not in groups:
            continue
        values = override_values(o)
        group_lines.append(_given(o) if not o.is_sweep_override() or not values
                           else f"{o.get_key_element()}={values[0]}")
    settings = [o for o in ours if o.key_or_group not in groups]
    if settings or args.multirun:
        lines = [*group_lines, *(line for o in settings if (line := _first_value(o)) is not None)]
        try:
            cfg = compose(app, lines, hydra=True)
        except ConfigCompositionException as exc:
            raise _refused(app, exc, settings, group_lines, open_keys, groups) from None
        except HydraException:
            return list(argv)  # Hydra says why
        except (AssertionError, AttributeError):  # OmegaConf 2.3 sets nothing beneath a null node
            return check_command_line(app, _beneath_null(app, argv, settings, group_lines, groups), open_keys, names)
        _check_flags(app, settings)
        for o in settings:
            if not (o.is_add() or o.is_force_add()):
                continue
            base = compose_config(app, group_lines)
            new = _first_new(base, o.key_or_group) if base is not None else None
            if new is None or _is_open(new, open_keys):  # `++` of a setting, or a new key an app reads
                continue
            raise CommandLineError(f"{o.input_line}: m3bench-{app} does not read {o.key_or_group}"
                                   f"{_closest_hint(app, o.key_or_group, base, groups)}; --help lists its settings")
        if not any(getattr(args, flag) for flag in ("help", "hydra_help", "version", "cfg", "info")):
            _check_ranges(app, cfg, settings)
        if args.multirun:
            return [*argv, _folder_names(cfg, overrides, ours)]
    return list(argv)


def _check_flags(app: str, settings: Sequence[Override]) -> None:
    """A flag (engine.apps.config.FLAGS) given something other than true or false (each value of a sweep) is
    a CommandLineError: OmegaConf would take 91 or `n` for one."""
    for o in settings:
        if o.key_or_group not in FLAGS[app] or o.is_delete() or (o.is_sweep_override() and not o.is_discrete_sweep()):
            continue
        values = list(o.sweep_iterator(Transformer.identity)) if o.is_discrete_sweep() else [o.value()]
        wrong = [v for v in values if not isinstance(v, bool) and not (isinstance(v, str) and "${" in v)]
        if wrong:
            raise CommandLineError(f"{o.input_line}: {o.key_or_group} is a flag: true or false")


def _check_ranges(app: str, cfg: DictConfig, settings: Sequence[Override]) -> None:
    """A bounded setting outside its range, or a checked one its check refuses (check_ranges), is a
    CommandLineError: in the config of the command line (a sweep's first value), then with each further value
    of a swept bounded or checked setting, set on a copy of that config (nothing is composed again)."""
    jobs = [cfg]
    for o in settings:
        checked = o.key_or_group in RANGES[app] or o.key_or_group in CHECKS[app]
        if not (checked and o.is_discrete_sweep()):
            continue
        for value in list(o.sweep_iterator(Transformer.identity))[1:]:
            job = copy.deepcopy(cfg)
            try:
                OmegaConf.update(job, o.get_key_element(), value, merge=False)
            except (ValidationError, ConfigTypeError) as exc:
                reason = str(exc).splitlines()[0]
                raise CommandLineError(f"{o.input_line}: wrong type for {o.get_key_element()}: {reason}") from None
            jobs.append(job)
    for job_cfg in jobs:
        try:
            check_ranges(app, job_cfg)
        except ConfigError as exc:
            raise CommandLineError(str(exc)) from None


def _given(override: Override) -> str:
    """The override's text as the command line gave it (Hydra's parser keeps it for every override)."""
    assert override.input_line is not None, f"override of {override.key_or_group} without its text"
    return override.input_line


def _first_value(override: Override) -> str | None:
    """The override as one job of it would be given (a choice sweep's first value); None for a sweep
    whose values cannot be listed (a range, an interval)."""
    if not override.is_sweep_override():
        return _given(override)
    values = override_values(override)
    return f"{override.get_key_element()}={values[0]}" if values else None


SHORTHAND_KEYS: dict[str, tuple[str, ...]] = {"score": ("predictions",), "rollout": ("tasks",)}
"""Keys a command line of the app may set that no config holds: its shorthands spell them out
(engine/apps/shorthands.py)."""


def _closest_hint(app: str, key: str, base: DictConfig | None, groups: dict[str, list[str]]) -> str:
    """` (closest: KEY)`: the setting, group or shorthand of the app nearest to key, if any."""
    shorthands = SHORTHAND_KEYS.get(app, ()) if "." not in key else ()  # a shorthand has no settings under it
    known = [*(k for k in _dotted_keys(base) if not k.startswith("hydra.")), *groups, *shorthands] \
        if base is not None else []
    near = closest(key, known, 1)
    return f" (closest: {near[0]})" if near else ""


def _refused(app: str, exc: ConfigCompositionException, settings: Sequence[Override], group_lines: Sequence[str],
             open_keys: Sequence[str], groups: dict[str, list[str]]) -> CommandLineError:
    """Hydra's refusal of a command line's settings, against the app's schema (engine.apps.config), as one
    line naming the override: a setting the app lacks (with the closest), a value of the wrong type, `+key`
    for a setting the app has, a new key given without `+` where new keys are read."""
    text = str(exc)
    cause = exc.__cause__
    quoted = re.search(r"'([^']+)'", text)
    key = str(getattr(cause, "full_key", "") or (quoted.group(1) if quoted else ""))
    given = [o for o in settings if o.key_or_group == key or key.startswith(f"{o.key_or_group}.")
             or o.key_or_group.startswith(f"{key}.")]  # a setting under a node the app lacks
    merging = re.match(r"Error merging override (.+)$", text.splitlines()[0])
    if merging:
        given = [o for o in settings if o.input_line == merging.group(1)] or given
    if not given:
        return CommandLineError(f"m3bench-{app}: {text.splitlines()[0]}")
    o = given[0]
    if isinstance(cause, (ValidationError, ConfigTypeError)):  # a value of another type; a mapping for a list
        reason = str(cause).splitlines()[0]
        return CommandLineError(f"{o.input_line}: wrong type for {cause.full_key or o.key_or_group}: {reason}")
    if "An item is already at" in text:
        return CommandLineError(f"{o.input_line}: {o.key_or_group} is a setting already: set it with "
                                f"{_given(o)[1:]}")
    base = compose_config(app, group_lines)
    if text.startswith("Could not override") and base is not None:
        new = _first_new(base, o.key_or_group)
        if new is not None and _is_open(new, open_keys):
            return CommandLineError(f"{o.input_line}: {o.key_or_group} is a new key: add it with +{o.input_line}")
    lacked = key if key.startswith(f"{o.key_or_group}.") else o.key_or_group  # a key of a mapping given whole
    return CommandLineError(f"{o.input_line}: m3bench-{app} has no setting {lacked}"
                            f"{_closest_hint(app, lacked, base, groups)}; --help lists its settings")


def _hydra_groups(app: str, names: Sequence[str]) -> dict[str, list[str]]:
    """Hydra's groups among names (hydra/launcher, ...) with their options on the app's search path
    (the app's conf/<app>/hydra/ and Hydra's plugins); a group without options is Hydra's to report."""
    with initialize_config_dir(config_dir=str(CONF_ROOT / app), version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        found = {name: sorted(loader.get_group_options(name)) for name in names}
    return {name: options for name, options in found.items() if options}


def _check_option(override: Override, options: list[str]) -> None:
    """An option its group lacks is a CommandLineError naming the closest options (or all of them)."""
    for value in override_values(override) or []:
        if value not in options and value not in ("null", "None"):
            near = closest(value, options, 3)
            raise CommandLineError(
                f"{override.input_line}: group {override.key_or_group} has no option {value!r}; "
                + (f"closest: {', '.join(near)}" if near else f"options: {', '.join(options)}"))


def _beneath_null(app: str, argv: Sequence[str], settings: Sequence[Override], group_lines: Sequence[str],
                  groups: dict[str, list[str]]) -> list[str]:
    """argv with each setting beneath a node the config holds as null (`judges.classifier.timeout=5` where the
    pool has no classifier), or giving such a node a mapping (`judges.classifier={...}`), spelt as a mapping
    merged into the node above it (`curate={model: {timeout: 5}}`): OmegaConf sets no key of a null node and
    merges no mapping into one, but merges one into its parent. A CommandLineError when the node above it is a
    config group's (`judges.classifier` of judges=scripted: `judges={...}` chooses an option) or there is none."""
    base = compose_config(app, group_lines)
    out = list(argv)
    for o in settings:
        if base is None or o.is_sweep_override() or o.is_delete() or o.input_line not in out:
            continue
        parts = o.key_or_group.split(".")
        for depth in range(2, len(parts) + 1):
            try:
                node = OmegaConf.select(base, ".".join(parts[:depth]), default=0, throw_on_missing=True)
            except (OmegaConfBaseException, InterpolationResolutionError):
                break
            if node is None and (depth < len(parts) or isinstance(o.value(), dict)):
                above, null = ".".join(parts[:depth - 1]), ".".join(parts[:depth])
                if above in groups:
                    choice = OmegaConf.select(base, f"hydra.runtime.choices.{above}", default="?")
                    raise CommandLineError(f"{o.input_line}: {null} is null with {above}={choice}, and nothing beneath "
                                           f"a null node can be set on the command line: give {parts[depth - 1]} in "
                                           f"a {above} option's file")
                value: object = o.value()
                for key in reversed(parts[depth - 1:]):
                    value = {key: value}
                out[out.index(o.input_line)] = f"{'.'.join(parts[:depth - 1])}={written(value)}"
                break
    if out == list(argv):
        raise CommandLineError(f"m3bench-{app}: a setting beneath a node that is null in this config: give the "
                               "node whole, as a mapping merged into the node above it")
    return out


def compose_config(app: str, overrides: Sequence[str]) -> DictConfig | None:
    """The app's config with these (group) overrides and its hydra node, unresolved; None when Hydra
    cannot compose it (Hydra then says why)."""
    try:
        return compose(app, overrides, hydra=True)
    except HydraException:
        return None


def _folder_names(cfg: DictConfig, overrides: Sequence[Override], ours: Sequence[Override]) -> str:
    """The override that names each multirun job's folder by its swept settings only: every other key
    of the command line joins the app's excluded keys (its output settings,
    hydra.job.config.override_dirname.exclude_keys). Two jobs with the same settings are refused."""
    excluded = list(OmegaConf.select(cfg, "hydra.job.config.override_dirname.exclude_keys") or [])
    swept = {o.key_or_group for o in ours if o.is_sweep_override()}
    excluded += sorted({o.key_or_group for o in ours} - swept - set(excluded))
    if not any(o.key_or_group.startswith("hydra/sweeper") for o in overrides):
        seen: set[tuple[str, ...]] = set()
        for job in sweep_jobs(ours) or []:
            if job in seen:
                raise CommandLineError(f"the multirun runs {','.join(job) or 'the same job'} twice (each job's "
                                       "folder is named by its swept settings): drop the repeated value")
            seen.add(job)
    return f"hydra.job.config.override_dirname.exclude_keys=[{','.join(excluded)}]"
