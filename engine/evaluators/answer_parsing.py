"""What answer equivalence (engine.evaluators.answer_equivalence) asks and how it reads the replies: its two
prompts (the project's strict one, the published layout), the two readings of a judge's reply (`parse_verdict`,
`parse_published`), the replies the published judger reads otherwise (`published_oddity`) and the offline scripted
judge's reply (`scripted_answer`); the reading a run uses (`parser_of`)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from engine.contract import ConfigError, JsonMapping, JsonObject
from engine.judging import Rubric

NAME = "answer_equivalence"
PARSERS: tuple[str, ...] = ("published", "strict")
"""The readings of a judge's reply: the published judger's (MCPVerse's layout) and the project's strict one."""
REDUCERS: Mapping[str, str] = {"published": "first", "strict": "majority"}
"""The reducer (engine.judging.reducers) each reading combines its judges' scores with."""

PROMPT = Rubric(
    NAME, "ae-1",
    "You decide whether an AI agent's final answer to a question agrees with the reference answer.\n"
    "You are given the question, the reference answer and the agent's answer, as JSON.\n"
    "The answers agree when they say the same thing: the same facts, values and conclusions. Wording, "
    "order, formatting, units written differently and rounding that keeps the reference's precision do not "
    "matter; a missing, extra or contradicting key fact does. An answer that hedges between several "
    "values, or says the task could not be done, does not agree.\n"
    "First explain your reasoning in a few sentences. Then end your reply with one line of JSON: "
    "{\"score\": 1} when the answers agree, {\"score\": 0} when they do not.")
"""The strict reading's prompt."""

PUBLISHED_PROMPT = Rubric(
    NAME, "ae-published-1",
    "You grade whether a model's output and a reference answer are consistent in meaning. They need not "
    "be worded alike: the same or equivalent meaning is consistent, even in different languages.\n"
    "Give your reason first. Then give the score as JSON in a fenced block: ```json {\"score\": 1} ``` "
    "when they are consistent, ```json {\"score\": 0} ``` when they are not.",
    user="The question, the reference answer and the model output follow.\n\n<question>\n{question}\n\n\n"
         "<reference>\n{reference_answer}\n\n\n<model output>\n{agent_answer}\n\nNow give your judgement.")
"""The published reading's prompt: MCPVerse's layout (system: reason, then a fenced JSON score; user:
the question, the reference and the model output, tagged)."""

_SCORE = re.compile(r"""["']?score["']?\s*[:=]\s*["']?\s*([01](?:\.0+)?)\s*["']?\s*[,}]""")
_FENCED = re.compile(r"```json\s*(\{.*?\})\s*```", re.DOTALL)


def parser_of(options: JsonMapping) -> str:
    """The ``parser`` setting (default ``published``); ConfigError naming it when unknown."""
    parser = options.get("parser") or "published"
    if parser not in PARSERS:
        raise ConfigError(f"evaluators.{NAME}.parser: unknown reading {parser!r} (expected one of "
                          f"{', '.join(PARSERS)})")
    return parser


def parse_verdict(text: str) -> int:
    """The strict reading of a judge reply: the last ``"score": 0|1`` of a JSON-like object in it (the
    reasoning comes first); ValueError when there is none."""
    found = _SCORE.findall(text or "")
    if not found:
        raise ValueError(f"no {{\"score\": 0|1}} in {(text or '')[-80:]!r}")
    return int(float(found[-1]))


def parse_published(text: str) -> float:
    """The published reading of a judge reply: the ``score`` of the first fenced ```json {...}``` block
    (JSON; a boolean is 0/1, a numeric string its number, a fraction kept); ValueError when there is no
    such block or its score is no number in [0, 1]."""
    block = _FENCED.search(text or "")
    if block is None:
        raise ValueError(f"no fenced ```json {{...}}``` block in {(text or '')[-80:]!r}")
    try:
        value = json.loads(block.group(1))["score"]
        score = float(value.strip() if isinstance(value, str) else value)
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"no number under \"score\" in the first fenced block {block.group(1)[:60]!r}") from exc
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"score {score!r} outside [0, 1] in the first fenced block")
    return int(score) if score in (0.0, 1.0) else score


ODD_SCORES: tuple[str, ...] = ("score_boolean", "score_out_of_range")
"""The judge replies MCPVerse's published judger reads otherwise than this project: a score of true/false
(it keeps the boolean, which its mean counts as 1/0: the same here) and a number outside [0, 1] (it keeps the
number, so a 2 adds 2 to the level's mean; here the reply is a failed attempt, asked again)."""


def published_oddity(text: str) -> str | None:
    """Which of ODD_SCORES a reply's first fenced ```json {...}``` block's score is, else None."""
    block = _FENCED.search(text or "")
    try:
        value = json.loads(block.group(1)).get("score") if block else None
    except (ValueError, AttributeError):
        return None
    if isinstance(value, bool):
        return "score_boolean"
    if isinstance(value, (int, float)) and not 0.0 <= value <= 1.0:
        return "score_out_of_range"
    return None


def normalized(text: str) -> str:
    """Lower case, punctuation (except decimal points) dropped, whitespace collapsed."""
    return " ".join(re.sub(r"[^\w.]|\.(?!\d)", " ", text.lower()).split())


def scripted_answer(payload: JsonObject, bias: float) -> str:
    """The offline scripted judge's reply: the answers agree when the normalized reference answer occurs
    in the normalized agent answer."""
    agree = f" {normalized(str(payload['reference_answer']))} " in f" {normalized(str(payload['agent_answer']))} "
    return (f"The reference answer is {'' if agree else 'not '}contained in the agent's answer."
            f"\n```json\n{{\"score\": {int(agree)}}}\n```")
