"""Curation of finished runs: a success verdict per run, then the summary of a successful run into
its optimal trajectory (a candidate reference).

For a successful run the curator model rewrites the trajectory without failed, repeated or
unneeded calls, with calls that do not depend on each other merged into one step. The proposal is
accepted only when it validates against rollout/trajectory.schema.json and every call in it is a
call the run made and that succeeded, kept in the order the run made them; otherwise the model is
asked once more, with the reason. Accepted trajectories are written in the reference (GT) format.
These verdicts are not the LLM-judge scores the scoring side reads (``<predictions stem>_taskcompletion.json``,
written by the judge app, rollout.judges).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.apps.config.rollout import RolloutConfig
from engine.contract import Call, JsonObject, Trajectory, canonical_json, is_lost, read_trajectories, trajectory_record
from engine.contract.progress import TaskBar
from rollout.dialogue import Dialogue
from rollout.errors import CacheMiss
from rollout.models.clients import bounded
from rollout.models.errors import ModelError
from rollout.models.replies import parse_json_object
from rollout.output import ResultFile
from rollout.record import CachedModel, RolloutCache, open_model

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

log = logging.getLogger("rollout")

SCHEMA_PATH = Path(__file__).with_name("trajectory.schema.json")


@lru_cache(maxsize=1)
def _validator() -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _where(path: Sequence[object]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "the object"


def run_calls(run: Trajectory) -> list[list[tuple[Call, Mapping[str, object]]]]:
    """Per step of a finished run, each call with the object it was read from (its result, is_error)."""
    raw_steps = run.raw.get("steps") or []
    return [list(zip(step.calls, raw_steps[s].get("calls") or [], strict=True))
            for s, step in enumerate(run.steps)]


def validate_trajectory(proposal: Any, run: Trajectory) -> list[str]:
    """Problems of a proposed optimal trajectory against the schema and the run; empty when valid."""
    errors = sorted(_validator().iter_errors(proposal), key=lambda e: list(e.absolute_path))
    if errors:
        return [f"{_where(e.absolute_path)}: {e.message}" for e in errors[:5]]
    problems = []
    made = [(call.name, canonical_json(call.arguments)) for step in run_calls(run) for call, raw in step
            if not raw.get("is_error", False)]
    used = [False] * len(made)
    last = -1
    for s, step in enumerate(proposal["steps"]):
        if step["step"] != s + 1:
            problems.append(f"steps[{s}].step: expected {s + 1}, got {step['step']}")
        first_here, last_here = None, -1
        for c, call in enumerate(step["calls"]):
            key = (call["name"].strip(), canonical_json(call["arguments"]))
            index = next((i for i, m in enumerate(made) if m == key and not used[i]), None)
            if index is None:
                problems.append(f"steps[{s}].calls[{c}]: {call['name']} with these arguments is not a "
                                "successful call of the run (or is used more often than it was made)")
                continue
            used[index] = True
            first_here = index if first_here is None else min(first_here, index)
            last_here = max(last_here, index)
        if first_here is not None and first_here < last:
            problems.append(f"steps[{s}]: its calls were made before calls of an earlier step; keep the "
                            "order in which the run made them")
        last = max(last, last_here)
    return problems


def _trajectory_text(run: Trajectory, max_chars: int) -> str:
    lines = []
    for s, step in enumerate(run_calls(run), 1):
        for i, (call, raw) in enumerate(step, 1):
            result = str(raw.get("result", ""))
            if max_chars and len(result) > max_chars:
                result = result[:max_chars] + " ..."
            status = " (FAILED)" if raw.get("is_error") else ""
            args = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)
            lines.append(f"step {s} call {i}{status}: {call.name} {args}\n  -> {result}")
    return "\n".join(lines) or "(no tool calls)"


def verdict_prompt(run: Trajectory, max_chars: int) -> str:
    """Ask whether the run completed its task."""
    return "\n".join([
        "## VERDICT",
        "Decide whether the agent run below completed the user's task, using only what its tool results "
        "and final reply show. Reply with JSON only: {\"success\": true or false, \"reason\": \"...\"}.",
        "", "Task:", str(run.raw.get("question", "")), "", "Tool calls:", _trajectory_text(run, max_chars),
        "", "Final reply:", str(run.raw.get("final_reply", ""))])


CURATOR_SYSTEM = "You are a strict, careful judge of tool-using agent runs."
VERDICT_RETRY = '## VERDICT (retry)\nReply with JSON only: {"success": true or false, "reason": "..."}.'
SUMMARY = (
    "## SUMMARY\nRewrite the run as its optimal trajectory: keep only successful calls that the final answer "
    "needs, each with its name and arguments exactly as made; drop failed, repeated and unneeded calls; put "
    "calls that do not depend on each other in the same step; keep the order in which the run made them. "
    "Reply with JSON only: {\"steps\": [{\"step\": 1, \"calls\": [{\"name\": \"server/tool\", "
    "\"arguments\": {...}}]}], \"final_reply\": \"...\"} (final_reply optional: the run's is kept).")


@dataclass(frozen=True)
class CuratorSettings:
    """Switches of the curator (the run's `curate` settings: engine.apps.config.rollout.Curate)."""

    max_result_chars: int


class Curator:
    """Gives finished runs a verdict and summarises the successful ones into optimal trajectories."""

    def __init__(self, model: CachedModel, settings: CuratorSettings) -> None:
        self.model = model
        self.settings = settings

    async def curate(self, run: Trajectory) -> tuple[dict[str, object], JsonObject | None]:
        """The verdict record of a finished run, and its optimal trajectory when accepted."""
        dialogue = Dialogue(self.model, f"curate:{run.id}", CURATOR_SYSTEM)
        record: dict[str, object] = {"id": run.id, "success": None, "reason": "", "accepted": False, "error": None}
        prompt = verdict_prompt(run, self.settings.max_result_chars)
        verdict = self._verdict(await dialogue.ask(prompt, "verdict", json_mode=True))
        if verdict is None:
            verdict = self._verdict(await dialogue.ask(VERDICT_RETRY, "verdict", json_mode=True))
        optimal = None
        if verdict is None:
            record["error"] = "the verdict was not the JSON asked for"
        else:
            record["success"], record["reason"] = verdict
            if verdict[0]:
                optimal, error = await self._summarise(run, dialogue)
                record["accepted"], record["error"] = optimal is not None, error
        record["usage"] = dialogue.usage
        record["dialogue"] = dialogue.messages
        return record, optimal

    @staticmethod
    def _verdict(reply: str) -> tuple[bool, str] | None:
        try:
            obj = parse_json_object(reply)
        except ValueError:
            return None
        if not isinstance(obj.get("success"), bool):
            return None
        return obj["success"], str(obj.get("reason", ""))

    async def _summarise(self, run: Trajectory, dialogue: Dialogue) -> tuple[JsonObject | None, str | None]:
        text = SUMMARY
        problems: list[str] = []
        for _ in range(2):
            reply = await dialogue.ask(text, "summary", json_mode=True)
            try:
                proposal = parse_json_object(reply)
            except ValueError as exc:
                problems = [str(exc)]
            else:
                problems = validate_trajectory(proposal, run)
                if not problems:
                    return self._gt_record(run, proposal), None
            text = ("## SUMMARY (retry)\nThe trajectory was not accepted: " + "; ".join(problems)
                    + ". Reply again with the corrected JSON only.")
        return None, "rejected: " + "; ".join(problems)

    @staticmethod
    def _gt_record(run: Trajectory, proposal: dict[str, Any]) -> JsonObject:
        """The accepted proposal as a reference (GT-format) trajectory of the run's task."""
        steps = [[{"name": c["name"].strip(), "arguments": c["arguments"]} for c in st["calls"]]
                 for st in proposal["steps"]]
        return trajectory_record(run.id, steps, image=run.raw.get("image"), type=run.type,
                                 question=run.raw.get("question"),
                                 final_reply=proposal.get("final_reply", run.raw.get("final_reply", "")))


async def run_curation(cfg: RolloutConfig) -> int:
    """Give each run of the predictions file a verdict (those lost to the infrastructure left out); write the
    verdicts and the optimal trajectories; 1 when some run could not be curated, else 0."""
    runs = [r for r in read_trajectories(Path(cfg.predictions)).tasks.values() if not is_lost(r.raw)]
    order = {r.id: i for i, r in enumerate(runs)}
    verdicts_path, optimal_path = Path(cfg.curate.verdicts), Path(cfg.curate.optimal)
    cache = RolloutCache(Path(cfg.cache_dir), cfg.mode.value)
    settings = CuratorSettings(max_result_chars=cfg.curate.max_result_chars)
    with ResultFile(verdicts_path, order) as verdicts, ResultFile(optimal_path, order) as optimal:
        todo = [r for r in runs if r.id not in verdicts.done]
        if not todo:
            print(f"curate: nothing to do, all {len(runs)} runs are in {verdicts_path}")
            return 0
        async with open_model(cfg.curate.model or cfg.model, cache) as model:
            curator = Curator(model, settings)

            async def work(run: Trajectory) -> bool:
                try:
                    verdict, trajectory = await curator.curate(run)
                except (ModelError, CacheMiss) as exc:
                    log.error("curating %s failed: %s", run.id, exc)
                    return False
                if trajectory is not None:
                    await asyncio.to_thread(optimal.add, trajectory)
                await asyncio.to_thread(verdicts.add, verdict)
                log.info("curated %s: success=%s accepted=%s", run.id, verdict["success"], verdict["accepted"])
                return True

            with TaskBar(len(runs), "curate", done=len(runs) - len(todo)) as bar:
                outcomes = await bounded(todo, cfg.concurrency, bar.each(work))
    accepted = sum(1 for r in verdicts.records() if r.get("accepted"))
    failed = outcomes.count(False)
    print(f"curate: {outcomes.count(True)} run(s) curated, {failed} failed; {accepted} optimal trajectories "
          f"-> {optimal_path}")
    return 1 if failed else 0
