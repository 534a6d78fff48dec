"""The judges' reply parsers on recorded reply shapes: every reply the published parsers read as a
number gets the same number here; the others are listed with what this project reads from them.

Each row: the reply, the rubric's range, what the published parser gives (None: no number, the
judge is asked again) and what this project gives.
"""

from __future__ import annotations

import pytest

from engine.judging import parse_class, parse_score

SCORE_SHAPES = [
    ("\\boxed{7}", 0, 10, 7.0, 7.0),
    ("\\boxed{7.5}", 0, 10, 7.5, 7.5),
    ("\\boxed{ 8 }", 0, 10, 8.0, 8.0),
    ("7", 0, 10, 7.0, 7.0),
    ("Score: 6/10", 0, 10, 6.0, 6.0),
    ("\\boxed{} 6", 0, 10, 6.0, 6.0),
    ("\\boxed{\\frac{7}{10}}", 0, 1, None, 0.7),
    ("\\boxed{{8}}", 0, 10, None, 8.0),
    ("\\boxed{11}", 0, 10, None, None),
    ("\\boxed{-1}", 0, 10, None, None),
    ("\\boxed{nan}", 0, 10, None, None),
    ("\\boxed{inf}", 0, 10, None, None),
    ("\\boxed{1e0}", 0, 10, 1.0, 1.0),
    ("\\boxed{+5}", 0, 10, 5.0, 5.0),
    ("\\boxed{.5}", 0, 1, 0.5, 0.5),
    ("\\boxed{5.}", 0, 10, 5.0, 5.0),
    ("\\boxed{1_0}", 0, 10, 10.0, 10.0),
    ("\\boxed{\uff17}", 0, 10, 7.0, 7.0),
    ("The score is \\boxed{8} out of 10", 0, 10, 8.0, 8.0),
    ("\\boxed{8}\\boxed{9}", 0, 10, 8.0, 8.0),
    ("", 0, 10, None, None),
    ("no number here", 0, 10, None, None),
    ("\\boxed{eight}", 0, 10, None, None),
    ("\\boxed{7/10}", 0, 1, None, None),
    ("\\boxed{0.85}", 0, 1, 0.85, 0.85),
    ("\\boxed{8", 0, 10, 8.0, 8.0),
    ("\\boxed{\\dfrac{3}{4}}", 0, 1, None, 0.75),
    ("**Score:** \\boxed{9}\n\nThe agent planned well.", 0, 10, 9.0, 9.0),
    ("\\boxed{ } 6", 0, 10, None, 6.0),
    ("1" * 400, 0, 10, None, None),
]
CLASS_SHAPES = [
    ("4", 4, 4), ("  3\n", 3, 3), ("2\nThe arguments are invalid.", 2, 2), ("+1", 1, 1), ("03", 3, 3),
    ("\u0663", 3, 3), ("\uff14", 4, 4), ("Class 3", None, 3), ("The answer is 4.", None, 4), ("4.", None, 4),
    ("3.0", None, None), ("5", None, None), ("0", None, None), ("", None, None), ("**2**", None, 2),
    ("1 or 2", None, 1), ("\\boxed{4}", None, 4), ("Category: 2 (Invalid Invocation Arguments)", None, 2),
    ("12", None, None), ("\n\n4", 4, 4), ("Successful call", None, None),
]


def _score(reply: str, low: float, high: float) -> float | None:
    try:
        return parse_score(reply, low, high)
    except ValueError:
        return None


def _class(reply: str) -> int | None:
    try:
        return parse_class(reply)
    except ValueError:
        return None


def test_the_recorded_shapes_are_counted() -> None:
    assert len(SCORE_SHAPES) == 30 and len(CLASS_SHAPES) == 21


@pytest.mark.parametrize(("reply", "low", "high", "published", "ours"), SCORE_SHAPES)
def test_score_shapes(reply: str, low: float, high: float, published: float | None, ours: float | None) -> None:
    got = _score(reply, low, high)
    assert got == ours
    if published is not None:
        assert got == published


@pytest.mark.parametrize(("reply", "published", "ours"), CLASS_SHAPES)
def test_class_shapes(reply: str, published: int | None, ours: int | None) -> None:
    got = _class(reply)
    assert got == ours
    if published is not None:
        assert got == published


def test_named_edge_cases() -> None:
    assert parse_score("\\boxed{} 6", 0, 10) == 6
    assert parse_score("\\boxed{\\frac{7}{10}}", 0, 1) == pytest.approx(0.7)
    assert parse_score("\\boxed{{8}}", 0, 10) == 8


def test_a_box_out_of_range_is_no_score_even_with_a_number_after_it() -> None:
    with pytest.raises(ValueError, match="out of range"):
        parse_score("\\boxed{12} 5", 0, 10)
