"""VisualToolBench scoring: a rubric's verdict from its judges' labels, a task's weighted rubric score
and critical-gated pass, and the averages ARS and APR with their breakdowns, under one of two profiles.

``published`` (the default) reproduces VisualToolBench's published judge scripts
(``scripts/run_judge_single_turn.py``, ``run_judge_multi_turn.py``) and their analysis:

- one judge: a rubric's label is its first judge's (the reducer ``first``); a judge that gave no usable
  reply in its attempts counts as "Not Met" and the task is still scored;
- only the exact labels "Met" and "Not Met" count: "Met" adds the rubric's weight, "Not Met" of a critical
  rubric fails the task, any other label ("Partially Met", "met") adds no weight and fails nothing;
- critical = weight >= 4 (a rubric's ``critical`` flag is never read);
- s_i = met weight / total weight of every rubric of the answered turns (0 when there is none); pass_i = no
  critical rubric Not Met, so a task without any critical rubric passes whatever its verdicts;
- multi-turn: the rubrics of turns the model never answered are dropped.

``strict``, the project's stricter reading: a rubric's verdict is the majority of its judges' labels read
without regard to case or spacing (the reducer ``majority``: a tie is Not Met); a judge without usable
reply or with another label is not counted, and a rubric no judge answered leaves its task unscored;
critical = the task's flag when given, else weight >= 4; a task without any critical rubric passes only
when every rubric is met; the rubrics of an unanswered turn count as Not Met.

ARS and APR are the means of s_i and pass_i over the scored tasks (macro over tasks); the breakdowns
(by rubric category, domain with the STEM merge, evaluation focus, single/multi-turn) take the same
means over their tasks, a category's with each task scored on its rubrics of that category alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from engine.evaluators.vtb_records import GROUPS, RubricItem, domain_group
from engine.judging import mean_or_none, reducer

PROFILES: tuple[str, ...] = ("published", "strict")
DEFAULT_PROFILE = "published"
REDUCERS: Mapping[str, str] = {"published": "first", "strict": "majority"}
"""The reducer (engine.judging.reducers) each profile combines a rubric's judges with."""
MET, NOT_MET = "Met", "Not Met"

ODD_REPLIES: tuple[str, ...] = ("fenced_replies", "empty_replies")
"""The judge replies VisualToolBench's published judge scripts read otherwise than this project: a reply
fenced in ```json ... ``` (its ``json.loads`` raises and the chunk of tasks is lost; here the object is read
from the fence) and an empty reply (retried, then ``json.loads(None)`` raises: the chunk is lost; here a
failed attempt, asked again). Counted per reply read, in a judged entry's ``odd_replies`` and the
aggregate."""
COUNTS: tuple[str, ...] = (*ODD_REPLIES, "unanswered_middle_turns")
"""The counts the aggregate gives only when not zero: ODD_REPLIES and the turns never answered that a later
turn answers (the published scripts judge such a turn on whatever text the response file holds)."""


class _Failed:
    """The vote of a judge that gave no usable reply in its attempts."""

    def __repr__(self) -> str:
        return "FAILED"


FAILED: Final = _Failed()
NEITHER: Final = "neither"
"""A rubric whose label is neither "Met" nor "Not Met" under the published profile."""


def check_profile(value: Any) -> str:
    """The profile named, checked; ValueError naming the choices otherwise."""
    if value not in PROFILES:
        raise ValueError(f"unknown VisualToolBench profile {value!r}; expected one of {', '.join(PROFILES)}")
    return str(value)


def _fold(label: Any) -> str | None:
    return " ".join(label.split()).casefold() if isinstance(label, str) else None


def _label(votes: Sequence[Any], profile: str) -> Any:
    """The label the profile's reducer keeps of a rubric's votes, FAILED when there is none."""
    return reducer(REDUCERS[profile])(votes) if votes else FAILED


def rubric_outcome(votes: Sequence[Any], profile: str) -> bool | str | None:
    """True (Met), False (Not Met), NEITHER (published: another label) or None (strict: no verdict)
    of one rubric's votes (labels, or FAILED for a judge without usable reply), in judge order.

    >>> rubric_outcome(["Partially Met", MET, MET], "published"), rubric_outcome([MET, FAILED], "published")
    ('neither', True)
    >>> rubric_outcome(["met", "Not Met", FAILED, "Partially Met"], "strict"), rubric_outcome([FAILED], "strict")
    (False, None)
    """
    if profile == "published":
        label = _label(votes, profile)
        if label is FAILED or label == NOT_MET:
            return False
        return True if label == MET else NEITHER
    folded = [_fold(v) for v in votes if v is not FAILED]
    counted = [f == MET.casefold() for f in folded if f in (MET.casefold(), NOT_MET.casefold())]
    if not counted:
        return None
    return bool(reducer(REDUCERS[profile])(counted))


def other_label(votes: Sequence[Any], profile: str) -> Any:
    """The label that counts as neither Met nor Not Met (published: the first judge's, compared exactly;
    strict: the first such label of any judge, compared without regard to case), else None."""
    if profile == "published":
        label = _label(votes, profile)
        return None if label is FAILED or label in (MET, NOT_MET) else label
    for label in votes:
        if label is not FAILED and _fold(label) not in (MET.casefold(), NOT_MET.casefold()):
            return label
    return None


@dataclass(frozen=True)
class TaskScore:
    """A task's (or a turn's) weighted rubric score and pass; both None when it cannot be scored."""

    score: float | None
    passed: bool | None
    no_critical: bool


def task_score(items: Sequence[RubricItem], outcomes: Sequence[bool | str | None], profile: str) -> TaskScore:
    """s and pass of some rubrics and their outcomes (rubric_outcome) by the profile's rules.

    The worked example of VisualToolBench's Fig. 2: weights 3, 4, 3, 5, 2 (two critical rubrics, 4 and 5)
    with verdicts Met, Not Met, Met, Not Met, Met score (3 + 3 + 2) / 17 and fail:

    >>> items = [RubricItem(f"r{k}", w, w >= 4, None, ()) for k, w in enumerate([3, 4, 3, 5, 2])]
    >>> s = task_score(items, [True, False, True, False, True], "published")
    >>> round(s.score, 2), s.passed
    (0.47, False)
    """
    no_critical = not any(r.critical for r in items)
    total = sum(r.weight for r in items)
    if profile == "published":
        got = sum(r.weight for r, o in zip(items, outcomes) if o is True)
        failed = any(r.critical and o is False for r, o in zip(items, outcomes))
        return TaskScore(got / total if total > 0 else 0.0, not failed, no_critical)
    if not items:
        raise ValueError("a task needs at least one rubric")
    if any(o is None or o is NEITHER for o in outcomes):
        return TaskScore(None, None, no_critical)
    score = sum(r.weight for r, o in zip(items, outcomes) if o is True) / total
    if no_critical:
        return TaskScore(score, all(o is True for o in outcomes), True)
    return TaskScore(score, all(o is True for r, o in zip(items, outcomes) if r.critical), False)


@dataclass(frozen=True)
class TaskVerdicts:
    """What a verdicts file says of one task: its rubrics with their votes (labels or FAILED, in judge
    order), which turns the model answered, its breakdown fields, the (judge, rubric) pairs without
    usable reply, and the counts of ODD_REPLIES its judges gave."""

    rubrics: tuple[tuple[RubricItem, tuple[Any, ...]], ...]
    answered: tuple[bool, ...]
    groups: Mapping[str, str]
    failed_judges: int = 0
    odd_replies: Mapping[str, int] = field(default_factory=dict)


def _score_json(score: TaskScore) -> dict[str, Any]:
    return {"score": score.score, "pass": score.passed, "no_critical": score.no_critical}


def task_values(verdicts: TaskVerdicts, profile: str) -> dict[str, Any]:
    """One task's values: ``rubric_score`` and ``pass_rate`` (0/1; both absent when it cannot be scored),
    per turn its score and pass, its counted rubrics with their ``met`` (True, False, None), per rubric
    category its score and pass, its breakdown fields and counts."""
    kept: list[tuple[RubricItem, bool | str | None]] = []
    per_turn: list[list[tuple[RubricItem, bool | str | None]]] = [[] for _ in verdicts.answered]
    others = 0
    for item, votes in verdicts.rubrics:
        if not verdicts.answered[item.turn]:
            if profile == "published":
                continue  # dropped, as the published multi-turn judge does
            outcome: bool | str | None = False
        else:
            outcome = rubric_outcome(votes, profile)
            others += other_label(votes, profile) is not None
        kept.append((item, outcome))
        per_turn[item.turn].append((item, outcome))
    score = task_score([i for i, _ in kept], [o for _, o in kept], profile)
    turns = [_score_json(task_score([i for i, _ in t], [o for _, o in t], profile)) if t else
             {"score": None, "pass": None, "no_critical": True} for t in per_turn]
    by_category: dict[str, list[Any]] = {}
    if score.score is not None:
        for category in sorted({c for item, _ in kept for c in item.categories}):
            pairs = [(i, o) for i, o in kept if category in i.categories]
            sub = task_score([p[0] for p in pairs], [p[1] for p in pairs], profile)
            by_category[category] = [sub.score, 1.0 if sub.passed else 0.0]
    values: dict[str, Any] = {
        "rubrics": [(i, o if isinstance(o, bool) else None) for i, o in kept], "turns": turns,
        "no_critical": score.no_critical, "unanswered": verdicts.failed_judges, "other_labels": others,
        "dropped_turns": sum(1 for a in verdicts.answered if not a) if profile == "published" else 0,
        "unanswered_turns": sum(1 for a in verdicts.answered if not a),
        "unanswered_middle_turns": sum(1 for k, a in enumerate(verdicts.answered) if not a and any(
            verdicts.answered[k + 1:])),
        **{k: verdicts.odd_replies.get(k, 0) for k in ODD_REPLIES},
        "critical_mismatches": sum(r.mismatch for r, _ in verdicts.rubrics),
        "groups": dict(verdicts.groups), "by_category": by_category, "profile": profile}
    if score.score is not None:
        values["rubric_score"] = score.score
        values["pass_rate"] = 1.0 if score.passed else 0.0
    return values


def _means(scored: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {"ARS": mean_or_none([v["rubric_score"] for v in scored]),
            "APR": mean_or_none([v["pass_rate"] for v in scored]), "tasks": len(scored)}


def breakdown(scored: Sequence[Mapping[str, Any]], group: str) -> dict[str, dict[str, Any]]:
    """ARS, APR and tasks per value of a breakdown field (domains with the STEM merge), in name order."""
    buckets: dict[str, list[Mapping[str, Any]]] = {}
    for v in scored:
        name = v["groups"][group]
        buckets.setdefault(domain_group(name) if group == "domain" else name, []).append(v)
    return {name: _means(buckets[name]) for name in sorted(buckets)}


def domain_turn_breakdown(scored: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """ARS, APR and tasks per domain (with the STEM merge) and, within it, per single/multi-turn: the
    cells of VisualToolBench's Tables 3 and 7."""
    buckets: dict[str, list[Mapping[str, Any]]] = {}
    for v in scored:
        buckets.setdefault(domain_group(v["groups"]["domain"]), []).append(v)
    return {name: breakdown(buckets[name], "turncase") for name in sorted(buckets)}


def aggregate_values(present: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``rubrics`` block over some tasks' values: ARS, APR, the counts (those of COUNTS when not zero),
    and the breakdowns by category, domain, evaluation focus, single/multi-turn and domain x
    single/multi-turn."""
    scored = [v for v in present if "rubric_score" in v]
    by_category: dict[str, list[list[float]]] = {}
    for v in scored:
        for category, pair in v["by_category"].items():
            by_category.setdefault(category, []).append(pair)
    profiles = sorted({v["profile"] for v in present})
    return {
        **_means(scored), "profile": profiles[0] if len(profiles) == 1 else None,
        "unscored": len(present) - len(scored),
        "no_critical": sum(1 for v in scored if v["no_critical"]),
        "unanswered": sum(v["unanswered"] for v in present),
        "other_labels": sum(v["other_labels"] for v in present),
        "dropped_turns": sum(v["dropped_turns"] for v in present),
        "critical_mismatches": sum(v["critical_mismatches"] for v in present),
        **{k: n for k in COUNTS if (n := sum(v.get(k, 0) for v in present))},
        "by_category": {c: {"ARS": mean_or_none([p[0] for p in pairs]), "APR": mean_or_none([p[1] for p in pairs]),
                            "tasks": len(pairs)} for c, pairs in sorted(by_category.items())},
        **{f"by_{group}": breakdown(scored, group) for group in GROUPS},
        "by_domain_turncase": domain_turn_breakdown(scored)}
