"""The Executor's prompts and the parsing of the model's replies to them (the JSON object and tool
calls parsers, which the judges share, are the model layer's: rollout.models.replies).

Every phase prompt starts with a heading line ``## PHASE`` (PREPARE, PROCESS, DECISION, FINAL for
the agent; VERDICT and SUMMARY for the curator), so transcripts are easy to read and a scripted model
can tell the phases apart.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rollout.mcp.protocol import ToolInfo
from rollout.models.messages import Message, Part
from rollout.models.replies import parse_json_object

if TYPE_CHECKING:
    from rollout.toolrunner import CallRecord

PHASES = ("PREPARE", "PROCESS", "DECISION", "FINAL", "VERDICT", "SUMMARY")
_HEADING = re.compile(r"^## (" + "|".join(PHASES) + r")\b(?:[^\n]*?\bstep (\d+))?", re.MULTILINE)

SYSTEM = (
    "You are an assistant that solves the user's task with tools served over the Model Context Protocol. "
    "Tools are named \"server/tool\". You work in steps: in each step you choose tools, then call them. "
    "The calls of one step run in parallel, so a call that needs another call's result belongs in a later step. "
    "Files live in the task workspace; refer to them by the workspace-relative paths you are shown "
    "(for example media/photo.png), and write new files inside it."
)


_IMAGES_NOTE = re.compile(r"\n\nImages? in the workspace: [^\n]*$")


def _task_text(question: str, images: list[str]) -> str:
    """The text of a task's user message: the question, then the names of its image(s)."""
    text = question.strip()
    if images:
        text += "\n\nImage" + ("s" if len(images) > 1 else "") + " in the workspace: " + ", ".join(images)
    return text


def _user_message(text: str, images: list[str]) -> Message:
    content: list[Part] = [{"type": "text", "text": text}]
    content += [{"type": "image", "path": p} for p in images]
    return {"role": "user", "content": content}


def task_message(question: str, images: list[str]) -> Message:
    """The first user message: the task and its image(s)."""
    return _user_message(_task_text(question, images), images)


def turn_message(turn: int, prompt: str, images: list[str]) -> Message:
    """The user message opening turn `turn` (from 2) of a multi-turn task: its prompt and its image(s)."""
    return _user_message(f"## TURN {turn}\n{_task_text(prompt, images)}", images)


def question_of(text: str) -> str:
    """The task question of the first user message's text (the inverse of task_message)."""
    return _IMAGES_NOTE.sub("", text)


def _short(description: str) -> str:
    first = description.strip().splitlines()[0] if description.strip() else ""
    return first[:200]


def prepare_prompt(step: int, max_step: int, tools: Sequence[ToolInfo]) -> str:
    """Ask which tools this step needs, from the exposed catalogue."""
    lines = [f"## PREPARE (step {step} of at most {max_step})",
             "Choose the tools this step needs from the catalogue below. "
             'Reply with JSON only: {"tools": ["server/tool", ...]}.', "", "Catalogue:"]
    lines += [f"- {t.name}: {_short(t.description)}" for t in tools]
    return "\n".join(lines)


def process_prompt(step: int, max_step: int, max_concurrent: int, tools: Sequence[ToolInfo]) -> str:
    """Ask for this step's tool calls as strict JSON."""
    return "\n".join([
        f"## PROCESS (step {step} of at most {max_step})",
        "Call the tools this step needs. Reply with JSON only, no prose: "
        '{"tool_calls": [{"name": "server/tool", "arguments": {...}}]} '
        f"with 1 to {max_concurrent} calls; the calls run in parallel.",
        "", "Tools:", json.dumps([t.to_json() for t in tools], ensure_ascii=False)])


def retry_prompt(error: str, max_concurrent: int) -> str:
    """Ask again after a reply that was not the JSON asked for."""
    return (f"## PROCESS (retry)\nYour reply could not be used: {error}. Reply with JSON only, no prose: "
            f'{{"tool_calls": [{{"name": "server/tool", "arguments": {{...}}}}]}} with 1 to {max_concurrent} calls.')


DECISION = "## DECISION\nIs the task complete, so that no more tool calls are needed? Answer yes or no."
FINAL = "## FINAL\nWrite the final answer to the user's task, based on the results above."


def results_text(step: int, calls: Sequence[CallRecord], new_images: list[str], notes: list[str],
                 max_chars: int) -> str:
    """The results of a step as the model reads them (long results cut to max_chars)."""
    lines = [f"Results of step {step}:"]
    lines += notes
    for i, call in enumerate(calls, 1):
        result = call.result
        if max_chars and len(result) > max_chars:
            result = result[:max_chars] + f"... [{len(call.result) - max_chars} more characters]"
        args = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)
        lines.append(f"[{i}] {call.name} {args}\n{result}")
    if new_images:
        lines.append("New images in the workspace: " + ", ".join(new_images))
    return "\n".join(lines)


def phase_of(text: str) -> tuple[str | None, int | None]:
    """The phase of a prompt (its last "## PHASE" heading) and the heading's step number, if any."""
    matches = list(_HEADING.finditer(text))
    if not matches:
        return None, None
    match = matches[-1]
    return match.group(1), int(match.group(2)) if match.group(2) else None


def parse_tool_choice(text: str) -> list[str] | None:
    """The tool names of a PREPARE reply, or None when it is not the JSON asked for."""
    try:
        obj = parse_json_object(text)
    except ValueError:
        return None
    tools = obj.get("tools")
    if not isinstance(tools, list):
        return None
    return [t.strip() for t in tools if isinstance(t, str)]


def parse_yes_no(text: str) -> bool | None:
    """True for yes, False for no, None when the reply is neither."""
    body = text.strip()
    try:
        obj = parse_json_object(body)
    except ValueError:
        obj = None
    if obj is not None:
        for key in ("stop", "complete", "done", "answer", "decision"):
            if key in obj:
                value = obj[key]
                if isinstance(value, bool):
                    return value
                body = str(value)
                break
    words = re.findall(r"[a-z]+", body.lower())
    if words and words[0] in ("yes", "no"):
        return words[0] == "yes"
    return None
