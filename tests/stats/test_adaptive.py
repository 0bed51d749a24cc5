"""Adaptive judging: the stopping rule, and a replay on AlpacaEval 2.0's real verdicts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from arena.stats.adaptive import (
    ELO_PER_LOGIT, mean_ci, paired_gap_ci, paired_verdicts, simulate_adaptive, simulate_uniform, simultaneous_level,
    still_uncertain,
)

AE = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "alpaca_eval"


def test_zero_wins_so_far_is_not_certainty():
    # 50 losses in a row for a model that wins 3% of the time: the sample sd is 0, but the
    # interval must not be, or the run would stop on luck.
    mean, half = mean_ci(np.zeros(50))
    assert mean == 0 and half > 0.03


def test_bt_scale_half_width_is_the_delta_method_on_the_logit():
    # 6 wins in 200: smoothed p = 7/202. On the logit scale the sd is sqrt(p(1-p)/n) / (p(1-p)).
    s = np.r_[np.ones(6), np.zeros(194)]
    p = 7 / 202
    _, half_wr = mean_ci(s, 0.95)
    _, half_bt = mean_ci(s, 0.95, scale="bt")
    assert half_wr == pytest.approx(1.959964 * np.sqrt(p * (1 - p) / 200), rel=1e-6)
    assert half_bt == pytest.approx(half_wr / (p * (1 - p)), rel=1e-12)
    # The scales disagree on who is less certain: a 3% model against a 50% one, same n.
    even = np.r_[np.ones(100), np.zeros(100)]
    assert mean_ci(s)[1] < mean_ci(even)[1] and mean_ci(s, scale="bt")[1] > mean_ci(even, scale="bt")[1]


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
    # The acceptance target on AlpacaEval 2.0's real verdicts, over several random orders: a
    # 120-Elo simultaneous target on the Bradley–Terry scale needs at most 60% of uniform
    # judging's verdicts, keeps Spearman >= 0.98 with the full-data ranking, and every model's
    # interval at stopping covers its full-data win rate (bench/adaptive_judging_ae2.py: 40 orders).
    d = pd.read_csv(AE / "ae2_gpt4turbo_preferences.csv.gz")
    verdicts, keys = paired_verdicts(d["model"], d["instruction_index"], d["preference"] - 1)
    assert len(verdicts) == 58 and len(keys) == 797
    ci = simultaneous_level(0.95, len(verdicts))
    full = np.array([v.mean() for v in verdicts.values()])
    for seed in range(4):
        order = np.random.default_rng(seed).permutation(len(keys))
        kw = dict(target_halfwidth=120 / ELO_PER_LOGIT, ci=ci, batch=10, scale="bt")
        u = simulate_uniform(verdicts, order, **kw)
        a = simulate_adaptive(verdicts, order, **kw)
        assert a.calls <= 0.6 * u.calls, (seed, a.calls, u.calls)
        assert spearmanr(a.mean, full)[0] >= 0.98, seed
        assert np.all(np.abs(a.mean - full) <= a.halfwidth), seed
        # A 4-point win-rate target at a similar spend ranks worse in each order: it stops the
        # low-win-rate cluster early (the reason for the BT scale; see arena/stats/adaptive.py).
        w = simulate_adaptive(verdicts, order, target_halfwidth=0.04, ci=ci, batch=10)
        assert abs(w.calls - a.calls) < 0.1 * u.calls
        assert spearmanr(w.mean, full)[0] < spearmanr(a.mean, full)[0], seed
        if seed == 3:
            assert spearmanr(w.mean, full)[0] < 0.98
