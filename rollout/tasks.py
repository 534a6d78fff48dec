"""Which tools a task's reference trajectory uses (for oracle exposure), read through the contract.

Task prompt files themselves are read with `engine.contract.read_tasks`.
"""

from __future__ import annotations

from pathlib import Path

from engine.contract import InputError, read_trajectories


def read_reference_tools(path: str | Path) -> dict[str, list[str]]:
    """Per id, the distinct "server/tool" names of a reference (GT) trajectory file, in order of use."""
    references = read_trajectories(path)
    out: dict[str, list[str]] = {}
    for task_id, trajectory in references.tasks.items():
        names: list[str] = []
        for s, step in enumerate(trajectory.steps):
            for c, call in enumerate(step.calls):
                if "/" not in call.name:
                    raise InputError(references.path, "must be a 'server/tool' string", task_id=task_id,
                                     field=f"steps[{s}].calls[{c}].name")
                if call.name not in names:
                    names.append(call.name)
        out[task_id] = names
    return out
