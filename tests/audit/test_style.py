"""Style-controlled Bradley–Terry: exact fit, recovery of known coefficients, agreement with scipy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.special import expit, log_expit

from arena.audit.simulate import simulate_arena
from arena.style import fit_style_bt, style_controlled_leaderboard, style_features


def test_style_features_by_hand():
    a = pd.DataFrame({"token_len": [300, 100], "header_count": [{"h1": 1, "h2": 2}, 0], "list_count": [{"ordered": 3}, 0], "bold_count": [0, 0]})
    b = pd.DataFrame({"token_len": [100, 100], "header_count": [0, 0], "list_count": [{"ordered": 1}, 0], "bold_count": [0, 0]})
    raw_len = np.array([(300 - 100) / 400, 0.0])
    # list density 3/300 = 0.01 vs 1/100 = 0.01 -> 0; header 3/300 vs 0 -> 1; bold none -> 0.
    f = style_features(a, b)
    assert list(f.columns) == ["length", "header_density", "list_density", "bold_density"]
    expected_len = (raw_len - raw_len.mean()) / raw_len.std()
    assert f["length"].to_numpy() == pytest.approx(expected_len)
    assert f["header_density"].to_numpy() == pytest.approx([1.0, -1.0])  # raw [1, 0], standardised
    assert (f["list_density"] == 0).all() and (f["bold_density"] == 0).all()
    with pytest.raises(ValueError):
        style_features(a, b, ["colour"])


def _scipy_fit(n_items, i, j, z, y, w, anchor=0):
    """Independent reference: scipy L-BFGS-B on the same weighted likelihood, tight tolerances."""
    free = [k for k in range(n_items) if k != anchor]
    s = z.shape[1]

    def unpack(x):
        th = np.zeros(n_items)
        th[free] = x[: len(free)]
        return th, x[len(free) :]

    def fun(x):
        th, g = unpack(x)
        e = th[i] - th[j] + z @ g
        r = w * (expit(e) - y)
        gt = np.bincount(i, r, n_items) - np.bincount(j, r, n_items)
        return -(w * (y * log_expit(e) + (1 - y) * log_expit(-e))).sum(), np.concatenate([gt[free], z.T @ r])

    res = minimize(fun, np.zeros(len(free) + s), jac=True, method="L-BFGS-B", options={"gtol": 1e-11, "ftol": 0.0, "maxiter": 20000, "maxcor": 50})
    return unpack(res.x)


def test_exact_fit_matches_scipy_and_batches_match_single_fits():
    rng = np.random.default_rng(3)
    n_items, n = 8, 4000
    i = rng.integers(0, n_items, n)
    j = (i + rng.integers(1, n_items, n)) % n_items  # general pairs, not only vs the anchor
    z = rng.normal(size=(n, 3))
    theta = rng.normal(size=n_items)
    y = (rng.random(n) < expit(theta[i] - theta[j] + z @ [0.5, -0.2, 0.0])).astype(float)
    y[rng.random(n) < 0.1] = 0.5
    w = rng.choice([1.0, 3.0], n)
    fit = fit_style_bt(n_items, i, j, z, y, w, anchor=2)
    assert fit.grad_norm.max() <= 1e-6 and fit.theta[0, 2] == 0.0
    th_ref, g_ref = _scipy_fit(n_items, i, j, z, y, w, anchor=2)
    assert np.abs(fit.theta[0] - th_ref).max() < 1e-6
    assert np.abs(fit.gamma[0] - g_ref).max() < 1e-6
    W = rng.poisson(1.0, size=(5, n)).astype(float) * w
    batch = fit_style_bt(n_items, i, j, z, y, W, anchor=2)
    for r in range(5):
        single = fit_style_bt(n_items, i, j, z, y, W[r], anchor=2)
        assert np.abs(batch.theta[r] - single.theta[0]).max() < 1e-6
        assert np.abs(batch.gamma[r] - single.gamma[0]).max() < 1e-6


def test_undefeated_item_stops_at_tolerance_with_a_large_strength():
    # The MLE is infinite; Newton walks out until the gradient falls below tol (documented).
    i, j = np.array([0, 0, 1, 1]), np.array([1, 1, 2, 2])
    fit = fit_style_bt(3, i, j, np.zeros((4, 1)), np.ones(4), np.ones(4), anchor=2)
    assert fit.grad_norm.max() <= 1e-6 and fit.theta[0, 0] > fit.theta[0, 1] > 10


def test_recovers_simulated_style_coefficients_within_ci():
    gamma = np.array([0.5, 0.0, 0.25, -0.2])
    sim = simulate_arena(np.random.default_rng(11), 8, 400, gamma=gamma, strong_prob=0.3)
    res = style_controlled_leaderboard(sim.battles, sim.features, "baseline", n_bootstrap=200, rng=np.random.default_rng(5))
    assert res.grad_norm <= 1e-6
    c = res.coefficients
    assert ((c["lower"] <= gamma) & (gamma <= c["upper"])).all(), c
    # Controlled win rates track the true strengths (style removed).
    table = res.table.set_index("model")
    true_wr = 100 * expit(sim.theta)
    assert np.corrcoef(table.loc[true_wr.index, "score"], true_wr)[0, 1] > 0.98
    covered = (table.loc[true_wr.index, "lower"] <= true_wr) & (true_wr <= table.loc[true_wr.index, "upper"])
    assert covered.mean() >= 0.75
