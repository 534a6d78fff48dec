"""Tool exposure: which tools of the catalogue a task's model may see.

Modes: ``all`` (every tool), ``oracle`` (the tools of the task's reference trajectory), ``retrieve``
(the top-k tools by embedding similarity of the question to "name: description", with the scoring
engine's encoder) and ``fixed`` (a list given in the config).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import numpy as np

from engine.apps.config.rollout import Exposure, ExposureMode
from engine.contract import InputError, Task
from engine.encoders import TextEncoder
from rollout.mcp.protocol import ToolInfo

log = logging.getLogger(__name__)


def encode_texts(texts: list[str], model: str | None = None, device: str = "cpu") -> np.ndarray:
    """Embeddings of texts with the engine's TextEncoder (the bundled all-MiniLM-L6-v2 by default)."""
    try:
        encoder = TextEncoder(model, device=device)
    except ValueError as exc:
        raise InputError("config", str(exc), field="exposure.encoder") from None
    return encoder.encode(texts)


def tool_text(name: str, description: str | None) -> str:
    """A tool as retrieval embeds it: "name: description"."""
    return f"{name}: {description or ''}"


def _normalise(vectors: np.ndarray) -> np.ndarray:
    return vectors / (np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-8)


def select_tools(exposure: Exposure, catalogue: list[ToolInfo], tasks: list[Task],
                 references: Mapping[str, list[str]] | None = None) -> dict[str, list[ToolInfo]]:
    """Per task id, the tools exposed to it, in catalogue order (oracle: reference order).

    In oracle mode, tasks without a reference trajectory get no entry: they cannot be run that way.
    """
    mode = exposure.mode
    by_name = {t.name: t for t in catalogue}
    if mode == ExposureMode.all:
        return {task.id: list(catalogue) for task in tasks}
    if mode == ExposureMode.fixed:
        names = exposure.tools
        unknown = [n for n in names if n not in by_name]
        if not names or unknown:
            problem = f"not in the tool catalogue: {', '.join(unknown)}" if unknown else "empty list"
            raise InputError("config", problem, field="exposure.tools")
        chosen = [by_name[n] for n in dict.fromkeys(names)]
        return {task.id: chosen for task in tasks}
    if mode == ExposureMode.oracle:
        if references is None:
            raise InputError("config", "oracle exposure needs a reference file", field="tasks.reference")
        missing_tools: set[str] = set()
        out = {}
        for task in tasks:
            if task.id not in references:
                continue
            names = references[task.id]
            missing_tools.update(n for n in names if n not in by_name)
            out[task.id] = [by_name[n] for n in names if n in by_name]
        if missing_tools:
            log.warning("oracle exposure: %d reference tool(s) not served by any running server: %s",
                        len(missing_tools), ", ".join(sorted(missing_tools)))
        return out
    top_k = exposure.top_k
    if not catalogue or not tasks:
        return {task.id: [] for task in tasks}
    texts = [tool_text(t.name, t.description) for t in catalogue] + [task.question for task in tasks]
    vectors = _normalise(encode_texts(texts, exposure.encoder, exposure.device))
    tool_vecs, task_vecs = vectors[:len(catalogue)], vectors[len(catalogue):]
    scores = task_vecs @ tool_vecs.T
    out = {}
    for row, task in enumerate(tasks):
        order = np.argsort(-scores[row], kind="stable")[:top_k]
        out[task.id] = [catalogue[i] for i in sorted(order)]
    return out
