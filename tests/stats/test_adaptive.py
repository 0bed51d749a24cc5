"""Adaptive judging: the stopping rule, and a replay on AlpacaEval 2.0's real verdicts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from arena.stats.adaptive import (
    mean_ci, paired_gap_ci, paired_verdicts, simulate_adaptive, simulate_uniform, simultaneous_level,
    still_uncertain,
)

AE = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "alpaca_eval"


def test_zero_wins_so_far_is_not_certainty():
    # 50 losses in a row for a model that wins 3% of the time: the sample sd is 0, but the
    # interval must not be, or the run would stop on luck.
    mean, half = mean_ci(np.zeros(50))
    assert mean == 0 and half > 0.03


def test_separated_and_precise_models_stop_tied_ones_continue():
    rng = np.random.default_rng(0)
    difficulty = rng.normal(0, 1, 400)
    p = lambda theta: 1 / (1 + np.exp(-(theta + difficulty)))  # noqa: E731
    scores = {
        "low": rng.binomial(1, p(-3.0)).astype(float),
        "tied-a": rng.binomial(1, p(0.0)).astype(float),
        "tied-b": rng.binomial(1, p(0.02)).astype(float),
        "high": rng.binomial(1, p(3.0)).astype(float),
    }
    active = still_uncertain(scores, target_halfwidth=None, min_prompts=50)
    assert active == {"tied-a", "tied-b"}
    # Pairing on shared prompts is sharper than comparing the two marginal intervals.
    gap, half = paired_gap_ci(scores["low"], scores["high"])
    assert abs(gap) > half
    # Too few prompts: nobody stops.
    assert still_uncertain({m: s[:20] for m, s in scores.items()}, target_halfwidth=1.0, min_prompts=50) == set(scores)


def test_adaptive_spends_less_than_uniform_and_keeps_the_order():
    rng = np.random.default_rng(1)
    thetas = np.linspace(-3, 1.5, 10)
    difficulty = rng.normal(0, 1, 800)
    verdicts = {f"m{k}": rng.binomial(1, 1 / (1 + np.exp(-(t + difficulty)))).astype(float)
                for k, t in enumerate(thetas)}
    order = rng.permutation(800)
    ci = simultaneous_level(0.95, len(verdicts))
    u = simulate_uniform(verdicts, order, target_halfwidth=0.05, ci=ci, batch=10)
    a = simulate_adaptive(verdicts, order, target_halfwidth=0.05, ci=ci, batch=10)
    assert a.calls < 0.8 * u.calls
    assert np.all(np.abs(a.halfwidth) <= 0.05 + 1e-12) or np.any(a.n_judged < 800)
    full = np.array([v.mean() for v in verdicts.values()])
    assert spearmanr(a.mean, full)[0] >= 0.95
    assert np.all(np.abs(a.mean - full) <= a.halfwidth)


@pytest.mark.skipif(not AE.exists(), reason="../shared/data/alpaca_eval is absent")
def test_alpaca_eval_2_replay():
    d = pd.read_csv(AE / "ae2_gpt4turbo_preferences.csv.gz")
    verdicts, keys = paired_verdicts(d["model"], d["instruction_index"], d["preference"] - 1)
    assert len(verdicts) == 58 and len(keys) == 797
    ci = simultaneous_level(0.95, len(verdicts))
    full = np.array([v.mean() for v in verdicts.values()])
    order = np.random.default_rng(0).permutation(len(keys))
    u = simulate_uniform(verdicts, order, target_halfwidth=0.04, ci=ci, batch=10)
    a = simulate_adaptive(verdicts, order, target_halfwidth=0.04, ci=ci, batch=10)
    assert a.calls <= 0.6 * u.calls, (a.calls, u.calls)
    assert spearmanr(a.mean, full)[0] >= 0.96
    # Every model's interval at stopping covers its full-data win rate.
    assert np.all(np.abs(a.mean - full) <= a.halfwidth)
