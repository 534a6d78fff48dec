"""The VisualToolBench demo set: tasks with turns and rubrics, and their reference trajectories, made
from the rollout demo's reference trajectories (deterministic; small; offline).

Each rollout demo task gives a single-turn task, and the first two also a two-turn task (both turns'
prompts put to the model as one question, which its reference plan answers in one reply; the first
one's plan starts with a call on a missing file, an error for the tool-use analytics). Rubric
criteria quote the phrase a scripted judge looks for in the answer: some phrases are in the reference
reply (Met), some are not (Not Met), one differs from it in case only (judges that match case exactly
disagree with the others); some rubrics carry a critical flag that disagrees with
weight >= 4 (a weight-4 rubric flagged not critical, Not Met: the published rules fail those tasks, the
strict profile passes them), and one task has no critical rubric. Each task has VisualToolBench's
breakdown fields: ``prompt_category`` (its domain; engineering and maths are reported as STEM),
``eval_focus`` (also the task family, ``type``) and ``turncase``.

``python -m engine.synthetic.vtb BASE OUT_DIR`` writes ``vtb_tasks.json`` and ``vtb_reference.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from engine.contract import atomic_write_json, read_json

TASKS_FILE, REFERENCE_FILE = "vtb_tasks.json", "vtb_reference.json"

# Per base family: (prompt category, evaluation focus, phrases in the reference reply, a phrase that is not).
_FACTS: dict[str, tuple[str, str, list[str], str]] = {
    "image_crop": ("engineering", "region_switch_qa", ["101 x 81", "red_box.png"], "120 x 90"),
    "statistics": ("maths", "hybrid_tool", ["5.33", "5.5", "mode 7"], "variance"),
    "image_annotate": ("generalist", "region_switch_qa", ["blurred", "Target"], "green triangle"),
    "spreadsheet": ("finance", "hybrid_tool", ["4.69", "prices.xlsx"], "5.69"),
}


def _rubrics(facts: list[str], absent: str, seed: int, no_critical: bool = False) -> list[dict[str, object]]:
    """Rubrics quoting the facts (met by the reference reply) and the absent phrase (not met)."""
    out: list[dict[str, object]] = [{"description": f'States "{facts[0]}".', "weight": 2 if no_critical else 5,
                                     "type": "Objective", "category": ["Truthfulness"]}]
    out += [{"description": f'Mentions "{fact}".', "weight": 1 + (seed + i) % 3, "type": "Objective",
             "category": ["Visual Understanding" if i % 2 else "Reasoning"]} for i, fact in enumerate(facts[1:])]
    out.append({"description": "Answers the question that was asked.", "weight": 3, "type": "Subjective",
                "category": ["Instruction Following"]})
    out.append({"description": f'Mentions "{absent}".', "weight": 2, "type": "Objective",
                "category": ["Presentation"]})
    if not no_critical:
        # the released examples flag some rubrics otherwise than weight >= 4; the flag is kept
        out.append({"description": f'Also reports "{absent}".', "weight": 4, "type": "Objective",
                    "category": ["Reasoning"], "critical": False})
        out[0]["critical"] = True
    return out


def vtb_demo(base: list[dict[str, Any]]) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """(tasks, reference trajectories) of the VTB demo made from the rollout demo's references."""
    tasks: list[dict[str, object]] = []
    reference: list[dict[str, object]] = []
    for n, ref in enumerate(base):
        domain, category, facts, absent = _FACTS[ref["type"]]
        single = {"prompt": ref["question"], "images": [ref["image"]] if ref.get("image") else [],
                  "golden_answer": ref["final_reply"], "reference_tool_trajectory": [
                      c["name"] for step in ref["steps"] for c in step["calls"]],
                  "rubrics": _rubrics(facts, absent, n, no_critical=n == 1)}
        variants = [(f"vtb-{n + 1:02d}", category, [single])]
        if n < 2:
            follow = {"prompt": "Now say where the result is, in one sentence.", "images": [],
                      "golden_answer": ref["final_reply"], "reference_tool_trajectory": [],
                      "rubrics": _rubrics(facts[::-1], absent, n + 1)}
            variants.append((f"vtb-{n + 1:02d}-mt", "follow_up", [single, follow]))
        for tid, family, turns in variants:
            question = turns[0]["prompt"] if len(turns) == 1 else "\n".join(
                f"Turn {k + 1}: {t['prompt']}" for k, t in enumerate(turns))
            tasks.append({"id": tid, "image": ref.get("image"), "type": family, "prompt_category": domain,
                          "eval_focus": family, "turncase": "single-turn" if len(turns) == 1 else "multi-turn",
                          "question": question, "turns": turns})
            steps = ref["steps"]
            if tid == "vtb-01-mt":
                missing = {"name": "images/crop", "arguments": {**steps[0]["calls"][0]["arguments"],
                                                                "input_path": "media/missing.png"}}
                steps = [{"step": 1, "calls": [missing]}, *({**st, "step": st["step"] + 1} for st in steps)]
            reference.append({"id": tid, "image": ref.get("image"), "type": family, "question": question,
                              "steps": steps, "final_reply": ref["final_reply"]})
    return tasks, reference


def write_vtb_demo(base_path: Path, out_dir: Path) -> tuple[Path, Path]:
    """Write the VTB demo made from a rollout demo reference file; the tasks and reference paths."""
    tasks, reference = vtb_demo(read_json(Path(base_path), "reference file"))
    out_dir = Path(out_dir)
    atomic_write_json(out_dir / TASKS_FILE, tasks)
    atomic_write_json(out_dir / REFERENCE_FILE, reference)
    return out_dir / TASKS_FILE, out_dir / REFERENCE_FILE


if __name__ == "__main__":
    for written in write_vtb_demo(Path(sys.argv[1]), Path(sys.argv[2])):
        print(written)
