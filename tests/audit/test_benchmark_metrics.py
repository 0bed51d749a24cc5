"""Benchmark-quality metrics on small cases worked out by hand."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from arena.audit import benchmark as bm
from arena.audit.io import read_reference, read_scores, write_scores
from arena.errors import InputError

# Three models. Benchmark: A 10 [9, 11], B 5 [4, 6], C 5.5 [5, 7]  -> (A,B) and (A,C) separated, (B,C) overlap.
# Reference:   A 1200 [1190, 1210], B 1150 [1140, 1160], C 1100 [1095, 1105] -> every pair separated, A > B > C.
B_SCORE, B_LO, B_HI = np.array([10, 5, 5.5]), np.array([9, 4, 5.0]), np.array([11, 6, 7.0])
R_RATING, R_LO, R_HI = np.array([1200, 1150, 1100.0]), np.array([1190, 1140, 1095.0]), np.array([1210, 1160, 1105.0])


def test_confident_order_and_separability():
    assert bm.confident_order(B_LO, B_HI).tolist() == [1, 1, 0]
    assert bm.separability(B_LO, B_HI) == pytest.approx(2 / 3)
    # Touching intervals overlap (not separated).
    assert bm.separability([0, 1], [1, 2]) == 0.0
    assert bm.separability(R_LO, R_HI) == 1.0


def test_agreement_variants_by_hand():
    # paper: (A,B) +1, (A,C) +1, (B,C) 0 -> 2/3; reference: 1 + 1 + 0.5 -> 2.5/3
    assert bm.agreement_paper(B_LO, B_HI, R_LO, R_HI) == pytest.approx(2 / 3)
    assert bm.agreement_reference(B_LO, B_HI, R_LO, R_HI) == pytest.approx(2.5 / 3)
    # Move C confidently above B on the benchmark: (B,C) now disagrees confidently.
    lo, hi = np.array([9, 4, 7.5]), np.array([11, 6, 8.5])
    assert bm.agreement_paper(lo, hi, R_LO, R_HI) == pytest.approx((1 + 1 - 1) / 3)
    assert bm.agreement_reference(lo, hi, R_LO, R_HI) == pytest.approx((1 + 1 + 0) / 3)
    # A reference that separates nothing: the paper variant scores 0, the reference variant is undefined.
    flat_lo, flat_hi = np.zeros(3), np.ones(3)
    assert bm.agreement_paper(lo, hi, flat_lo, flat_hi) == 0.0
    assert math.isnan(bm.agreement_reference(lo, hi, flat_lo, flat_hi))


def _phi(x: float) -> float:
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def test_pair_rank_brier_by_hand():
    var = np.ones(3)
    # P(A<B) = Phi(-5/sqrt2), P(A<C) = Phi(-4.5/sqrt2), P(B<C) = Phi(0.5/sqrt2); reference: no pair "<".
    expected = (_phi(-5 / math.sqrt(2)) ** 2 + _phi(-4.5 / math.sqrt(2)) ** 2 + _phi(0.5 / math.sqrt(2)) ** 2) / 3
    assert bm.pair_rank_brier(B_SCORE, var, R_RATING) == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(0.40725 / 3, abs=1e-4)  # 0.6382**2 = 0.40725 dominates
    # A perfect, certain benchmark scores 0; a certain but reversed one scores 1.
    assert bm.pair_rank_brier([3, 2, 1], np.zeros(3), [30, 20, 10]) == 0.0
    assert bm.pair_rank_brier([1, 2, 3], np.zeros(3), [30, 20, 10]) == 1.0


def test_correlations_and_strict_agreement_by_hand():
    res = bm.audit_benchmark(
        pd.DataFrame({"model": ["a", "b", "c"], "score": B_SCORE, "lower": B_LO, "upper": B_HI}),
        pd.DataFrame({"model": ["A", "B", "C", "D"], "rating": [*R_RATING, 900], "lower": [*R_LO, 890], "upper": [*R_HI, 910]}),
        names={"a": "A", "b": "B", "c": "C"},
    )
    # ranks bench (1,3,2) vs reference (1,2,3): rho = 1 - 6*2/(3*8) = 0.5; tau = (2-1)/3.
    assert res.spearman == pytest.approx(0.5)
    assert res.kendall == pytest.approx(1 / 3)
    assert res.strict_pairwise_agreement == pytest.approx(2 / 3)
    assert (res.n_models, res.n_pairs) == (3, 3)
    assert res.unmatched_reference == ["D"] and res.unmatched_benchmark == []
    assert res.separability == pytest.approx(2 / 3)
    # Ties count as disagreement in the strict variant.
    assert bm.strict_pairwise_agreement([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / 3)


def test_replicates_override_ci_and_variance():
    rng = np.random.default_rng(0)
    reps_a, reps_b = rng.normal(10, 1, 4000), rng.normal(5, 1, 4000)
    scores = pd.DataFrame(
        {"model": ["a", "b"], "score": [10.0, 5.0], "lower": [0.0, 0.0], "upper": [100.0, 100.0], "results": [reps_a.tolist(), reps_b.tolist()]}
    )
    s, lo, hi, var = bm.benchmark_moments(scores, 0.95)
    assert lo[0] == pytest.approx(np.percentile(reps_a, 2.5)) and hi[1] == pytest.approx(np.percentile(reps_b, 97.5))
    assert var[0] == pytest.approx(reps_a.var(ddof=1))
    # Without replicates, a 95% CI of +-1.96 reads as variance 1.
    s, lo, hi, var = bm.benchmark_moments(scores.drop(columns="results").assign(lower=[8.04, 3.04], upper=[11.96, 6.96]), 0.95)
    assert var == pytest.approx([1.0, 1.0], rel=1e-3)


def test_scores_roundtrip_and_errors(tmp_path):
    frame = pd.DataFrame({"model": ["a", "b"], "score": [1.0, 2.0], "lower": [0.5, 1.5], "upper": [1.5, 2.5], "results": [[1.0, 1.1], [2.0, 2.1]]})
    p = tmp_path / "s.jsonl"
    write_scores(p, frame)
    back = read_scores(p)
    assert back["results"].tolist() == frame["results"].tolist()
    p.write_text(p.read_text() + json.dumps({"model": "c", "score": "x", "lower": 0, "upper": 1}) + "\n")
    with pytest.raises(InputError) as err:
        read_scores(p)
    assert err.value.line == 3 and err.value.field == "score"
    ref = tmp_path / "r.csv"
    ref.write_text("model,rating,rating_q025,rating_q975\nA,1200,1190,1210\nB,oops,1,2\n")
    with pytest.raises(InputError) as err:
        read_reference(ref)
    assert err.value.line == 3 and err.value.field == "rating"


def test_names_null_excludes_and_duplicates_fail():
    scores = pd.DataFrame({"model": ["a", "A", "b"], "score": [3.0, 2.0, 1.0], "lower": [2.5, 1.5, 0.5], "upper": [3.5, 2.5, 1.5]})
    ref = pd.DataFrame({"model": ["A", "B"], "rating": [2.0, 1.0], "lower": [1.9, 0.9], "upper": [2.1, 1.1]})
    res = bm.audit_benchmark(scores, ref, {"a": "A", "A": None, "b": "B"})
    assert res.models == ["a", "b"] and res.unmatched_benchmark == ["A"]
    with pytest.raises(InputError):
        bm.audit_benchmark(scores, ref, {"a": "A", "b": "B"})  # 'a' and 'A' both land on A
