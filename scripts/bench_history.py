"""The benchmark history: one JSON line per recorded run of scripts/bench.py (`--record`), and the change
from the last record of the same kind on the same CPU model and device (`--compare`).

    python scripts/bench_history.py [--history docs/bench_history.jsonl]   # the records, one line each

A record holds the date, the commit (and whether the tree had changes), the machine (CPU model, cores,
the device: a GPU's name), the load average before and after, the library versions, the encoder
backend, the mode and inputs of the run, and every figure it printed (`figures`: seconds as lists, one
value per round, ratios as numbers). Records of other machines (the README's GPU figures) are written
from their own figures with `source` saying where they come from.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TypedDict

ROOT = Path(__file__).resolve().parents[1]
HISTORY = ROOT / "docs" / "bench_history.jsonl"


class Commit(TypedDict):
    """The commit of the tree measured, and whether it had uncommitted changes."""

    commit: str | None
    dirty: bool


class LoadAverages(TypedDict):
    """The 1, 5 and 15 minute load averages before and after the run."""

    before: list[float]
    after: list[float]


class Record(Commit):
    """One line of the history file."""

    date: str
    cpu: str
    cpu_family: str
    cores: int | None
    device: str
    backend: str
    mode: str
    load_average: LoadAverages
    versions: dict[str, str | None]
    inputs: dict[str, object]
    command: list[str]
    figures: dict[str, object]
"""The history file, in the repository: its records are the figures of docs/performance.md."""

VERSIONED = ("python", "torch", "transformers", "sentence-transformers", "numpy", "onnxruntime", "onnx", "openvino",
             "triton")


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo where there is one)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Hardware", "cpu model"):
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_family() -> str:
    """The CPU's family and model numbers (x86: `family 25 model 1`), which tell generations apart where
    the model name does not (a virtual machine's `AMD EPYC`)."""
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        return ""
    return f"family {fields['cpu family']} model {fields['model']}" if "cpu family" in fields else ""


def versions() -> dict[str, str | None]:
    """The versions of the libraries the figures depend on (None: not installed)."""
    import importlib.metadata

    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in VERSIONED[1:]:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def commit() -> Commit:
    """The commit of the tree measured, and whether it had uncommitted changes."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    return {"commit": git("rev-parse", "--short=12", "HEAD") or None, "dirty": bool(git("status", "--porcelain",
                                                                                        "--untracked-files=no"))}


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages, rounded."""
    return [round(v, 2) for v in os.getloadavg()] if hasattr(os, "getloadavg") else []


def record(mode: str, figures: Mapping[str, object], *, device: str, backend: str, inputs: Mapping[str, object],
           load_before: list[float], command: list[str]) -> Record:
    """One history record of a run on this machine."""
    tree = commit()
    return {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": tree["commit"],
            "dirty": tree["dirty"], "cpu": cpu_model(),
            "cpu_family": cpu_family(), "cores": os.cpu_count(), "device": device, "backend": backend, "mode": mode,
            "load_average": {"before": load_before, "after": load_average()}, "versions": versions(),
            "inputs": dict(inputs), "command": command, "figures": dict(figures)}


def read(path: Path = HISTORY) -> list[Record]:
    """Every record of the history file (none when it does not exist)."""
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def append(entry: Record, path: Path = HISTORY) -> None:
    """Append one record, as one line, to the history file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")


def same_kind(a: Record, b: Record) -> bool:
    """Whether two records measure the same thing on the same kind of machine: CPU model (and family where
    recorded), device and mode."""
    families = a.get("cpu_family"), b.get("cpu_family")
    return (a.get("cpu") == b.get("cpu") and a.get("device") == b.get("device") and a.get("mode") == b.get("mode")
            and (not all(families) or families[0] == families[1]))


def last_like(entry: Record, records: list[Record]) -> Record | None:
    """The last record of the same kind as entry (same_kind), None when there is none."""
    return next((r for r in reversed(records) if same_kind(r, entry) and r is not entry), None)


def _typical(value: object) -> float | None:
    """A figure as one number: a list of rounds by its median, a number as it is, anything else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, list) and value and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                 for v in value):
        return float(statistics.median(value))
    return None


def compare(entry: Record, previous: Record | None) -> str:
    """The change of each figure from the previous record of its kind (medians of rounds), with both
    records' load averages; a line saying so when there is none."""
    if previous is None:
        return (f"no earlier record of mode {entry.get('mode')} on {entry.get('cpu')} / {entry.get('device')}: "
                "nothing to compare with")
    load_then, load_now = ((r.get("load_average") or {}).get("before") for r in (previous, entry))
    lines = [f"against {previous.get('commit')} of {previous.get('date')} (load average before {load_then}; "
             f"now {load_now}; backend {previous.get('backend')} -> {entry.get('backend')}):"]
    if previous.get("inputs") != entry.get("inputs"):
        lines.append(f"  inputs differ: {previous.get('inputs')} -> {entry.get('inputs')}")
    for key, value in entry.get("figures", {}).items():
        now, before = _typical(value), _typical(previous.get("figures", {}).get(key))
        if now is None or before is None:
            continue
        change = f"{now / before:.3f}x" if before else "n/a"
        lines.append(f"  {key}: {before:.4g} -> {now:.4g} ({change})")
    return "\n".join(lines)


def main() -> None:
    """Print the history's records, one line each."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--history", type=Path, default=HISTORY)
    args = parser.parse_args()
    for r in read(args.history):
        print(f"{r.get('date')} {r.get('commit')} {r.get('cpu')} ({r.get('cores')} cores) {r.get('device')} "
              f"{r.get('mode')} backend={r.get('backend')} load={(r.get('load_average') or {}).get('before')}")


if __name__ == "__main__":
    main()
