"""RMS calibration error: a hand-worked example and an independent computation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from arena.index.graders.hle import parse_judgement, rms_calibration_error, stated_confidence


def test_hand_worked_two_bins():
    # Sorted by confidence: [0.1 x, 0.2 x, 0.3 v] | [0.7 x, 0.8 v, 0.9 v]   (beta = 3)
    # bin 1: mean conf 0.2, accuracy 1/3 -> |diff| = 2/15
    # bin 2: mean conf 0.8, accuracy 2/3 -> |diff| = 2/15
    # RMS = sqrt(1/2 * (2/15)^2 + 1/2 * (2/15)^2) = 2/15
    conf = np.array([0.9, 0.8, 0.7, 0.2, 0.1, 0.3])
    corr = np.array([1, 1, 0, 0, 0, 1])
    assert rms_calibration_error(conf, corr, beta=3) == pytest.approx(2 / 15, abs=1e-12)
    # The reference loop never visits the last bin: sqrt(1/2 * (2/15)^2)
    assert rms_calibration_error(conf, corr, beta=3, skip_last_bin=True) == pytest.approx((2 / 15) / np.sqrt(2), abs=1e-12)


def test_remainder_goes_to_last_bin_hand_worked():
    # 7 items, beta 3 -> bins of 3 and 4. Sorted: [0.0 x, 0.0 x, 0.0 x] | [1 v, 1 v, 1 v, 0.6 x]?
    # Sorted by confidence: 0,0,0 | 0.6,1,1,1 ; correct 0,0,0 | 0,1,1,1
    # bin 1 diff 0; bin 2: mean conf 3.6/4 = 0.9, accuracy 3/4 -> diff 0.15, weight 4/7
    conf = np.array([1.0, 0.0, 1.0, 0.0, 0.6, 1.0, 0.0])
    corr = np.array([1, 0, 1, 0, 0, 1, 0])
    assert rms_calibration_error(conf, corr, beta=3) == pytest.approx(np.sqrt(4 / 7 * 0.15**2), abs=1e-12)


def test_matches_independent_groupby_computation():
    rng = np.random.default_rng(7)
    conf = rng.integers(0, 101, size=1037) / 100  # ties on purpose
    corr = (rng.random(1037) < conf * 0.7).astype(int)
    beta = 100
    # Independent: pandas stable sort, bin id = min(rank // beta, n_bins - 1), weighted RMS.
    df = pd.DataFrame({"c": conf, "y": corr}).sort_values("c", kind="mergesort").reset_index(drop=True)
    n_bins = len(df) // beta
    df["bin"] = np.minimum(df.index // beta, n_bins - 1)
    g = df.groupby("bin").agg(c=("c", "mean"), y=("y", "mean"), n=("c", "size"))
    expected = np.sqrt(((g.c - g.y) ** 2 * g.n).sum() / len(df))
    assert rms_calibration_error(conf, corr, beta=beta) == pytest.approx(expected, rel=1e-12)
    # Perfectly calibrated within bins -> 0.
    assert rms_calibration_error(np.array([1.0, 1.0, 0.0, 0.0]), np.array([1, 1, 0, 0]), beta=2) == 0.0


def test_parse_judgement_and_confidence():
    j = parse_judgement('{"extracted_final_answer": "42", "reasoning": "match", "correct": "yes", "confidence": 85}')
    assert j.correct and j.confidence == 85 and j.extracted_final_answer == "42"
    j = parse_judgement("extracted_final_answer: 7\nreasoning: differs\ncorrect: no\nconfidence: 30%")
    assert j is not None and not j.correct and j.confidence == 30
    assert parse_judgement("I refuse") is None
    assert parse_judgement('{"correct": "maybe"}') is None
    assert stated_confidence("Explanation: x\nExact Answer: 3\nConfidence: 72%") == 72
    assert stated_confidence("no confidence given") is None
