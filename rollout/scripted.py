"""The agent's scripted policy for the loopback chat server: `PlanPolicy` follows reference
trajectories (GT format), one plan per task id (the task of a request is its first message's ``task``
marker, which the scripted driver sets; the question is the fallback, with a warning when several tasks
with different plans share it): it picks each step's tools, calls them, stops after the last step and gives
the reference's final reply; as a curator it accepts the run and proposes the run's own calls as the
optimal trajectory. With the model config's ``noise`` (rollout.scripted_noise: ``rate``, ``seed``) it
errs as a real model does, each (task, trial) the same way in every run: the config's ``trial`` (set by
the rollout for each trial) is part of the seed. Importing this module registers it as the scripted
policy ``plan``.

Run ``python -m rollout.scripted --plans P`` to serve a plan policy from another process; it prints
the base URL on its first line.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import Any, TypedDict

from engine.contract import InputError, read_trajectories, safe_name
from engine.contract.settings import ModelConfig
from engine.contract.settings import Noise as NoiseNode
from rollout import prompts
from rollout.models.loopback import message_texts, register_policy, serve
from rollout.scripted_noise import Noise, Plan, PlannedCall

log = logging.getLogger(__name__)
NO_PLAN: Plan = {"steps": [], "final_reply": "I cannot help with this task."}


class SummaryStep(TypedDict):
    """A step of the curated summary the scripted curator replies with."""

    step: int
    calls: list[PlannedCall]


class PlanPolicy:
    """Replies that follow one plan per task (its steps of calls and its final reply), perturbed by `noise`
    (seeded per task and `trial`)."""

    def __init__(self, plans: dict[str, Plan], questions: dict[str, list[str]] | None = None,
                 noise: Noise | None = None, trial: int | None = None) -> None:
        self.plans = plans
        self.questions = questions or {}
        self.noise = noise or Noise()
        self.trial = trial
        self._warned: set[str] = set()

    @classmethod
    def from_file(cls, path: str | Path, noise: Noise | None = None, trial: int | None = None) -> PlanPolicy:
        """Plans of a reference (GT-format) trajectory file, keyed by task id (as `safe_name` writes it), and
        the ids of each question."""
        plans: dict[str, Plan] = {}
        questions: dict[str, list[str]] = {}
        for task_id, trajectory in read_trajectories(path).tasks.items():
            question = trajectory.raw.get("question")
            if not isinstance(question, str) or not question.strip():
                raise InputError(path, "a scripted plan needs the task's question", task_id=task_id,
                                 field="question")
            plans[safe_name(task_id)] = {
                "steps": [[{"name": c.name, "arguments": dict(c.arguments) if isinstance(c.arguments, dict) else {}}
                           for c in step.calls]
                          for step in trajectory.steps],
                "final_reply": trajectory.raw.get("final_reply", "Done."),
            }
            questions.setdefault(question.strip(), []).append(safe_name(task_id))
        return cls(plans, questions, noise, trial)

    def plan(self, request: dict[str, Any], question: str) -> Plan:
        """The plan of a request's task: by its ``task`` marker, else by its question (the first task's plan
        when several with different plans share it, with a warning once per question)."""
        task = next((m["task"] for m in request.get("messages", []) if isinstance(m.get("task"), str)), None)
        if task in self.plans:
            return self.noise.perturb(self.plans[task], task, self.trial)
        ids = self.questions.get(question.strip(), [])
        if not ids:
            return NO_PLAN
        if len({json.dumps(self.plans[i], sort_keys=True) for i in ids}) > 1 and question not in self._warned:
            self._warned.add(question)
            log.warning("scripted plan chosen by question for a request without a known task id: %d tasks share "
                        "it with different plans (%s); following %s", len(ids), ", ".join(ids[:5]), ids[0])
        return self.noise.perturb(self.plans[ids[0]], ids[0], self.trial)

    def __call__(self, request: dict[str, Any]) -> str:
        """The reply to a chat request, by the phase of its last user message."""
        texts = message_texts(request)
        users = [t for role, t in texts if role == "user"]
        if not users:
            return "I have no task."
        plan = self.plan(request, prompts.question_of(users[0]))
        phase, step = prompts.phase_of(users[-1])
        steps_seen = max((n for n in (prompts.phase_of(u)[1] for u in users) if n), default=0)
        if phase in ("PREPARE", "PROCESS"):
            index = (step or steps_seen) - 1
            calls = plan["steps"][index] if 0 <= index < len(plan["steps"]) else []
            if phase == "PREPARE":
                return json.dumps({"tools": sorted({c["name"] for c in calls})})
            return json.dumps({"tool_calls": calls})
        if phase == "DECISION":
            return "yes" if steps_seen >= len(plan["steps"]) else "no"
        if phase == "VERDICT":
            return json.dumps({"success": True, "reason": "The run followed the plan."})
        if phase == "SUMMARY":
            return json.dumps(self._summary(users))
        return plan["final_reply"]

    @staticmethod
    def _summary(users: list[str]) -> dict[str, list[SummaryStep]]:
        """The curated run's own successful calls, one step per run step."""
        steps: list[SummaryStep] = []
        for line in users[0].splitlines():
            if line.startswith("step ") and " call " in line and "(FAILED)" not in line:
                head, _, rest = line.partition(": ")
                name, _, args = rest.partition(" ")
                number = int(head.split()[1])
                if not steps or steps[-1]["step"] != number:
                    steps.append({"step": number, "calls": []})
                steps[-1]["calls"].append({"name": name, "arguments": json.loads(args)})
        for i, step in enumerate(steps, 1):
            step["step"] = i
        return {"steps": steps}


def plan_policy(model: ModelConfig) -> PlanPolicy:
    """The plan policy of a scripted model config (its ``script``: reference trajectories with questions; its
    ``noise`` and ``trial``)."""
    if not model.script:
        raise InputError("config", "the scripted model needs a script file", field="model.script")
    return PlanPolicy.from_file(Path(model.script), Noise.of(model.noise), model.trial)


register_policy("plan", plan_policy)


def main() -> None:
    """Serve a plan policy until interrupted; the first line printed is the base URL."""
    parser = argparse.ArgumentParser(description="Serve a scripted plan policy on loopback (rollout.scripted).")
    parser.add_argument("--plans", required=True, help="reference trajectories (GT format, with questions)")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds to wait before each reply")
    parser.add_argument("--noise-rate", type=float, default=0.0, help="rate of each perturbation (0 to 1)")
    parser.add_argument("--noise-seed", type=int, default=0, help="seed of the perturbations")
    parser.add_argument("--trial", type=int, default=None, help="the trial served (part of the seed)")
    args = parser.parse_args()
    noise = Noise.of(NoiseNode(args.noise_rate, args.noise_seed))
    serve(PlanPolicy.from_file(args.plans, noise, args.trial), args.delay)


if __name__ == "__main__":
    main()
