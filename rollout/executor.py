"""The Executor loop, per task: Prepare, Process, run the calls, Decision, and the Final reply.

Each step the model first picks the tools the step needs from the exposed catalogue (Prepare,
optional), then answers with strict JSON ``{"tool_calls": [...]}`` of 1 to max_concurrent calls
(Process; one retry when the reply does not parse). The calls run concurrently; images they
produce join the pool the model sees. The model then says whether to stop (Decision). After the
last step, or a "yes", it writes the final reply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.contract import Task, trajectory_record
from rollout import prompts
from rollout.dialogue import Dialogue
from rollout.mcp.protocol import ToolInfo
from rollout.models.replies import parse_tool_calls
from rollout.record import CachedModel
from rollout.toolrunner import ToolRunner
from rollout.workspace import Workspace, is_image


@dataclass(frozen=True)
class ExecutorSettings:
    """Limits and switches of the loop."""

    max_step: int = 5
    max_concurrent: int = 10
    prepare: bool = True
    max_result_chars: int = 4000


class Executor:
    """Runs tasks through the loop and returns prediction records in the published format."""

    def __init__(self, model: CachedModel, tools: ToolRunner, settings: ExecutorSettings) -> None:
        if settings.max_step < 1 or settings.max_concurrent < 1:
            raise ValueError("max_step and max_concurrent must be at least 1")
        self.model = model
        self.tools = tools
        self.settings = settings

    async def run(self, task: Task, exposed: list[ToolInfo], ws: Workspace,
                  tool_log: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """Roll out one task in its (fresh) workspace; the prediction record. Every call made is
        appended to `tool_log` (when given) as its tool log line, in step and call order."""
        s = self.settings
        images = [ws.add_input(task.image_path)] if task.image_path else []
        dialogue = Dialogue(self.model, task.id, prompts.SYSTEM, ws.root)
        dialogue.messages.append(prompts.task_message(task.question, images))
        exposed_names = {t.name for t in exposed}
        steps: list[list[dict[str, Any]]] = []
        pending, pending_images = "", []
        for step in range(1, s.max_step + 1):
            calls, notes = await self._process(dialogue, exposed, step)
            if not calls:
                break
            records = await self.tools.run_step(calls, exposed_names, ws, step)
            if tool_log is not None:
                tool_log.extend(r.to_log(step, i) for i, r in enumerate(records, 1))
            outputs = [r.to_output() for r in records]
            steps.append(outputs)
            pending_images = [f for r in records for f in r.files if is_image(f) and f not in images]
            images += pending_images
            pending = prompts.results_text(step, outputs, pending_images, notes, s.max_result_chars)
            if step == s.max_step:
                break
            reply = await dialogue.ask(f"{pending}\n\n{prompts.DECISION}", "decision", images=pending_images)
            pending, pending_images = "", []
            if prompts.parse_yes_no(reply) is True:
                break
        final = await dialogue.ask(f"{pending}\n\n{prompts.FINAL}" if pending else prompts.FINAL, "final",
                                   images=pending_images)
        return trajectory_record(task.id, steps, image=task.image, type=task.type, question=task.question,
                                 final_reply=final, dialogue=dialogue.messages, usage=dialogue.usage)

    async def _process(self, dialogue: Dialogue, exposed: list[ToolInfo],
                       step: int) -> tuple[list[dict[str, Any]], list[str]]:
        """Prepare and Process for one step: the calls to run (empty to stop) and notes for the model."""
        s = self.settings
        selected = exposed
        if s.prepare and exposed:
            reply = await dialogue.ask(prompts.prepare_prompt(step, s.max_step, [t.to_json() for t in exposed]),
                                       "prepare", json_mode=True)
            choice = prompts.parse_tool_choice(reply)
            if choice:
                selected = [t for t in exposed if t.name in choice] or exposed
        prompt = prompts.process_prompt(step, s.max_step, s.max_concurrent, [t.to_json() for t in selected])
        reply = await dialogue.ask(prompt, "process", json_mode=True)
        notes: list[str] = []
        try:
            calls = parse_tool_calls(reply)
        except ValueError as first:
            reply = await dialogue.ask(prompts.retry_prompt(str(first), s.max_concurrent), "process",
                                       json_mode=True)
            try:
                calls = parse_tool_calls(reply)
            except ValueError:
                return [], notes
        if len(calls) > s.max_concurrent:
            notes.append(f"Only the first {s.max_concurrent} of your {len(calls)} calls were run "
                         f"(at most {s.max_concurrent} per step).")
            calls = calls[:s.max_concurrent]
        return calls, notes
