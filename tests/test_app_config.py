"""The apps' settings as objects (engine.apps.config): `typed` makes a composed config its schema's objects
once, naming a refused, missing or unresolvable value in one line by its dotted key; `APPS` holds every app
with a config root; the app kit hands an app that opts in (`AppSpec.typed`) the typed config and its run
folder, and the composed config to the others."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from omegaconf import DictConfig, OmegaConf
from script_runs import root_logger_kept

import rollout.cli  # the apps' resolvers, through the kit: conf/rollout composes
import rollout.judges.cli  # noqa: F401  (the judge app's module, as its command line loads it)
from engine.apps import kit
from engine.apps.compose import CONF_ROOT, compose
from engine.apps.config import APPS, AppSpec, CalibrateConfig, JudgeConfig, ScoreConfig, record, typed
from engine.contract import ConfigError
from engine.contract.settings import DataSet, SettingError


@pytest.fixture(autouse=True)
def _root_logger() -> Iterator[None]:
    """The root logger as it was after each test (an app run in-process here adds Hydra's file handler)."""
    with root_logger_kept():
        yield


OVERRIDES = {"score": ["output_dir=out"], "calibrate": ["pairs=p.json", "output_dir=out"],
             "rollout": ["model=scripted", "data=rollout_demo"], "judge": ["data=rollout_demo", "judges=scripted"]}
"""A fixed output folder where the default names the time (`${now:...}`): the typed config and the composed
one, each resolved on its own, would otherwise differ across a second's boundary."""


def test_every_app_with_a_config_root_is_in_the_registry() -> None:
    roots = sorted(p.parent.name for p in CONF_ROOT.glob("*/config.yaml"))
    assert sorted(APPS) == roots == ["calibrate", "judge", "rollout", "score"]
    assert all(spec.name == name for name, spec in APPS.items())
    assert APPS["judge"].schema is JudgeConfig and APPS["score"].names == ("inputs.name", "inputs.models")


@pytest.mark.parametrize("app", sorted(OVERRIDES))
def test_every_app_types_its_composed_config(app: str, tmp_path: Path, monkeypatch) -> None:
    """Each app's config as its schema's objects, equal field by field to the composed config resolved (no
    node records a choice or a number field yet), and the composed config left as it was."""
    monkeypatch.setenv("M3BENCH_HOME", str(tmp_path))
    cfg = compose(app, OVERRIDES[app])
    before = OmegaConf.to_yaml(cfg)
    settings = typed(app, cfg)
    assert isinstance(settings, APPS[app].schema) and isinstance(settings.data if app != "calibrate" else
                                                                 DataSet(), DataSet)
    assert OmegaConf.to_yaml(cfg) == before
    assert record(settings) == OmegaConf.to_container(cfg, resolve=True)


def test_the_hydra_node_is_left_out(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("M3BENCH_HOME", str(tmp_path))
    settings = typed(APPS["score"], compose("score", hydra=True))
    assert isinstance(settings, ScoreConfig) and settings.output_dir.startswith(str(tmp_path))


def test_a_value_left_to_the_user_is_named_or_read_as_null(tmp_path: Path, monkeypatch) -> None:
    """data.tasks is ??? in data=mcpverse: one line naming it, or null under the judge app's rule."""
    monkeypatch.setenv("M3BENCH_HOME", str(tmp_path))
    cfg = compose("judge", ["data=mcpverse", "judges=scripted"])
    with pytest.raises(ConfigError, match=r"^data\.tasks: must be given \(it is \?\?\? in the config\)$"):
        typed("judge", cfg)
    assert typed(APPS["judge"], cfg, missing_as_none=True).data.tasks is None
    assert OmegaConf.is_missing(cfg.data, "tasks")


def test_a_value_that_cannot_be_resolved_is_named(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("M3BENCH_HOME", str(tmp_path))
    cfg = compose("calibrate", ["pairs=${oc.env:M3BENCH_NO_SUCH_VARIABLE}"])
    with pytest.raises(ConfigError, match=r"^pairs: .*M3BENCH_NO_SUCH_VARIABLE"):
        typed("calibrate", cfg)


@dataclass
class Limit:
    n: int = 1

    def __post_init__(self) -> None:
        if self.n < 1:
            raise SettingError("n", self.n, "must be an integer >= 1")


@dataclass
class Pair:
    low: int = 0
    high: int = 1

    def __post_init__(self) -> None:
        if self.low > self.high:
            raise ValueError("low must not exceed high")


@dataclass
class Outer:
    name: str = "x"
    limit: Limit = field(default_factory=Limit)
    limits: dict[str, Limit] = field(default_factory=dict)
    chain: list[Limit] = field(default_factory=list)
    pair: Pair = field(default_factory=Pair)


SPEC = AppSpec("outer", Outer)


@pytest.mark.parametrize(("given", "line"), [
    ({"limit": {"n": 0}}, "limit.n=0: must be an integer >= 1"),
    ({"limits": {"a": {"n": 1}, "b": {"n": -2}}}, "limits.b.n=-2: must be an integer >= 1"),
    ({"chain": [{"n": 3}, {"n": 0}]}, "chain[1].n=0: must be an integer >= 1"),
    ({"pair": {"low": 2, "high": 1}}, "pair: low must not exceed high"),
])
def test_a_refused_value_is_named_by_its_dotted_key(given: dict, line: str) -> None:
    cfg = OmegaConf.merge(OmegaConf.structured(Outer), given)
    assert isinstance(cfg, DictConfig)
    with pytest.raises(ConfigError) as caught:
        typed(SPEC, cfg)
    assert str(caught.value) == line and not isinstance(caught.value, SettingError)


def test_a_config_of_another_schema_is_refused() -> None:
    with pytest.raises(TypeError, match="score's schema"):
        typed("score", OmegaConf.structured(Outer))


def test_the_kit_hands_a_typed_app_its_settings_and_run_folder(tmp_path: Path) -> None:
    """An app that opts in gets its schema's objects and the run folder; the others the composed config."""
    got: list[tuple[object, object]] = []

    def typed_run(cfg: CalibrateConfig, run_folder: Path) -> int:
        got.append((cfg, run_folder))
        return 0

    def plain_run(cfg: DictConfig) -> int:
        got.append((cfg, None))
        return 0

    out = tmp_path / "out"
    kit.hydra_app(dataclasses.replace(APPS["calibrate"], typed=True), typed_run)(["pairs=p.json", f"output_dir={out}"])
    kit.hydra_app(dataclasses.replace(APPS["calibrate"], typed=False), plain_run)(["pairs=p.json",
                                                                                  f"output_dir={out}2"])
    (settings, folder), (composed, none) = got
    assert isinstance(settings, CalibrateConfig) and settings.pairs == "p.json" and folder == out
    assert isinstance(composed, DictConfig) and composed.pairs == "p.json" and none is None


def test_the_kit_refuses_a_typed_apps_bad_value_in_one_line(tmp_path: Path, capsys) -> None:
    ran: list[object] = []
    main = kit.hydra_app(dataclasses.replace(APPS["calibrate"], typed=True), lambda cfg, folder: ran.append(cfg) or 0)
    with pytest.raises(SystemExit) as stop:
        main(["pairs=${oc.env:M3BENCH_NO_SUCH_VARIABLE}", f"output_dir={tmp_path / 'out'}"])
    assert stop.value.code == 2 and ran == []
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: pairs: ")
    assert not (tmp_path / "out").exists()
