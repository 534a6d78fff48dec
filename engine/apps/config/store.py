"""The apps' schemas in one registry (`APPS`), stored in Hydra's ConfigStore as `<app>_schema` (each app's
config.yaml names its schema first in its defaults list, so Hydra itself refuses a setting the schema
lacks and a value of the wrong type), the checks their fields declare (`check_ranges`), and `typed`: a
composed config as the schema's objects, made once, with a value a node refuses named in one line by its
dotted key."""

from __future__ import annotations

import copy
import dataclasses
import typing
from collections.abc import Iterator
from typing import Any, TypeVar, overload

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, ListConfig, OmegaConf, open_dict
from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException, ValidationError

from engine.apps.config import calibrate, judge, rollout, score
from engine.apps.config.fields import CHECK, RANGE, Check, Range
from engine.apps.config.spec import AppSpec
from engine.contract import ConfigError
from engine.contract.settings import SettingError, setting_text

S = TypeVar("S")
D = TypeVar("D")

APPS: dict[str, AppSpec[Any]] = {spec.name: spec for spec in (score.SPEC, calibrate.SPEC, rollout.SPEC, judge.SPEC)}
"""Every app with a config root, by name (each app's module has its own SPEC, typed by its schema)."""
SCHEMAS: dict[str, type] = {name: spec.schema for name, spec in APPS.items()}
"""Each app's schema, stored in Hydra's ConfigStore as `<app>_schema`."""

for _app, _schema in SCHEMAS.items():
    ConfigStore.instance().store(name=f"{_app}_schema", node=_schema)


def _declared(schema: type, what: str, kind: type[D], prefix: str = "") -> Iterator[tuple[str, D]]:
    """(dotted key, metadata[what]) of every field of a schema declaring `what` (a `kind`), nested schemas
    included."""
    for f in dataclasses.fields(schema):
        if isinstance(declared := f.metadata.get(what), kind):
            yield f"{prefix}{f.name}", declared
        elif isinstance(f.default_factory, type) and dataclasses.is_dataclass(f.default_factory):
            yield from _declared(f.default_factory, what, kind, f"{prefix}{f.name}.")


def _flags(schema: type, prefix: str = "") -> Iterator[str]:
    """The dotted key of every setting of a schema typed as a flag (bool), nested schemas included."""
    hints = typing.get_type_hints(schema)
    for f in dataclasses.fields(schema):
        if hints[f.name] is bool:
            yield f"{prefix}{f.name}"
        elif isinstance(f.default_factory, type) and dataclasses.is_dataclass(f.default_factory):
            yield from _flags(f.default_factory, f"{prefix}{f.name}.")


FLAGS: dict[str, set[str]] = {app: set(_flags(schema)) for app, schema in SCHEMAS.items()}
"""Each app's flags (dotted keys): a command line gives them true or false, never what OmegaConf would take for
one (91, yes, n)."""
RANGES: dict[str, dict[str, Range]] = {app: dict(_declared(schema, RANGE, Range)) for app, schema in SCHEMAS.items()}
"""Each app's bounded settings (dotted keys) and their ranges, read from the schemas' fields."""
CHECKS: dict[str, dict[str, Check]] = {app: dict(_declared(schema, CHECK, Check)) for app, schema in SCHEMAS.items()}
"""Each app's checked settings (dotted keys) and their checks, read from the schemas' fields."""


_ABSENT = object()


def _value(cfg: DictConfig, key: str) -> object:
    """A setting's value, resolved; _ABSENT when the config lacks it (a config of another root: --config-dir,
    --config-name) or it cannot be resolved here (the app says why when it reads it)."""
    try:
        value = OmegaConf.select(cfg, key, default=_ABSENT, throw_on_missing=False)
        return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value
    except OmegaConfBaseException:
        return _ABSENT


def check_ranges(app: str, cfg: DictConfig) -> None:
    """A composed config of app whose bounded setting lies outside its range (RANGES), or whose checked
    setting its Check refuses (CHECKS), is a ConfigError naming it, e.g. `concurrency=0: must be an integer
    >= 1`, `device=gpu9: must be auto, cpu, cuda or cuda:N ...`. A value that cannot be resolved here is left
    to the app, which says why when it reads it."""
    for key, allowed in RANGES[app].items():
        given = _value(cfg, key)
        if given is _ABSENT:
            continue
        if isinstance(given, list):
            wrong = [v for v in given if not allowed.admits(v)]
            if wrong:
                raise ConfigError(f"{key}={setting_text(given)}: each value must be {allowed}, got {wrong[0]!r}")
        elif not allowed.admits(given):
            raise ConfigError(f"{key}={setting_text(given)}: must be {allowed}")
    for key, check in CHECKS[app].items():
        given = _value(cfg, key)
        if given is not _ABSENT and given != MISSING and (problem := check.problem(given)) is not None:
            raise ConfigError(f"{key}={setting_text(given)}: {problem}")


@overload
def typed(app: AppSpec[S], cfg: DictConfig, *, missing_as_none: bool = False) -> S: ...


@overload
def typed(app: str, cfg: DictConfig, *, missing_as_none: bool = False) -> object: ...


def typed(app: AppSpec[S] | str, cfg: DictConfig, *, missing_as_none: bool = False) -> S | object:
    """The app's composed config as its schema's objects (OmegaConf.to_object, once; interpolations resolved,
    a `hydra` node left out; `cfg` itself is not changed). A value a node's ``__post_init__`` refuses, a
    value left for the user to give (``???``) and one that cannot be resolved are a ConfigError of one line
    naming the setting by its dotted key: ``judges.max_requests=0: must be an integer >= 1``.
    `missing_as_none`: a value left for the user to give is None instead (the judge app's rule: what
    reads it names it)."""
    spec = APPS[app] if isinstance(app, str) else app
    node = copy.deepcopy(cfg)
    if "hydra" in node:
        with open_dict(node):
            del node["hydra"]
    if OmegaConf.get_type(node) is not spec.schema:
        raise TypeError(f"not a config of m3bench-{spec.name}'s schema ({spec.schema.__name__})")
    if missing_as_none:
        for key in OmegaConf.missing_keys(node):
            try:
                OmegaConf.update(node, key, None)
            except ValidationError:  # not optional: left to give, named below
                pass
    try:
        return OmegaConf.to_object(node)
    except MissingMandatoryValue as exc:
        raise ConfigError(f"{exc.full_key}: must be given (it is ??? in the config)") from None
    except OmegaConfBaseException as exc:
        where = f"{exc.full_key}: " if getattr(exc, "full_key", None) else ""
        raise ConfigError(f"{where}{str(exc).splitlines()[0]}") from None
    except ValueError as exc:
        raise _named(node, exc) from None


def _named(node: DictConfig, exc: ValueError) -> ConfigError:
    """The ConfigError of a value a node refused (`exc`, raised while `node` was made an object), naming the
    setting by its dotted key: the innermost node that cannot be made an object is the one that refused."""
    prefix = _refusing(node)
    if isinstance(exc, SettingError):
        return ConfigError(f"{prefix}{exc.key}={setting_text(exc.value)}: {exc.problem}")
    return ConfigError(f"{prefix.rstrip('.')}: {exc}" if prefix else str(exc))


def _refusing(node: DictConfig | ListConfig, prefix: str = "") -> str:
    """The dotted key (with a trailing dot; empty for `node` itself) of the innermost node under `node`
    that cannot be made an object."""
    if isinstance(node, ListConfig):
        children = [(f"{prefix[:-1]}[{i}].", node._get_node(i)) for i in range(len(node))]
    else:
        children = [(f"{prefix}{key!s}.", node._get_node(key)) for key in node.keys()]
    for step, child in children:
        if not isinstance(child, (DictConfig, ListConfig)) or child._is_none() or child._is_missing():
            continue
        try:
            OmegaConf.to_object(child)
        except ValueError:
            return _refusing(child, step)
    return prefix
