"""Every app refuses a wrong setting the same way, whichever it is: a value of the wrong type, or outside what the
setting admits, drawn from the app's own schema (engine.apps.config: each field's type, its Range, its Check),
is one line on stderr naming the setting, exit status 2, never a traceback, and nothing left in the folder the
run was pointed at (no run folder, no demo, no output)."""

from __future__ import annotations

import dataclasses
import json
import tempfile
import types
import typing
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from script_runs import call_app

from engine.apps.config import CHECK, RANGE, SCHEMAS, Device, Folder, Range, TaskIds

ROOT = Path(__file__).resolve().parents[1]
BASE = {"score": ["demo.n_tasks=3", "demo.dir={tmp}/demo", "output_dir={tmp}/out", "index_dir=null", "progress=false"],
        "calibrate": ["pairs={tmp}/pairs.json", "output_dir={tmp}/out"],
        "rollout": ["model=scripted", "tasks=demo", "results_dir={tmp}/results"],
        "judge": ["judges=scripted", "data=rollout_demo", "predictions={tmp}/x_test_mcp_fuzzy.json",
                  "results_dir={tmp}/results"]}
"""A run of each app that would do its work (the demo scored, the demo rolled out, ...) but for the wrong setting."""
TMP = "{tmp}"
"""Where a drawn value names the example's folder (an output folder that exists as a file, say)."""


def leaves(schema: type, prefix: str = "") -> list[tuple[str, Any, dict]]:
    """(dotted key, type, metadata) of every setting of a schema; open mappings (dict fields: a model's settings,
    checked where they are read) are left out. The score app's `stats` is a node of its own, so `stats.*` is drawn,
    `stats.resamples` too (its bound with a memory estimate is the statistics step's, for values in range)."""
    hints = typing.get_type_hints(schema)
    out = []
    for f in dataclasses.fields(schema):
        kind = hints[f.name]
        if dataclasses.is_dataclass(kind):
            out += leaves(kind, f"{prefix}{f.name}.")  # type: ignore[arg-type]
        elif typing.get_origin(kind) is not dict:
            out.append((f"{prefix}{f.name}", kind, dict(f.metadata)))
    return out


WORD = st.from_regex(r"[a-z][a-z_]{0,7}", fullmatch=True).filter(
    lambda w: w not in ("null", "true", "false", "nan", "inf", "auto", "cpu", "cuda"))
"""A word no setting of a number, a flag or a list takes (Hydra reads null, true, false, nan and inf itself)."""


def number_outside(allowed: Range) -> st.SearchStrategy[str]:
    """A number outside the range, written as a command line writes it."""
    sides = []
    if allowed.low is not None:
        sides.append(st.integers(max_value=int(allowed.low) - 1) if allowed.integer
                     else st.floats(max_value=allowed.low, exclude_max=True, allow_nan=False, allow_infinity=False))
    if allowed.high is not None:
        sides.append(st.integers(min_value=int(allowed.high) + 1) if allowed.integer
                     else st.floats(min_value=allowed.high, exclude_min=True, allow_nan=False, allow_infinity=False))
    return st.one_of(sides).map(str)


def wrong_values(kind: Any, metadata: dict) -> st.SearchStrategy[str]:
    """Values of the wrong type for a setting of this type, or outside its Range or Check."""
    args = [a for a in typing.get_args(kind) if a is not type(None)]
    base = args[0] if typing.get_origin(kind) in (typing.Union, types.UnionType) else kind
    mapping = WORD.map(lambda w: f"{{{w}:1}}")
    if base is bool:
        found = st.one_of(WORD, st.integers(2, 99).map(str), WORD.map(lambda w: f"[{w}]"))
    elif base in (int, float):
        found = st.one_of(WORD, WORD.map(lambda w: f"[{w}]"), mapping,
                          *([st.just("1.5")] if base is int else []))
    elif typing.get_origin(base) is list:
        found = st.one_of(mapping, *([WORD.map(lambda w: f"[{w}]")] if typing.get_args(base)[0] is float else []))
    else:  # text, or any value
        found = st.one_of(mapping.map(lambda m: f"[{m}]"), WORD.map(lambda w: f"[[{w}]]"))
        if base is str:
            found = st.one_of(found, mapping)
    check = metadata.get(CHECK)
    if isinstance(check, Device):
        found = st.one_of(WORD, st.integers(8, 99).map(lambda n: f"cuda:{n}"))
    elif isinstance(check, Folder):
        found = st.sampled_from([f"{TMP}/a_file", f"{TMP}/a_file/below", "/proc/m3bench/forbidden"])
    elif isinstance(check, TaskIds):
        found = st.one_of(mapping, WORD.map(lambda w: f"[[{w}]]"), st.just("[true]"), st.just("1.5"))
    if RANGE in metadata:
        outside = number_outside(metadata[RANGE])
        found = st.one_of(found, outside, outside.map(lambda n: f"[{n}]")) if typing.get_origin(base) is list \
            else st.one_of(found, outside)
    return found


SETTINGS = [(app, key, kind, metadata) for app, schema in SCHEMAS.items() for key, kind, metadata in leaves(schema)]
WRONG = st.sampled_from(SETTINGS).flatmap(
    lambda s: wrong_values(s[2], s[3]).map(lambda value: (s[0], s[1], value)))


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(WRONG)
def test_a_wrong_setting_is_one_line_and_status_2_with_nothing_left(wrong: tuple[str, str, str]) -> None:
    app, key, value = wrong
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        (tmp / "a_file").write_text("")
        (tmp / "pairs.json").write_text("[]")
        (tmp / "x_test_mcp_fuzzy.json").write_bytes((ROOT / "rollout" / "demo" / "reference.json").read_bytes())
        before = sorted(tmp.rglob("*"))
        args = [a.format(tmp=tmp) for a in BASE[app] if a.split("=")[0] != key]
        proc = call_app(app, *args, f"{key}={value.replace(TMP, str(tmp))}", cwd=tmp)
        shown = (app, key, value, proc.stdout[-2000:], proc.stderr[-3000:])
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, shown
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), shown
        assert key.split(".")[-1] in lines[0] and "has no setting" not in lines[0], shown
        assert sorted(tmp.rglob("*")) == before, shown


def test_every_setting_of_every_app_is_drawn() -> None:
    """The settings drawn are every app's, less the open mappings and the four typed as any value."""
    assert {app for app, *_ in SETTINGS} == set(SCHEMAS)
    assert len(SETTINGS) > 80
    assert json.dumps(sorted(key for app, key, *_ in SETTINGS if app == "calibrate")) == json.dumps(sorted(
        ["pairs", "profile", "device", "home", "output_dir", "encoder.model", "encoder.backend", "encoder.cache_dir",
         "tau_weak_grid", "tau_strong_grid"]))


def test_stats_settings_are_drawn_and_a_resample_count_past_memory_is_one_line(tmp_path: Path) -> None:
    """`stats` is a typed node, so its settings are drawn above; a resample count within its range that would
    not fit in memory is refused by the statistics step's estimate the same way: one line, status 2, and
    nothing written (the demo neither: it is written after the checks)."""
    drawn = {key for app, key, *_ in SETTINGS if app == "score" and key.startswith("stats.")}
    assert {"stats.enabled", "stats.resamples", "stats.level", "stats.seed", "stats.cluster", "stats.method",
            "stats.power", "stats.min_clusters"} <= drawn
    before = sorted(tmp_path.rglob("*"))
    args = [a.format(tmp=tmp_path) for a in BASE["score"]]
    proc = call_app("score", *args, "stats=on", f"stats.resamples={10 ** 15}", cwd=tmp_path)
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"error: stats.resamples={10 ** 15}: the statistics step would need about")
    assert sorted(tmp_path.rglob("*")) == before
