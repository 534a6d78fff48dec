"""What the app kit knows of an app with a config root (conf/<name>/): `AppSpec`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

S = TypeVar("S", covariant=True)


@dataclass(frozen=True)
class AppSpec(Generic[S]):
    """An app with a config root conf/<name>/: its schema (the dataclass its config.yaml names first,
    `<name>_schema`), the new keys it reads (`open_keys`: dotted patterns, `*` one segment, e.g. a model's
    extra request fields `model.params.*`), the settings whose values become part of file and folder
    names (`names`, engine.contract.check_name), and what its run gets (`typed`: the config as the
    schema's objects and the run folder, ``run(cfg: S, run_folder: Path) -> int``; otherwise, until the
    app moves to it, the composed DictConfig, ``run(cfg) -> int``); with `missing_as_none`, a value left for the
    user to give (``???``, such as a data set's tasks file, which only some runs read) is None in the typed
    config, for the code that reads it to name."""

    name: str
    schema: type[S]
    open_keys: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    typed: bool = False
    missing_as_none: bool = False  # typed(..., missing_as_none): a `???` left is None, what reads it names it
