"""A task's whole transcript as the site shows it: the dialogue in order, each step's calls with what
each tool returned and the files it produced, the images the agent was shown.

What a prediction record holds (engine.contract.trajectory; the rollout's record, rollout/README.md): per
call its ``result`` and ``is_error``; the ``dialogue`` (messages with ``role``, ``content`` a text or
parts, text and ``{"type": "image", "path"}``, and each reply's ``phase``: prepare, process, decision,
final); a multi-turn task's turns as user messages opening with ``## TURN k``. Beside the prediction file
the rollout keeps its own folder, ``rollout/<model>/`` (`rollout_folders`): each task's final workspace
(``workspace/<task>/``) and tool log (``tool_logs/<task>.json``: the files each call produced, its
duration); a trial's in ``trial<i>/`` below them. A record from elsewhere (no dialogue, results only) is
shown as its steps and final reply; one with neither results nor dialogue has no transcript.

A transcript is ``{"items": [...], "calls": [[call, ...] per step], "usage"}``; an item is one of ``["system",
text]``, ``["prompt", turn or None, text, images]`` (the user's task or turn), ``["harness", label, text, images]``
(a prompt of the rollout's own, opening with ``## PHASE`` or the results of a step: PREPARE, PROCESS, the results
and DECISION, FINAL), ``["agent", phase, text, tool_calls]``, ``["tool", name, text]`` (a tool message of a
chat-format dialogue), ``["step", index]`` (the step's calls, placed before the message that gave the model their
results) and ``["other", role, text]``. A call is ``{"r": result, "e": is_error, "d": seconds, "f": [files]}``; an
image or file is ``{"name", "src"}`` or ``{"name", "refused"}`` (engine.viewer.media), or ``{"name"}`` for a file
that is no image. Texts are cut at MAX_TEXT.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path

from engine.contract import JsonObject, JsonValue, is_number, json_strings, safe_name
from engine.contract.beneath import Refused, read_beneath
from engine.contract.trajectory import Trajectory
from engine.reports.read import ModelResult
from engine.viewer.data import Run, reference_key
from engine.viewer.media import SiteMedia
from engine.viewer.text import cut, number_or_none

log = logging.getLogger(__name__)

FILE_REFERENCE = re.compile(r"file=(/[^\s\"'<>|,;)\]}]+)")
"""An absolute path after ``file=`` (how the published tools name a file they wrote), as the judges read it."""
_TURN = re.compile(r"## TURN (\d+)[^\n]*\n?")
_RESULTS = re.compile(r"Results of step (\d+):")
_HEADING = re.compile(r"^## ([A-Z]+[^\n]*)", re.MULTILINE)
_PREDICTIONS = re.compile(r"(?:_test_mcp_fuzzy)?(?:_trial(\d+))?$")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff")
TOOL_LOG_LIMIT = 64 * 2 ** 20
"""The largest tool log read (bytes); a larger one is left out with a warning."""


@dataclass(frozen=True)
class RolloutFolders:
    """Where the rollout of a prediction file kept its tasks' workspaces and tool logs (None: not found)."""

    workspaces: Path | None
    tool_logs: Path | None


def rollout_folders(predictions: Path) -> RolloutFolders:
    """The rollout's folders of a prediction file as rollout.py writes them: beside
    ``<model>_test_mcp_fuzzy[_trial<i>].json``, ``rollout/<model>/workspace`` and ``.../tool_logs`` (a
    trial's ``trial<i>`` below each); None for one that is not there."""
    predictions = Path(predictions)
    match = _PREDICTIONS.search(predictions.stem)
    model = predictions.stem[:match.start()] if match else predictions.stem
    base = predictions.parent / "rollout" / model
    trial = f"trial{match.group(1)}" if match and match.group(1) else None

    def folder(name: str) -> Path | None:
        path = base / name / trial if trial else base / name
        return path if path.is_dir() else None

    return RolloutFolders(folder("workspace"), folder("tool_logs"))


def _text(content: object) -> tuple[str, list[str]]:
    """The text of a message's content and the paths of its image parts."""
    if isinstance(content, str):
        return content, []
    texts: list[str] = []
    images: list[str] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        if isinstance(text := part.get("text"), str):
            texts.append(text)
        elif part.get("type") == "image" and isinstance(path := part.get("path"), str):
            images.append(path)
        elif part.get("type") in ("image", "image_url"):
            texts.append("[an image given inline]")
    return "\n".join(texts), images


class TaskTranscript:
    """Builds the transcript of one task of one prediction file (see the module doc)."""

    def __init__(self, model: str, trajectory: Trajectory, folders: RolloutFolders, declared: tuple[Path, ...],
                 media: SiteMedia) -> None:
        self.model = model
        self.t = trajectory
        self.media = media
        self.declared = declared
        self.workspace = folders.workspaces / safe_name(trajectory.id) if folders.workspaces is not None else None
        if self.workspace is not None and not self.workspace.exists() and not self.workspace.is_symlink():
            self.workspace = None
        self.log = self._tool_log(folders.tool_logs)

    def _tool_log(self, folder: Path | None) -> dict[tuple[int, int], JsonObject]:
        """(step number, call number from 1) -> the tool log's line of the task (none without a tool log)."""
        if folder is None:
            return {}
        name = f"{safe_name(self.t.id)}.json"
        try:
            doc: JsonValue = json.loads(read_beneath(folder, name, TOOL_LOG_LIMIT))
        except Refused as exc:
            if str(exc) != "not found":
                log.warning("%s: tool log not read (%s): its calls' files are not shown", folder / name, exc)
            return {}
        except ValueError as exc:
            log.warning("%s: tool log is not JSON (%s): its calls' files are not shown", folder / name, exc)
            return {}
        calls = doc.get("calls") if isinstance(doc, dict) else None
        out: dict[tuple[int, int], JsonObject] = {}
        for line in calls if isinstance(calls, list) else []:
            if isinstance(line, dict) and isinstance(step := line.get("step"), int) and isinstance(
                    index := line.get("index"), int):
                out[(step, index)] = line
        return out

    def image(self, path: str) -> dict[str, str]:
        """An image a text or a file list names, by the site's rule (engine.viewer.media)."""
        return self.media.image((self.model, self.t.id), path, self.workspace, self.declared)

    def _calls(self) -> tuple[list[list[dict[str, object]]], list[int]]:
        """Per step its calls as the transcript shows them, and each step's number."""
        raw_steps = self.t.raw.get("steps")
        raw_steps = raw_steps if isinstance(raw_steps, list) else []
        steps, numbers = [], []
        for si, step in enumerate(self.t.steps):
            raw = raw_steps[si] if si < len(raw_steps) and isinstance(raw_steps[si], dict) else {}
            number: int = raw["step"] if isinstance(raw.get("step"), int) else si + 1
            calls = raw.get("calls")
            calls = calls if isinstance(calls, list) and len(calls) == len(step.calls) else [{}] * len(step.calls)
            steps.append([self._call(c if isinstance(c, dict) else {}, self.log.get((number, ci + 1), {}))
                          for ci, c in enumerate(calls)])
            numbers.append(number)
        return steps, numbers

    def _call(self, call: JsonObject, line: JsonObject) -> dict[str, object]:
        result = call.get("result")
        text = result if isinstance(result, str) or result is None else json.dumps(result, ensure_ascii=False)
        files: dict[str, dict[str, str]] = {}
        listed = line.get("files")
        for rel in listed if isinstance(listed, list) else []:
            if isinstance(rel, str) and rel:
                files[rel] = self.image(rel) if rel.lower().endswith(IMAGE_SUFFIXES) else {"name": rel}
        for path in dict.fromkeys(p.rstrip(".:") for s in json_strings([result, call.get("arguments")])
                                  for p in FILE_REFERENCE.findall(s)):
            files.setdefault(path, self.image(path))
        out: dict[str, object] = {"r": cut(text)}
        if isinstance(call.get("is_error"), bool):
            out["e"] = call["is_error"]
        if (duration := number_or_none(line.get("duration_s"))) is not None:
            out["d"] = duration
        if files:
            out["f"] = list(files.values())
        return out

    def build(self) -> dict[str, object] | None:
        """The task's transcript (the module doc), or None when its record has no dialogue and no result."""
        calls, numbers = self._calls()
        dialogue = self.t.raw.get("dialogue")
        dialogue = [m for m in dialogue if isinstance(m, dict)] if isinstance(dialogue, list) else []
        if not dialogue and not any(c.get("r") is not None for step in calls for c in step):
            return None
        items: list[list[object]] = []
        placed = 0
        first_user = True
        for message in dialogue:
            role = message.get("role")
            text, paths = _text(message.get("content"))
            images = [self.image(p) for p in paths]
            if role == "system":
                items.append(["system", cut(text)])
            elif role == "user":
                turn = _TURN.match(text)
                if first_user or turn or not (text.startswith("## ") or _RESULTS.match(text)):
                    items.append(["prompt", int(turn.group(1)) if turn else None,
                                  cut(text[turn.end():] if turn else text), images])
                else:
                    results = _RESULTS.match(text)
                    while results and placed < len(calls) and numbers[placed] <= int(results.group(1)):
                        items.append(["step", placed])
                        placed += 1
                    items.append(["harness", _label(text), cut(text), images])
                first_user = False
            elif role == "assistant":
                tool_calls = message.get("tool_calls")
                items.append(["agent", message.get("phase") if isinstance(message.get("phase"), str) else None,
                              cut(text), cut(tool_calls) if tool_calls else None])
            elif role == "tool":
                name = message.get("name") or message.get("tool_call_id")
                items.append(["tool", cut(name) if isinstance(name, str) else None, cut(text)])
            else:
                items.append(["other", cut(str(role)), cut(text)])
        if placed < len(calls):  # steps no prompt gave results of: before the final reply that follows them
            last = max((i for i, item in enumerate(items) if item[0] == "step"), default=-1)
            at = next((i for i, item in enumerate(items) if i > last and item[0] == "agent" and item[1] == "final"),
                      len(items))
            items[at:at] = [["step", i] for i in range(placed, len(calls))]
        final = self.t.raw.get("final_reply")
        if not dialogue and isinstance(final, str):
            items.append(["agent", "final", cut(final), None])
        usage = self.t.raw.get("usage")
        return {"items": items, "calls": calls,
                "usage": {k: v for k, v in usage.items() if is_number(v)} if isinstance(usage, dict) else None}


def _label(text: str) -> str:
    """What a prompt of the rollout's own is, in a few words: its results' step and its last heading."""
    results = _RESULTS.match(text)
    headings = _HEADING.findall(text)
    heading = headings[-1].strip() if headings else text.strip().splitlines()[0] if text.strip() else ""
    label = f"results of step {results.group(1)}, then {heading}" if results and headings else \
        f"results of step {results.group(1)}" if results else heading
    return label[:160]


def model_transcripts(run: Run, result: ModelResult, media: SiteMedia,
                      images_dir: Path | None) -> dict[str, dict[str, object]]:
    """task id -> its transcript, for each task of a model's results whose record has one."""
    folders = rollout_folders(Path(str(result.meta["predictions"])))  # checked by read_run
    declared = (images_dir or reference_key(result)[0].parent,)
    predictions = run.predictions[result.name].tasks
    out = {}
    for record in run.per_id[result.name]:
        tid = str(record["id"])
        if tid in predictions and tid not in out:
            transcript = TaskTranscript(result.name, predictions[tid], folders, declared, media).build()
            if transcript is not None:
                out[tid] = transcript
    return out
