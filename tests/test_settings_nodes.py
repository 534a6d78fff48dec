"""The settings nodes the apps share (engine.contract.settings): a choice renders as its value, `record`
gives back the JSON the YAML gave (a `number` field's 300 stays 300 through Hydra's float), every shipped
model config and judge types as a ModelConfig, every pool as Judges and every data set as a DataSet, and each node's
rules refuse a value in one line naming the field."""

from __future__ import annotations

import dataclasses
import enum
import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from omegaconf import OmegaConf

import rollout.cli  # noqa: F401  (the apps' resolvers, through the kit: conf/rollout composes)
from engine.apps.compose import CONF_ROOT, compose, config_groups
from engine.contract import ConfigError
from engine.contract.settings import (
    Backoff,
    Choice,
    DataSet,
    Judges,
    ModelConfig,
    Noise,
    Price,
    SettingError,
    number,
    record,
    setting_text,
)


class Color(Choice):
    red = "red"
    dark_blue = "dark_blue"


@dataclass
class Swatch:
    color: Color = Color.red
    colors: list[Color] = field(default_factory=lambda: [Color.red])
    width: float = number(2.0)
    ratio: float = 1.0
    widths: list[float] = field(default_factory=lambda: [1.0])
    extra: dict[str, float] = field(default_factory=dict)
    derived: int = field(default=0, init=False)


def test_a_choice_is_written_as_its_value() -> None:
    """str, format, f-strings and JSON all give the value, where a plain str enum gives the member."""
    shown = (str(Color.dark_blue), f"{Color.dark_blue}", format(Color.red, ">5"), json.dumps({"c": Color.red}))
    assert shown == ("dark_blue", "dark_blue", "  red", '{"c": "red"}')

    class Plain(str, enum.Enum):
        red = "red"

    assert str(Plain.red) != "red"  # what Choice is for


def test_hydra_reads_a_choice_by_its_name() -> None:
    cfg = OmegaConf.merge(OmegaConf.structured(Swatch), {"color": "dark_blue", "colors": ["dark_blue", "red"]})
    swatch = OmegaConf.to_object(cfg)
    assert isinstance(swatch, Swatch)
    assert swatch.color is Color.dark_blue and swatch.colors == [Color.dark_blue, Color.red]


def test_record_gives_back_what_the_yaml_gave() -> None:
    """Through Hydra a float field turns the YAML's 3 into 3.0; record writes a number field's integral value as
    the int the YAML wrote, keeps other floats, writes choices by value, leaves out fields not given (init=False)."""
    given = {"color": "dark_blue", "colors": ["red", "dark_blue"], "width": 3, "ratio": 2, "widths": [1, 0.5],
             "extra": {"a": 1.5}}
    swatch = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(Swatch), given))
    assert swatch.width == 3.0 and isinstance(swatch.width, float)
    assert record(swatch) == {**given, "ratio": 2.0, "widths": [1.0, 0.5]}
    assert list(record(swatch)) == [f.name for f in dataclasses.fields(Swatch) if f.init]
    assert json.dumps(record(swatch)) == ('{"color": "dark_blue", "colors": ["red", "dark_blue"], "width": 3, '
                                          '"ratio": 2.0, "widths": [1.0, 0.5], "extra": {"a": 1.5}}')
    assert record(Swatch(width=2.5))["width"] == 2.5
    with pytest.raises(TypeError, match="not a settings node"):
        record({"width": 3})
    with pytest.raises(TypeError, match="not a JSON value: .*Path"):
        record(Swatch(extra={"p": Path("x")}))  # type: ignore[dict-item]


def _typed_model(given: dict) -> ModelConfig:
    model = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(ModelConfig), given))
    assert isinstance(model, ModelConfig)
    return model


def _written_timeout(option: str) -> object:
    """The timeout a rollout model option's file writes (or the option its defaults list extends)."""
    written = OmegaConf.load(CONF_ROOT / "rollout" / "model" / f"{option}.yaml")
    if "timeout" in written:
        return written.timeout
    return next(_written_timeout(d) for d in written.get("defaults", []) if isinstance(d, str) and d != "_self_")


def _shipped_models() -> list[tuple[str, dict]]:
    """(where, resolved model config) of every option of the rollout's model group and every judge of every
    pool (its classifier too), as the apps compose them."""
    found = []
    for option in config_groups("rollout")["model"]:
        cfg = compose("rollout", [f"model={option}"])
        model = OmegaConf.to_container(cfg.model, resolve=True)  # the rollout's model node is typed: 300.0
        found.append((f"model={option}", {**model, "timeout": _written_timeout(option)}))
    for option in config_groups("judge")["judges"]:
        judges = OmegaConf.to_container(compose("judge", [f"judges={option}"]).judges, resolve=True)  # typed
        raw = OmegaConf.load(CONF_ROOT / "judge" / "judges" / f"{option}.yaml")
        found += [(f"judges={option} {name}", {**entry, "timeout": raw.pool[name].timeout})
                  for name, entry in judges["pool"].items()]
        if judges.get("classifier"):
            found.append((f"judges={option} classifier", {**judges["classifier"], "timeout": raw.classifier.timeout}))
    return found


def test_every_shipped_model_is_a_model_config_recorded_as_written() -> None:
    shipped = _shipped_models()
    assert len(shipped) >= 20
    for where, given in shipped:
        kept = record(_typed_model(given))
        assert {k: kept[k] for k in given} == given, where
        assert kept["timeout"] == given["timeout"] and type(kept["timeout"]) is type(given["timeout"]), where


def test_every_shipped_pool_is_a_judges_node() -> None:
    for option in config_groups("judge")["judges"]:
        given = OmegaConf.to_container(compose("judge", [f"judges={option}"]).judges, resolve=True)
        judges = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(Judges), given))
        assert isinstance(judges, Judges) and list(judges.pool) == list(given["pool"]), option
        assert all(isinstance(m, ModelConfig) for m in judges.pool.values()), option
        assert (judges.classifier is not None) == (given.get("classifier") is not None), option
    with pytest.raises(SettingError, match="^max_requests=0: must be an integer >= 1$"):
        Judges(max_requests=0)


def test_every_shipped_data_set_is_a_data_set() -> None:
    names = sorted(p.stem for p in (CONF_ROOT / "shared" / "data").glob("*.yaml"))
    assert "m3bench" in names and "mcpverse" in names
    for name in names:
        raw = OmegaConf.load(CONF_ROOT / "shared" / "data" / f"{name}.yaml")
        cfg = OmegaConf.merge(OmegaConf.structured(DataSet), raw)
        assert OmegaConf.get_type(cfg) is DataSet and cfg.name == name
        assert OmegaConf.is_missing(cfg, "tasks") == OmegaConf.is_missing(raw, "tasks")


@pytest.mark.parametrize(("make", "line"), [
    (lambda: _typed_model({"provider": "openai", "name": "../x"}), "name=../x: cannot be part of a file name"),
    (lambda: _typed_model({"provider": "openai", "timeout": 0}), "timeout=0.0: must be a number of seconds > 0"),
    (lambda: _typed_model({"provider": "openai", "max_retries": -1}), "max_retries=-1: must be an integer >= 0"),
    (lambda: _typed_model({"provider": "openai", "image_max_side": -2}), "image_max_side=-2: must be an integer"),
    (lambda: _typed_model({"provider": "scripted", "delay": -1}), "delay=-1.0: must be a number >= 0"),
    (lambda: Backoff(initial=-0.5), "initial=-0.5: must be a number >= 0"),
    (lambda: Price(input=0.1, output=-2.0), "output=-2.0: must be a number >= 0 (USD per million tokens) or null"),
    (lambda: Noise(rate=1.5), "rate=1.5: must be a number from 0 to 1"),
])
def test_a_node_refuses_a_value_naming_its_field(make, line: str) -> None:
    with pytest.raises(SettingError) as caught:
        make()
    assert str(caught.value).startswith(line) and "\n" not in str(caught.value)
    assert isinstance(caught.value, ConfigError)


def test_setting_text_writes_values_as_a_command_line_does() -> None:
    assert [setting_text(v) for v in (None, [0.5, 0.6], (), Color.red, 3, "x")] == \
        ["null", "[0.5,0.6]", "[]", "red", "3", "x"]
    assert str(SettingError("concurrency", 0, "must be an integer >= 1")) == "concurrency=0: must be an integer >= 1"
