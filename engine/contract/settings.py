"""Settings nodes that several apps share, and what every settings node is made of.

A settings node is a dataclass read by Hydra (its schema) and made an object once (engine.apps.config.typed):
its defaults live on its fields, its ranges and cross-field rules in ``__post_init__``, which raises a
`SettingError` naming the field by its name in the node (the app kit prefixes the node's dotted key).

- `Choice`: the base of a setting's choices, a str enum that renders as its value;
- `number(default)`: a float field recorded as the YAML wrote it (``timeout: 60`` stays 60, not 60.0);
- `record(node)`: a node's JSON form, equal to what its YAML gave (what run meta and input keys hold);
- the shared nodes: `DataSet` (conf/shared/data/), `ModelConfig` with `Backoff`, `Price` and `Noise` (a
  rollout's model, a judge of a pool, the curator's model), `Judges` (a judge pool), `ListPrice` (a scored
  model's list price);
- `model_node(given, where)`: a judge's `ModelConfig` from a mapping of its settings, InputError naming the
  setting it refuses;
- `Shard` and `parse_shard`: a run's ``shard=i/n`` setting.

Here and not in engine.apps because the rollout's model layer, the judges and the evaluators read these
nodes too, and none of them may import the apps.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from engine.contract.errors import NAME_RULE, ConfigError, InputError, is_name
from engine.contract.jsonio import JsonObject, JsonValue


class Choice(str, enum.Enum):
    """The base of a setting's choices (``class Profile(Choice): reference = "reference"``): a member is its
    value wherever it is written (str, format, f-strings, JSON), so meta, input keys and messages read as
    the YAML did. A member's name is its value: Hydra reads a choice by its name."""

    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, format_spec: str) -> str:
        return str.__format__(self, format_spec)


class SettingError(ConfigError):
    """A setting's value refused by its node's ``__post_init__``: ``key=value: problem``, `key` the field's
    name in the node (engine.apps.config.typed names it by its dotted key in the app's config)."""

    def __init__(self, key: str, value: object, problem: str) -> None:
        self.key, self.value, self.problem = key, value, problem
        super().__init__(f"{key}={setting_text(value)}: {problem}")


def setting_text(value: object) -> str:
    """A value as a command line writes it (`null`, `[0.5,0.6]`, a choice by its value)."""
    if value is None:
        return "null"
    if isinstance(value, (list, tuple)):
        return f"[{','.join(setting_text(v) for v in value)}]"
    return str(value)


NUMBER = "number"
"""The metadata key of a `number` field."""


def number(default: float) -> float:
    """A float field recorded as the YAML wrote it: an integral value is an int in `record` (60, not 60.0)."""
    return field(default=default, metadata={NUMBER: True})


def record(node: object) -> JsonObject:
    """The JSON form of a settings node, as its YAML gave it: its init fields in order, a `Choice` as its
    value, an integral value of a `number` field as an int, nested nodes, lists and mappings the same way.
    TypeError for something that is no settings node or holds what JSON cannot."""
    if not dataclasses.is_dataclass(node) or isinstance(node, type):
        raise TypeError(f"not a settings node: {type(node).__name__}")
    return {f.name: _json(getattr(node, f.name), bool(f.metadata.get(NUMBER))) for f in dataclasses.fields(node)
            if f.init}


def _json(value: object, integral: bool = False) -> JsonValue:
    """A field's value as JSON (`record`); `integral`: an integral float becomes an int."""
    if isinstance(value, enum.Enum):
        return _json(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return record(value)
    if isinstance(value, float):
        return int(value) if integral and value.is_integer() else value
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json(v, integral) for v in value]
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def _at_least(key: str, value: float | None, low: float, what: str = "a number") -> None:
    if value is not None and value < low:
        raise SettingError(key, value, f"must be {what} >= {low:g}")


@dataclass
class DataSet:
    """A data set of conf/shared/data/ (the score, judge and rollout apps'): its name, reference trajectories
    (``gt``, or several files in ``references``, which win over ``gt``), tasks file and images folder."""

    name: str = MISSING
    gt: str | None = None
    references: list[str] = field(default_factory=list)
    tasks: str | None = MISSING  # ??? in a data set: given by the user (data.tasks=DIR)
    images_dir: str | None = None


@dataclass
class Backoff:
    """The waits between a model's attempts (s): the first, and the longest."""

    initial: float = 1.0
    max: float = 60.0

    def __post_init__(self) -> None:
        _at_least("initial", self.initial, 0)
        _at_least("max", self.max, 0)


@dataclass
class Price:
    """USD per million input and output tokens (null: unknown, no cost is given)."""

    input: float | None = None
    output: float | None = None

    def __post_init__(self) -> None:
        for key in ("input", "output"):
            value = getattr(self, key)
            if value is not None and value < 0:
                raise SettingError(key, value, "must be a number >= 0 (USD per million tokens) or null")


_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass
class ListPrice:
    """A scored model's list price (the score app's ``inputs.price``, ``price:`` of conf/score/model/<name>.yaml):
    USD per million input and output tokens, the day it was read (YYYY-MM-DD) and where (optional). All four
    null (the default) is no price: `given` is False."""

    input_usd_per_mtok: float | None = None
    output_usd_per_mtok: float | None = None
    as_of: str | None = None
    source: str | None = None

    def given(self) -> bool:
        """Whether any of the four is set (else this is no price)."""
        return any(v is not None for v in dataclasses.astuple(self))

    def __post_init__(self) -> None:
        if not self.given():
            return
        for key in ("input_usd_per_mtok", "output_usd_per_mtok"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise SettingError(key, value, "must be a number >= 0 (USD per million tokens)")
        if not isinstance(self.as_of, str) or not _DATE.match(self.as_of):
            raise SettingError("as_of", self.as_of, "must be the date the price was read, YYYY-MM-DD")

    def rates(self) -> tuple[float, float]:
        """USD per million input and per million output tokens (both numbers: ``__post_init__`` checked them)."""
        return float(self.input_usd_per_mtok or 0), float(self.output_usd_per_mtok or 0)


@dataclass
class Noise:
    """The scripted agent's errors: how often each perturbation happens (0 to 1) and the seed of every task's
    random stream (rollout.scripted_noise)."""

    rate: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise SettingError("rate", self.rate, "must be a number from 0 to 1")


@dataclass
class ModelConfig:
    """A chat model behind an API (conf/rollout/model/, a judge of conf/judge/judges/): its provider (a
    driver of rollout.models.registry), its name (a rollout's: part of file names; a judge's is its key in
    the pool), the model the API is asked for (null: the name), where and how it is reached, the extra
    request fields (``params``, open), the retry policy, the longest image side sent (null: as is), whether
    it is shown images, its prices, and the scripted provider's own settings (``script``, ``delay``,
    ``noise``, ``policy``, ``bias``; ``trial``: set by the rollout for each trial)."""

    provider: str = MISSING
    name: str | None = None
    api_name: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    json_mode: bool = False
    params: dict[str, Any] = field(default_factory=dict)
    timeout: float = number(300.0)
    max_retries: int = 6
    backoff: Backoff = field(default_factory=Backoff)
    image_max_side: int | None = 2048
    images: bool = True
    price: Price | None = None
    script: str | None = None
    delay: float = 0.0
    noise: Noise | None = None
    policy: str | None = None
    bias: float = 0.0
    trial: int | None = None

    def __post_init__(self) -> None:
        if self.name is not None and not is_name(self.name):
            raise SettingError("name", self.name, NAME_RULE)
        if self.timeout <= 0:
            raise SettingError("timeout", self.timeout, "must be a number of seconds > 0")
        _at_least("max_retries", self.max_retries, 0, "an integer")
        _at_least("image_max_side", self.image_max_side, 0, "an integer (0 or null: images sent as they are)")
        _at_least("delay", self.delay, 0)


@dataclass
class Judges:
    """A judge pool (conf/judge/judges/): the requests each judge has in flight at once, a file of the user's
    own rubrics (null: the project's), the judges by their name in the pool, and the published call
    outcomes' classifier."""

    max_requests: int = 4
    prompts: str | None = None
    pool: dict[str, ModelConfig] = field(default_factory=dict)
    classifier: ModelConfig | None = None

    def __post_init__(self) -> None:
        _at_least("max_requests", self.max_requests, 1, "an integer")


def model_node(given: ModelConfig | Mapping[str, object], where: str) -> ModelConfig:
    """A judge's model config: `given`, or a mapping of its settings (a test's pool, an evaluator's option
    naming a model) made one over the node's defaults; InputError naming the setting (`where`.key) it
    refuses."""
    if isinstance(given, ModelConfig):
        return given
    if not isinstance(given, Mapping):
        raise InputError("config", "must be a model config (provider, api_name, ...)", field=where)
    try:
        made = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(ModelConfig), dict(given)))
    except SettingError as exc:
        inner = next((k for k, v in given.items() if isinstance(v, Mapping) and exc.key in v), None)
        key = f"{inner}.{exc.key}" if inner is not None else exc.key
        raise InputError("config", f"{exc.problem}, got {exc.value!r}", field=f"{where}.{key}") from None
    except OverflowError:
        key = next(f"{k}.{i}" if i else k for k, i in _inner(given) if _too_large(given, k, i))
        raise InputError("config", "must be a number a float holds", field=f"{where}.{key}") from None
    except OmegaConfBaseException as exc:
        full = getattr(exc, "full_key", None)
        raise InputError("config", str(exc).splitlines()[0], field=f"{where}.{full}" if full else where) from None
    assert isinstance(made, ModelConfig), "a ModelConfig node is made a ModelConfig"
    return made


def _inner(given: Mapping[str, object]) -> list[tuple[str, str]]:
    """(key, inner key or "") of a mapping's values and of its nested mappings' values."""
    return [(k, i) for k, v in given.items() for i in (list(map(str, v)) if isinstance(v, Mapping) else [""])]


def _too_large(given: Mapping[str, object], key: str, inner: str) -> bool:
    value = given[key]
    value = value.get(inner) if inner and isinstance(value, Mapping) else value
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2 ** 1024


SHARD_RE = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class Shard:
    """The i-th (0-based) of n parts of a run's tasks."""

    index: int
    count: int

    def owns(self, task_id: str) -> bool:
        """Whether a task id is in this part."""
        return shard_of(task_id, self.count) == self.index

    @property
    def label(self) -> str:
        """The part's name in file names: shard<i>of<n>."""
        return f"shard{self.index}of{self.count}"

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def siblings(self) -> list[Shard]:
        """Every part of the same split, this one included, in order."""
        return [Shard(i, self.count) for i in range(self.count)]


def shard_of(task_id: str, count: int) -> int:
    """The part (0-based) of a task id among `count` parts."""
    return int(hashlib.sha256(task_id.encode("utf-8", "surrogatepass")).hexdigest(), 16) % count


def parse_shard(value: object, field: str = "shard") -> Shard | None:
    """The shard a ``shard`` setting names ("i/n", 0 <= i < n), None when unset; InputError naming the setting
    otherwise."""
    if value is None or value == "":
        return None
    m = SHARD_RE.match(str(value))
    if not m or not 0 <= int(m.group(1)) < int(m.group(2)):
        raise InputError("config", f"must be i/n with 0 <= i < n (e.g. 0/3), got {value!r}", field=field)
    return Shard(int(m.group(1)), int(m.group(2)))
