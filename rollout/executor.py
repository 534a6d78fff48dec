"""The Executor loop, per task: Prepare, Process, run the calls, Decision, and the Final reply.

Each step the model first picks the tools the step needs from the exposed catalogue (Prepare,
optional), then answers with strict JSON ``{"tool_calls": [...]}`` of 1 to max_concurrent calls
(Process; one retry when the reply is not that JSON). A call whose arguments are not a JSON object
is an illegal-format call: it is recorded in its step as written (the raw arguments, an "Invalid
arguments" error result, ``"made": false``, not run), counted in the record's ``illegal_calls``, and
the loop goes on.
The other calls run concurrently; images they produce join the pool the model sees. The model then
says whether to stop (Decision). After the last step, or a "yes", it writes the final reply.

A task with turns (rollout.tasks.read_turns) runs as a dialogue in one workspace: turn k+1 is put to
the model after its final reply to turn k, each turn with up to max_step steps of its own (numbered on
from the turn before); the record's ``turns`` holds each turn's ``final_reply`` and ``num_step``, its
``final_reply`` the last turn's.

Files a call wrote outside the task workspace, as far as the step shows them (rollout.toolrunner), are
listed in the record's ``outside_writes`` (``{"step", "tool", "path"}``, with ``"copied_to"`` when the file
was copied into the workspace), each also a warning in the rollout's log; a record without such writes has
no such field.

A reply that is still not tool-call JSON after its retry ends the task as the agent's failure: the
record keeps its steps (and turns) so far and carries ``error`` (engine.contract.failures, kind
``agent``). A task whose calls met an MCP server that is not running ends with kind ``server``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

from engine.contract import (
    AGENT,
    NOT_MADE_RESULT,
    SERVER,
    JsonObject,
    Task,
    server_down,
    task_error,
    trajectory_record,
)
from rollout import prompts
from rollout.dialogue import Dialogue
from rollout.mcp.protocol import ToolInfo
from rollout.models.replies import parse_tool_calls
from rollout.record import CachedModel
from rollout.tasks import Turn
from rollout.toolrunner import CallRecord, ToolRunner
from rollout.workspace import Workspace, is_image

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExecutorSettings:
    """Limits and switches of the loop (the run's settings: engine.apps.config.rollout.RolloutConfig)."""

    max_step: int
    max_concurrent: int
    prepare: bool
    max_result_chars: int


class AgentFailure(Exception):
    """The model's output could not be used: the task ends as the agent's failure."""

    def __init__(self, reason: str, attempts: int) -> None:
        super().__init__(reason)
        self.reason, self.attempts = reason, attempts


@dataclass
class TaskRun:
    """One task under way: its workspace, dialogue, the steps made so far and the final reply (when
    given); `record` gives its prediction record at any point."""

    task: Task
    ws: Workspace
    dialogue: Dialogue
    steps: list[list[dict[str, object]]] = field(default_factory=list)
    illegal_calls: int = 0
    outside_writes: list[dict[str, object]] = field(default_factory=list)
    final_reply: str | None = None
    turns: list[dict[str, object]] | None = None

    def record(self, error: JsonObject | None = None) -> JsonObject:
        """The prediction record in the published format, with ``error`` when the task failed."""
        task = self.task
        fields: dict[str, object] = {"image": task.image, "type": task.type, "question": task.question}
        if self.final_reply is not None:
            fields["final_reply"] = self.final_reply
        if self.turns is not None:
            fields["turns"] = self.turns
        fields.update(dialogue=self.dialogue.messages, usage=self.dialogue.usage)
        if self.illegal_calls:
            fields["illegal_calls"] = self.illegal_calls
        if self.outside_writes:
            fields["outside_writes"] = self.outside_writes
        if error is not None:
            fields["error"] = error
        return trajectory_record(task.id, self.steps, **fields)


class Executor:
    """Runs tasks through the loop and returns prediction records in the published format."""

    def __init__(self, model: CachedModel, tools: ToolRunner, settings: ExecutorSettings) -> None:
        if settings.max_step < 1 or settings.max_concurrent < 1:
            raise ValueError("max_step and max_concurrent must be at least 1")
        self.model = model
        self.tools = tools
        self.settings = settings

    def begin(self, task: Task, ws: Workspace) -> TaskRun:
        """A task's run in its (fresh) workspace, before its first request."""
        return TaskRun(task, ws, Dialogue(self.model, task.id, prompts.SYSTEM, ws.root))

    async def run(self, run: TaskRun, exposed: list[ToolInfo], tool_log: list[dict[str, object]] | None = None,
                  turns: list[Turn] | None = None) -> JsonObject:
        """Roll out one task, as a dialogue when it has `turns`; its prediction record. Every call made is
        appended to `tool_log` (when given) as its tool log line, in step and call order. A failed model
        call (ModelError) or cache miss propagates: `run.record(error)` then gives the record of what was
        done."""
        task, ws, dialogue = run.task, run.ws, run.dialogue
        images = [ws.add_input(task.image_path)] if task.image_path else []
        try:
            if not turns:
                dialogue.messages.append(prompts.task_message(task.question, images))
                await self._steps(run, exposed, images, tool_log)
            else:
                await self._dialogue(run, exposed, images, tool_log, turns)
        except AgentFailure as exc:
            return run.record(task_error(AGENT, exc.reason, exc.attempts))
        down = server_down({"steps": [{"calls": calls} for calls in run.steps]})
        if down is not None:
            return run.record(task_error(SERVER, f"MCP server '{down}' was not running", 1))
        return run.record()

    async def _dialogue(self, run: TaskRun, exposed: list[ToolInfo], images: list[str],
                        tool_log: list[dict[str, object]] | None, turns: list[Turn]) -> None:
        """The turns one after the other in the task's workspace, each turn's reply recorded as it comes."""
        run.turns = []
        for k, turn in enumerate(turns, 1):
            added = [run.ws.add_input(p) for p in turn.images]
            shown = list(dict.fromkeys((images if k == 1 else []) + added))  # turn 1 shows the task's image too
            images += [rel for rel in added if rel not in images]
            run.dialogue.messages.append(prompts.task_message(turn.prompt, shown) if k == 1
                                         else prompts.turn_message(k, turn.prompt, shown))
            before = len(run.steps)
            await self._steps(run, exposed, images, tool_log, first=before + 1)
            run.turns.append({"final_reply": run.final_reply, "num_step": len(run.steps) - before})

    async def _steps(self, run: TaskRun, exposed: list[ToolInfo], images: list[str],
                     tool_log: list[dict[str, object]] | None, first: int = 1) -> None:
        """Steps `first` to `first` + max_step - 1 of the loop, then the final reply."""
        s, dialogue = self.settings, run.dialogue
        exposed_names = {t.name for t in exposed}
        pending, pending_images = "", []
        last = first + s.max_step - 1
        for step in range(first, last + 1):
            calls, notes = await self._process(dialogue, exposed, step, last)
            if not calls:
                break
            records = await self._run_calls(run, calls, exposed_names, step)
            if tool_log is not None:
                tool_log.extend(r.to_log(step, i) for i, r in enumerate(records, 1))
            self._note_outside(run, records, step)
            outputs = [r.to_output() for r in records]
            run.steps.append(outputs)
            pending_images = [f for r in records for f in r.files if is_image(f) and f not in images]
            images += pending_images
            pending = prompts.results_text(step, records, pending_images, notes, s.max_result_chars)
            if step == last:
                break
            reply = await dialogue.ask(f"{pending}\n\n{prompts.DECISION}", "decision", images=pending_images)
            pending, pending_images = "", []
            if prompts.parse_yes_no(reply) is True:
                break
        run.final_reply = await dialogue.ask(f"{pending}\n\n{prompts.FINAL}" if pending else prompts.FINAL,
                                             "final", images=pending_images)

    @staticmethod
    def _note_outside(run: TaskRun, records: list[CallRecord], step: int) -> None:
        """Add the step's writes outside the workspace to the task's `outside_writes`, each with a warning."""
        for record in records:
            for write in record.outside:
                run.outside_writes.append({"step": step, "tool": record.name, **write})
                copied = f" (copied to {write['copied_to']})" if "copied_to" in write else ""
                log.warning("task %s, step %d: %s wrote %s outside the task workspace%s", run.task.id, step,
                            record.name, write["path"], copied)

    async def _run_calls(self, run: TaskRun, calls: list[JsonObject], exposed: set[str],
                         step: int) -> list[CallRecord]:
        """Run a step's calls; an illegal-format call (its "problem" set) is recorded as written, not run."""
        good = [c for c in calls if "problem" not in c]
        made = iter(await self.tools.run_step(good, exposed, run.ws, step) if good else [])
        records = []
        for call in calls:
            if "problem" not in call:
                records.append(next(made))
                continue
            run.illegal_calls += 1
            start, end = NOT_MADE_RESULT
            records.append(replace(CallRecord.of(call), result=f"{start}{call['problem']}{end}", is_error=True,
                                   duration_s=0.0, made=False))
        return records

    async def _process(self, dialogue: Dialogue, exposed: list[ToolInfo], step: int,
                       last: int) -> tuple[list[JsonObject], list[str]]:
        """Prepare and Process for one step: the calls to run (empty: the model calls nothing more) and
        notes for the model; AgentFailure when the reply is not tool-call JSON after its retry."""
        s = self.settings
        selected = exposed
        if s.prepare and exposed:
            reply = await dialogue.ask(prompts.prepare_prompt(step, last, exposed),
                                       "prepare", json_mode=True)
            choice = prompts.parse_tool_choice(reply)
            if choice:
                selected = [t for t in exposed if t.name in choice] or exposed
        prompt = prompts.process_prompt(step, last, s.max_concurrent, selected)
        reply = await dialogue.ask(prompt, "process", json_mode=True)
        notes: list[str] = []
        try:
            calls = parse_tool_calls(reply, keep_bad_arguments=True)
        except ValueError as first:
            reply = await dialogue.ask(prompts.retry_prompt(str(first), s.max_concurrent), "process",
                                       json_mode=True)
            try:
                calls = parse_tool_calls(reply, keep_bad_arguments=True)
            except ValueError as second:
                raise AgentFailure(f"step {step}: the PROCESS reply is not tool-call JSON after a retry "
                                   f"({second})", 2) from None
        if len(calls) > s.max_concurrent:
            notes.append(f"Only the first {s.max_concurrent} of your {len(calls)} calls were run "
                         f"(at most {s.max_concurrent} per step).")
            calls = calls[:s.max_concurrent]
        return calls, notes
