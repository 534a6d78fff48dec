"""The named reducers and the agreement function against plain Python written here, one task (or one
item) at a time: hand-computed small cases, Krippendorff's alpha by its definition and by the
krippendorff package directly, and the evaluators' profiles naming reducers that exist."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.evaluators import answer_parsing, vtb_scoring
from engine.evaluators.vtb_rubrics import agreement as rubrics_agreement
from engine.judging import (
    M3_REDUCER,
    REDUCERS,
    agreement,
    first,
    judges_agreement,
    judges_matrix,
    majority,
    reducer,
    trimmed_mean,
)


def plain_trimmed(values: list[float]) -> float:
    """Drop one lowest and one highest when there are three or more, then sum in order and divide."""
    kept = sorted(values)
    if len(kept) >= 3:
        kept = kept[1:-1]
    total = 0.0
    for v in kept:
        total += v
    return total / len(kept)


def plain_majority(votes: list[int]) -> int:
    ones = sum(1 for v in votes if v)
    return 1 if ones > len(votes) - ones else 0


def plain_alpha(rows: list[list[float | None]], nominal: bool) -> float:
    """Krippendorff's alpha by its definition: observed over expected disagreement of the pairable
    values (items rated by two judges or more)."""
    units = [[r[k] for r in rows if r[k] is not None] for k in range(len(rows[0]))]
    units = [u for u in units if len(u) >= 2]
    delta = (lambda a, b: float(a != b)) if nominal else (lambda a, b: (a - b) ** 2)
    values = [v for u in units for v in u]
    n = len(values)
    observed = sum(sum(delta(a, b) for a, b in itertools.permutations(u, 2)) / (len(u) - 1) for u in units) / n
    expected = sum(delta(a, b) for a, b in itertools.permutations(values, 2)) / (n * (n - 1))
    return 1.0 - observed / expected


def test_registry_names_every_reducer_and_refuses_others() -> None:
    assert set(REDUCERS) == {"trimmed_mean", "majority", "first"}
    assert reducer("trimmed_mean") is trimmed_mean and reducer("majority") is majority and reducer("first") is first
    with pytest.raises(ValueError, match="unknown reducer 'mean'; expected one of trimmed_mean, majority, first"):
        reducer("mean")


def test_profiles_name_their_reducers() -> None:
    assert M3_REDUCER == "trimmed_mean"
    assert vtb_scoring.REDUCERS == {"published": "first", "strict": "majority"}
    assert answer_parsing.REDUCERS == {"published": "first", "strict": "majority"}
    assert set(vtb_scoring.REDUCERS) == set(vtb_scoring.PROFILES)
    assert set(answer_parsing.REDUCERS) == set(answer_parsing.PARSERS)


@given(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=7))
def test_trimmed_mean_is_the_plain_one(values: list[float]) -> None:
    assert trimmed_mean(values) == plain_trimmed(values)          # the same summation order: bit-identical


def test_trimmed_mean_by_hand() -> None:
    assert trimmed_mean([0.8, 0.6, 0.9, 0.7]) == (0.7 + 0.8) / 2
    assert trimmed_mean([0.2, 1.0]) == 0.6                          # two judges: the plain mean
    assert trimmed_mean([0.3, 0.3, 0.9]) == 0.3                      # three: the median
    assert trimmed_mean([0.4]) == 0.4
    with pytest.raises(ValueError):
        trimmed_mean([])


@given(st.lists(st.sampled_from([0, 1]), max_size=8))
def test_majority_is_the_plain_count(votes: list[int]) -> None:
    assert majority(votes) == plain_majority(votes)
    assert majority([bool(v) for v in votes]) == plain_majority(votes)


def test_majority_ties_are_zero_by_hand() -> None:
    cases = ([1], [0], [1, 0], [1, 1, 0], [0, 0, 1], [1, 1, 0, 0], [1, 1, 1, 0], [])
    assert [majority(v) for v in cases] == [1, 0, 0, 1, 0, 0, 1, 0]


def test_first_takes_the_first_judge() -> None:
    assert first([0.5, 1, 0]) == 0.5 and first(["Not Met", "Met"]) == "Not Met"
    with pytest.raises(ValueError):
        first([])


LABELS = st.sampled_from(["Met", "Not Met", "met", " not  MET", "Partially Met", 3, vtb_scoring.FAILED])


@given(st.lists(LABELS, max_size=6))
def test_rubric_outcomes_are_the_plain_readings(votes: list) -> None:
    """published: the first judge's exact label (none or FAILED: Not Met); strict: the majority of the
    labels read without regard to case or spacing, others left out, a tie Not Met, none: no verdict."""
    head = votes[0] if votes else vtb_scoring.FAILED
    published = False if head in (vtb_scoring.FAILED, "Not Met") else True if head == "Met" else "neither"
    assert vtb_scoring.rubric_outcome(votes, "published") == published
    read = [" ".join(v.split()).lower() for v in votes if isinstance(v, str)]
    met, not_met = read.count("met"), read.count("not met")
    strict = None if met + not_met == 0 else met > not_met
    assert vtb_scoring.rubric_outcome(votes, "strict") is strict


def test_nominal_agreement_by_hand() -> None:
    """Two judges, four rubrics (1 Met, 0 Not Met), one rubric split: of 8 values 3 are 1, so
    D_o = 2/8, D_e = 2*3*5/(8*7) and alpha = 1 - (1/4)/(30/56) = 8/15; the pair agrees on 3 of 4."""
    matrix = np.array([[1, 1, 0, 0], [1, 0, 0, 0]], dtype=float)
    found = agreement(matrix, "nominal", ["r1", "r2", "r3", "r4"])
    assert found.alpha == pytest.approx(8 / 15, abs=1e-12)
    assert [(p.first, p.second, p.value, p.items) for p in found.pairs] == [(0, 1, 0.75, 4)]
    assert [(d.item, d.disagreement) for d in found.ranked] == [(1, 1.0), (0, 0.0), (2, 0.0), (3, 0.0)]


def test_interval_agreement_by_hand() -> None:
    """Two judges, two items (0, 0) and (1, 0.5): D_o = 0.5/4, D_e = 5.5/12, alpha = 8/11; the
    spreads 0.5 and 0; Spearman's rho undefined (a judge that does not vary)."""
    found = agreement(np.array([[0.0, 1.0], [0.0, 0.5]]), "interval", ["a", "b"])
    assert found.alpha == pytest.approx(8 / 11, abs=1e-12)
    assert [(d.item, d.disagreement) for d in found.ranked] == [(1, 0.5), (0, 0.0)]
    three = agreement(np.array([[0.1, 0.5, 0.9], [0.3, 0.2, 1.0], [0.4, 0.4, 0.4]]), "interval", ["a", "b", "c"])
    # ranks 1 2 3 against 2 1 3: d^2 = 1 + 1 + 0, rho = 1 - 6*2/(3*8) = 0.5; the constant judge: undefined
    assert [p.value for p in three.pairs] == [pytest.approx(0.5), None, None]


def test_undefined_alpha_and_unknown_level() -> None:
    one_judge = agreement(np.array([[0.1, 0.9]]), "interval", ["a", "b"])
    assert one_judge.alpha is None and one_judge.pairs == () and one_judge.ranked == ()
    assert agreement(np.array([[1.0, 1.0], [1.0, 1.0]]), "nominal", ["a", "b"]).alpha is None
    assert agreement(np.array([[1.0, np.nan], [np.nan, 0.0]]), "nominal", ["a", "b"]).alpha is None
    with pytest.raises(ValueError, match="unknown level 'ordinal'"):
        agreement(np.array([[1.0, 0.0], [1.0, 1.0]]), "ordinal", ["a", "b"])  # type: ignore[arg-type]


ratings = st.lists(st.lists(st.one_of(st.none(), st.sampled_from([0.0, 0.25, 0.5, 1.0])), min_size=5, max_size=5),
                   min_size=2, max_size=4)


@given(ratings, st.booleans())
def test_alpha_is_the_definition_and_the_package(rows: list[list[float | None]], nominal: bool) -> None:
    import krippendorff

    matrix = np.array([[np.nan if v is None else v for v in row] for row in rows])
    found = agreement(matrix, "nominal" if nominal else "interval", list(range(5)))
    pairable = [v for k in range(5) if sum(r[k] is not None for r in rows) >= 2 for v in (r[k] for r in rows)
                if v is not None]
    if len(set(pairable)) < 2:
        assert found.alpha is None
        return
    level = "nominal" if nominal else "interval"
    assert found.alpha == krippendorff.alpha(reliability_data=matrix, level_of_measurement=level)
    assert found.alpha == pytest.approx(plain_alpha(rows, nominal), abs=1e-9)


@given(ratings)
def test_pairs_and_ranking_are_the_plain_ones(rows: list[list[float | None]]) -> None:
    from scipy.stats import spearmanr

    matrix = np.array([[np.nan if v is None else v for v in row] for row in rows])
    keys = ["e", "d", "c", "b", "a"]
    interval, nominal = (agreement(matrix, level, keys) for level in ("interval", "nominal"))
    for p, q, (i, j) in zip(interval.pairs, nominal.pairs, itertools.combinations(range(len(rows)), 2)):
        both = [(a, b) for a, b in zip(rows[i], rows[j]) if a is not None and b is not None]
        assert p.items == q.items == len(both)
        assert q.value == (sum(a == b for a, b in both) / len(both) if both else None)
        xs, ys = [a for a, _ in both], [b for _, b in both]
        varies = len(both) >= 2 and len(set(xs)) > 1 and len(set(ys)) > 1
        assert p.value == (pytest.approx(spearmanr(xs, ys).statistic) if varies else None)
    items = [[r[k] for r in rows if r[k] is not None] for k in range(5)]
    spread = sorted(((max(u) - min(u), keys[k], k) for k, u in enumerate(items) if len(u) >= 2),
                    key=lambda t: (-t[0], t[1]))
    assert [(d.item, d.disagreement) for d in interval.ranked] == [(k, s) for s, _, k in spread]
    minority = sorted(((len(u) - max(u.count(v) for v in u), keys[k], k) for k, u in enumerate(items) if len(u) >= 2),
                      key=lambda t: (-t[0], t[1]))
    assert [(d.item, d.disagreement) for d in nominal.ranked] == [(k, float(m)) for m, _, k in minority]


def test_judges_matrix_sorts_the_judges() -> None:
    names, matrix = judges_matrix([{"b": 0.5, "a": 1.0}, {"b": 0.0}])
    assert names == ["a", "b"]
    assert np.array_equal(matrix, np.array([[1.0, np.nan], [0.5, 0.0]]), equal_nan=True)
    assert judges_matrix([])[1].shape == (0, 0)


def test_m3_judges_agreement_block() -> None:
    """The interval block of the M3 judges' file: judges, tasks, alpha, rho per pair and the widest
    spreads first (ties by id)."""
    def entry(*scores: float) -> dict:
        return {"final": 0.5, "judges": [{"name": n, "score": s} for n, s in zip("ab", scores)]}

    entries = {"t2": entry(0.1, 0.9), "t1": entry(0.4, 0.5), "t3": entry(0.2, 0.3), "t0": entry(0.6, 0.6)}
    block = judges_agreement(entries, top=3)["task_completion"]
    assert block["judges"] == ["a", "b"] and block["tasks"] == 4
    alpha = plain_alpha([[0.6, 0.4, 0.1, 0.2], [0.6, 0.5, 0.9, 0.3]], False)
    assert block["krippendorff_alpha"] == pytest.approx(alpha, abs=1e-12)
    # ranks 4 3 1 2 against 3 2 4 1: d^2 = 1 + 1 + 9 + 1, rho = 1 - 6*12/(4*15) = -0.2
    assert block["spearman"] == [{"judges": ["a", "b"], "rho": pytest.approx(-0.2), "tasks": 4}]
    assert [(d["id"], d["spread"]) for d in block["most_disagreed"]] == [("t2", 0.9 - 0.1), ("t1", 0.5 - 0.4),
                                                                        ("t3", 0.3 - 0.2)]
    assert judges_agreement(entries)["information_grounding"] == {
        "judges": [], "tasks": 0, "krippendorff_alpha": None, "spearman": [], "most_disagreed": []}


def test_rubrics_agreement_block() -> None:
    """The nominal block of the rubric verdicts file: rubrics in file order, judges' labels Met / not,
    the pairs' shares, and only the rubrics some judge leaves the majority of, as labels."""
    def rubric(**labels: str) -> dict:
        return {"judges": [{"name": n, "verdict": v} if v != "error" else {"name": n, "error": "x"}
                           for n, v in labels.items()]}

    per_id = {"v2": {"turns": [{"rubrics": [rubric(a="Met", b="Not Met", c="Met"), rubric(a="Met", b="Met",
                                                                                          c="Met")]}]},
              "v1": {"turns": [{"rubrics": [rubric(a="Not Met", b="Met", c="error")]},
                               {"rubrics": [rubric(a="Partially Met", b="Not Met", c="Not Met")]}]}}
    block = rubrics_agreement(per_id, top=5)
    assert block["judges"] == ["a", "b", "c"] and block["rubrics"] == 4
    rows = [[1.0, 1.0, 0.0, 0.0], [0.0, 1.0, 1.0, 0.0], [1.0, 1.0, None, 0.0]]
    assert block["krippendorff_alpha"] == pytest.approx(plain_alpha(rows, True), abs=1e-12)
    assert [(p["judges"], p["agreement"], p["rubrics"]) for p in block["pairwise"]] == [
        (["a", "b"], 0.5, 4), (["a", "c"], 1.0, 3), (["b", "c"], 2 / 3, 3)]
    assert [(d["id"], d["turn"], d["rubric"]) for d in block["most_disagreed"]] == [("v1", 1, 1), ("v2", 1, 1)]
    assert block["most_disagreed"][0]["verdicts"] == {"a": "Not Met", "b": "Met"}
    assert math.isfinite(block["krippendorff_alpha"])
