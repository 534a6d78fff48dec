"""Judging: what an evaluator asks a judge pool with (rubrics, questions, reply parsing, `first_answer`),
the M3 prompts and ensemble, the named reducers, the judges' agreement, the call outcome rules, and the
check sandbox. It imports nothing of the engine but engine.contract; the concrete pool is the judge
app's (rollout.judges.pool). Every other module imports these names from here, never a submodule."""

from engine.judging.call_rules import (
    CALL_CLASSES,
    CLASS_OF_DIGIT,
    ILLEGAL_CALLING,
    NOT_MADE_RULE,
    UNDECIDED,
    Catalogue,
    Decision,
    decide,
    error_state,
    illegal_format,
    result_text,
    tally,
)
from engine.judging.ensemble import M3_REDUCER, entry_scores, judge_task, judges_agreement, task_image
from engine.judging.inter_rater import agreement, judges_matrix, krippendorff_alpha
from engine.judging.prompts import (
    CALL_OUTCOME,
    COMPLETION,
    GROUNDING,
    INFORMATION_GROUNDING,
    OUTCOME,
    TASK_COMPLETION,
    completion_payload,
    grounding_payload,
    outcome_payload,
)
from engine.judging.questions import (
    JudgeFailure,
    JudgeSpec,
    Pool,
    Question,
    Rubric,
    first_answer,
    json_object,
    parse_class,
    parse_score,
)
from engine.judging.reducers import REDUCERS, first, majority, mean, mean_or_none, reducer, trimmed_mean
from engine.judging.sandbox.runner import CHECK_CALL, run_contained
from engine.judging.sandbox.settings import BASE_ENV, CheckRun, Limits, SandboxSettings, bubblewrap, check_settings

__all__ = [
    "BASE_ENV", "CALL_CLASSES", "CALL_OUTCOME", "CHECK_CALL", "CLASS_OF_DIGIT", "COMPLETION", "Catalogue", "CheckRun",
    "Decision", "GROUNDING", "ILLEGAL_CALLING", "INFORMATION_GROUNDING", "JudgeFailure", "JudgeSpec", "Limits",
    "M3_REDUCER", "NOT_MADE_RULE", "OUTCOME", "Pool", "Question", "REDUCERS", "Rubric", "SandboxSettings",
    "TASK_COMPLETION", "UNDECIDED", "agreement", "bubblewrap", "check_settings", "completion_payload", "decide",
    "entry_scores", "error_state", "first", "first_answer", "grounding_payload", "illegal_format", "json_object",
    "judge_task", "judges_agreement", "judges_matrix", "krippendorff_alpha", "majority", "mean", "mean_or_none",
    "outcome_payload", "parse_class", "parse_score", "reducer", "result_text", "run_contained", "tally", "task_image",
    "trimmed_mean",
]
