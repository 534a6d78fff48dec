"""What a shard says when it ends, and what the launching terminal hears of a sharded multirun.

A shard that has written its part tries the merge (`merge_when_complete`): it says the parts are merged, or
which parts the merge waits for, each as it stands: running (a run holds its lock), not started, or stopped
with some of its tasks missing. Only a run of its own (no multirun) advises running a part again, and only a
part that is not running: in a multirun, a part not started may be queued, and the launcher says at the end
what is left to do.

In a multirun each shard job records what it said in its job folder (OUTCOME_FILE, a line per merge
tried). The launching process's callback (`ShardReport`, hydra.callbacks.shard_report of the rollout and
judge apps) reads them once every job has ended and says, for each merged file, the merge line when no
job's output reached this terminal (submitit's jobs write into `.submitit/`), or, when nothing merged,
which parts to run again: those missing or stopped by then, never one still running.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO, TypedDict

from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from engine.contract import InputError
from engine.contract.settings import Shard
from rollout.shards import PartPending, part_running

log = logging.getLogger(__name__)

OUTCOME_FILE = "shard_outcomes.jsonl"
"""A multirun shard job's records of its merges (one line each: a trial's, an evaluator's), in its job folder."""


class _State(TypedDict):
    shard: str
    state: str


class PartState(_State, total=False):
    """A part a merge waits for: its shard, its state (running, missing, stopped, ended) and, for a stopped
    one, how many of its tasks it lacks."""

    lacking: int


class Outcome(TypedDict):
    """A shard job's record of its merge (a line of OUTCOME_FILE)."""

    app: str
    shard: str
    output: str
    parts: list[str]
    merged: bool
    line: str
    waits_for: list[PartState]
    stream: list[int] | None
    time: float


def _in_multirun() -> bool:
    """Whether this run is a job of a Hydra multirun."""
    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


def _stream_id(stream: TextIO) -> list[int] | None:
    """The device and inode of a stream's file (a terminal, a pipe, a log file), None when it has none."""
    try:
        st = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return None
    return [st.st_dev, st.st_ino]


def part_states(shard: Shard, parts: Sequence[Path], pending: PartPending) -> list[PartState]:
    """The parts other than `shard`'s that the merge waits for, each with its state: running, missing, or
    stopped (the part the merge found lacking tasks, `lacking` of them, with no run writing it)."""
    states: list[PartState] = []
    for other, path in zip(shard.siblings(), parts):
        if other == shard:
            continue
        if part_running(path):
            states.append({"shard": str(other), "state": "running"})
        elif not path.is_file():
            states.append({"shard": str(other), "state": "missing"})
        elif Path(pending.path) == path:
            states.append({"shard": str(other), "state": "stopped", "lacking": pending.lacking})
    return states


def _state_words(state: PartState, advise: bool) -> str:
    """A waited-for part as words: `part 2/3 (running)`, with the advice for a part not running when `advise`
    (a part `ended` is one the launcher finds written and not running after it was last seen running or
    missing)."""
    part = state["shard"]
    if state["state"] == "running":
        return f"part {part} (running)"
    if state["state"] == "missing":
        return f"part {part} ({f'not run: run shard={part} with the same settings' if advise else 'not started'})"
    if state["state"] == "ended":
        return f"part {part} (ended without merging: run shard={part} again; it runs only its missing tasks)"
    lacking = f"{state['lacking']} of its tasks missing" if state.get("lacking") else "some of its tasks missing"
    return f"part {part} (stopped with {lacking}{f': run shard={part} again to finish it' if advise else ''})"


def waited_words(states: Sequence[PartState], advise: bool) -> str:
    """The parts a merge waits for, as words (`_state_words`), and who merges when one is running."""
    words = ", ".join(_state_words(s, advise) for s in states) or "the other parts"
    return words + ("; the last part to end merges" if any(s["state"] == "running" for s in states) else "")


def waiting_line(app: str, shard: Shard, states: Sequence[PartState], advise: bool) -> str:
    """The line of a shard whose merge waits for other parts."""
    return f"{app}: part {shard} done; the merge waits for {waited_words(states, advise)}"


def merge_when_complete(app: str, shard: Shard, output: Path, parts: Sequence[Path],
                        merge: Callable[[], Path]) -> None:
    """After `shard` has written its part (`parts`: every part's file, in shard order): merge them into `output`
    when every one is complete (this job ended last), saying so; else say what the merge waits for, or why a
    part is refused (stderr); in a multirun, record it for the launcher (ShardReport)."""
    multirun = _in_multirun()
    states: list[PartState] = []
    stream = sys.stdout
    try:
        line = f"{app}: every part is complete; {shard.count} part(s) merged -> {merge()}"
        merged = True
    except PartPending as exc:
        states = part_states(shard, parts, exc)
        line, merged = waiting_line(app, shard, states, advise=not multirun), False
    except InputError as exc:
        line, merged, stream = f"{app}: not merged: {exc}", False, sys.stderr
    print(line, file=stream, flush=True)
    if multirun:
        record: Outcome = {"app": app, "shard": str(shard), "output": str(output), "parts": [str(p) for p in parts],
                  "merged": merged, "line": line, "waits_for": states, "stream": _stream_id(stream),
                  "time": time.time()}
        try:
            folder = Path(HydraConfig.get().runtime.output_dir)
            with (folder / OUTCOME_FILE).open("a", encoding="utf-8") as out:
                out.write(json.dumps(record) + "\n")
        except OSError as exc:
            log.warning("the launcher will not hear of this shard's merge: %s", exc)


def _final_words(record: Outcome) -> str:
    """What is left to do for a merge that did not happen, from the parts as they stand now."""
    shard = Shard(*(int(x) for x in record["shard"].split("/")))
    states: list[PartState] = []
    for other, path in zip(shard.siblings(), (Path(p) for p in record["parts"])):
        waited = next((s for s in record["waits_for"] if s["shard"] == str(other)), None)
        if waited is None:
            continue
        if part_running(path):
            states.append({"shard": str(other), "state": "running"})
        elif not path.is_file():
            states.append({"shard": str(other), "state": "missing"})
        else:
            states.append(waited if waited["state"] == "stopped" else {"shard": str(other), "state": "ended"})
    return waited_words(states, advise=True)


def launcher_lines(records: Sequence[Outcome], seen: dict[str, list[int] | None]) -> list[str]:
    """The launcher's lines for its shard jobs' records: per merged file, its merge line unless a job's own
    output reached this terminal (`seen`: the launcher's stdout and stderr), else what is left to do."""
    lines: list[str] = []
    groups: dict[tuple[str, str], list[Outcome]] = {}
    for record in records:
        groups.setdefault((record["app"], record["output"]), []).append(record)
    for (app, output), group in groups.items():
        heard = [r for r in group if r["stream"] is not None and r["stream"] in seen.values()]
        merged = [r for r in group if r["merged"]]
        if merged:
            if not any(r["merged"] for r in heard):
                lines.append(merged[-1]["line"])
            continue
        last = max(group, key=lambda r: r["time"])
        if not last["waits_for"]:  # refused (another part's settings...): the job's own line
            if last not in heard:
                lines.append(last["line"])
            continue
        lines.append(f"{app}: not merged -> {output}: the multirun has ended; the merge waits for "
                     f"{_final_words(last)}")
    return lines


class ShardReport(Callback):
    """Hydra callback (hydra.callbacks.shard_report of the rollout and judge apps): once a multirun's jobs
    have ended, the launching process says what its shard jobs merged, or what is left to run."""

    def __init__(self) -> None:
        self.sweep: Path | None = None
        self.start = 0.0

    def on_multirun_start(self, config: DictConfig, **kwargs: object) -> None:
        """Called in the launching process before the jobs start."""
        self.sweep = Path(str(OmegaConf.select(config, "hydra.sweep.dir"))).absolute()
        self.start = time.time()
        atexit.register(self.report)  # a launcher that ends on a failed job skips on_multirun_end

    def on_multirun_end(self, config: DictConfig, **kwargs: object) -> None:
        """Called in the launching process once every job has ended."""
        self.report()

    def report(self) -> None:
        """Print the launcher's lines (launcher_lines) once."""
        if self.sweep is None:
            return
        sweep, self.sweep = self.sweep, None
        atexit.unregister(self.report)
        records: list[Outcome] = []
        for path in sorted(sweep.rglob(OUTCOME_FILE)):
            try:
                lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
            except (OSError, ValueError) as exc:
                log.warning("a shard's records are unreadable: %s", exc)
                continue
            records += [r for r in lines if r.get("time", 0) >= self.start - 1]  # this multirun's
        seen = {"stdout": _stream_id(sys.stdout), "stderr": _stream_id(sys.stderr)}
        for line in launcher_lines(records, seen):
            print(line, flush=True)
