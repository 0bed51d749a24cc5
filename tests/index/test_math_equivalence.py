"""Tricky math equivalences we wrote ourselves, and the last-\\boxed{} extractor."""

from __future__ import annotations

import pytest

from arena.index.graders.math import answers_equal, grade_math, last_boxed, parse_equality_reply
from arena.prompts import load_template

EQUIVALENT = [
    ("72", "72^\\circ"), ("72", "72 degrees"), ("64", "64 \\text{ square feet}"), ("10", "10\\text{ cm}"),
    ("[1,2)", "[1, 2)"), ("(-\\infty, 2) \\cup (3, \\infty)", "(-\\infty,2)\\cup(3,\\infty)"),
    ("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "\\begin{pmatrix}1\\\\2\\end{pmatrix}"),
    ("\\frac{1}{2}", "0.5"), ("\\frac{3}{4}", "0.75"), ("\\frac{2}{3}", "\\dfrac{2}{3}"), ("\\frac{2}{3}", "\\tfrac23"),
    ("1000000", "1,000,000"), ("12345", "12{,}345"), ("5", "x=5"), ("5", "x = 5"),
    ("1, -2", "-2, 1"), ("-\\frac{2}{3}", "\\frac{2}{-3}"), ("27", "27.0"), ("\\sqrt{2}", "\\sqrt2"),
    ("2\\sqrt{2}", "\\sqrt{8}"), ("x^2+2x+1", "(x+1)^2"), ("2x+3", "3+2x"), ("\\$32", "32"), ("50\\%", "50"),
    ("3/2", "1.5"),
]
NOT_EQUIVALENT = [
    ("(0,3]", "[0,3]"), ("\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}", "\\begin{pmatrix} 1 & 2 \\\\ 3 & 5 \\end{pmatrix}"),
    ("\\frac{1}{3}", "0.33"), ("3", "k=4"), ("1,-2", "1, 3"), ("\\pi", "3.14"), ("x^2+2x+1", "y^2+2y+1"),
    ("12", "1,2,3"),
]


@pytest.mark.parametrize("gold,pred", EQUIVALENT)
def test_equivalent(gold, pred):
    assert answers_equal(gold, pred)


@pytest.mark.parametrize("gold,pred", NOT_EQUIVALENT)
def test_not_equivalent(gold, pred):
    assert not answers_equal(gold, pred)


def test_last_boxed_nested_and_last():
    text = "First \\boxed{1} then \\boxed{\\frac{\\sqrt{3}}{2}} and done."
    assert last_boxed(text) == "\\frac{\\sqrt{3}}{2}"
    assert last_boxed("\\boxed 5$") == "5"
    assert last_boxed("no box") is None
    assert last_boxed("\\boxed{unclosed") is None
    assert grade_math("so \\fbox{12}", "12").correct


def test_no_box_is_not_correct_even_if_number_present():
    v = grade_math("The answer is 42.", "42")
    assert v.extracted is None and not v.correct and v.method == "none"


def test_methodology_trivial_simplification_examples():
    """3245/5 vs 649: the LLM checker prompt says "No" (non-trivial simplification); the
    script stage proves exact rational equality, so it never reaches the checker. The
    checker prompt must carry the methodology's own examples verbatim."""
    tpl = load_template("index_math_equality")
    for fragment in ("Expression 1: 3245/5", "Expression 2: 649", "give benefit of the doubt to units",
                     "trivial simplifications are allowed"):
        assert fragment in tpl.text
    assert "{expression1}" in tpl.text and "{expression2}" in tpl.text
    assert answers_equal("649", "3245/5")
    assert parse_equality_reply("Yes") is True
    assert parse_equality_reply(" no.") is False
    assert parse_equality_reply("Maybe") is None
