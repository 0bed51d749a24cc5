"""Bradley–Terry scores and the prompt-level bootstrap."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from arena.io.formats import Game, Judgment
from arena.stats.ratings import BATTLE_COLUMNS, battles_from_judgments, bradley_terry_mle, leaderboard


def _judgment(qid, model, g1, g2, baseline=None):
    return Judgment(qid, model, "judge", [Game("p", "j", g1), Game("p", "j", g2)], baseline=baseline)


def test_scores_by_position_weight_and_ties():
    # game 1: baseline is A; game 2: model is A
    js = [
        _judgment("q1", "m", "B>>A", "A>B"),   # strong win (3) + win (1)
        _judgment("q2", "m", "A=B", "B>A"),    # tie (0.5 of 1) + loss (1)
        _judgment("q3", "m", "A>>B", None),    # strong loss (3) + unparsed
    ]
    b = battles_from_judgments(js, "base", strong_weight=3)
    assert b["score"].tolist()[:5] == [1.0, 1.0, 0.5, 0.0, 0.0]
    assert b["weight"].tolist() == [3, 1, 1, 1, 3, 0]
    lb = leaderboard(b, "base", n_bootstrap=0)
    row = lb.table.set_index("model").loc["m"]
    # (3*1 + 1*1 + 1*0.5 + 1*0 + 3*0) / (3 + 1 + 1 + 1 + 3)
    assert row["score"] == pytest.approx(100 * 4.5 / 9)
    assert row["n_battles"] == 5 and row["n_unparsed"] == 1
    base = lb.table.set_index("model").loc["base"]
    assert base["score"] == 50 and base["n_battles"] == 5 and base["n_unparsed"] == 1


def _sim(rng, n_models=4, n_prompts=120):
    rows = []
    for m in range(n_models):
        for q in range(n_prompts):
            for g in (1, 2):
                s = rng.choice([0.0, 0.5, 1.0], p=[0.4 - 0.05 * m, 0.2, 0.4 + 0.05 * m])
                w = 3.0 if (s != 0.5 and rng.random() < 0.3) else 1.0
                rows.append((f"q{q}", f"m{m}", "base", "j", None, g, None, "ok", s, w))
    return pd.DataFrame(rows, columns=BATTLE_COLUMNS)


def test_closed_form_equals_general_bt_and_logistic_regression():
    from sklearn.linear_model import LogisticRegression

    b = _sim(np.random.default_rng(3))
    closed = leaderboard(b, "base", n_bootstrap=0).table.set_index("model")["score"] / 100
    names = ["base"] + sorted(b["model"].unique())
    idx = {n: k for k, n in enumerate(names)}
    theta = bradley_terry_mle(len(names), b["model"].map(idx).to_numpy(), np.zeros(len(b), int), b["score"].to_numpy(), b["weight"].to_numpy())
    # independent fit: weighted logistic regression with a tie split into half a win and half a loss
    X = np.zeros((2 * len(b), len(names)))
    y = np.r_[np.ones(len(b)), np.zeros(len(b))]
    for k, m in enumerate(b["model"]):
        X[k, idx[m]] = X[k + len(b), idx[m]] = 1
        X[k, 0] = X[k + len(b), 0] = -1
    sw = np.r_[b["weight"] * b["score"], b["weight"] * (1 - b["score"])]
    lr = LogisticRegression(fit_intercept=False, C=np.inf, tol=1e-12, max_iter=10000).fit(X, y, sample_weight=sw)
    coef = lr.coef_[0] - lr.coef_[0][0]
    for m in names[1:]:
        p_newton = 1 / (1 + np.exp(-theta[idx[m]]))
        p_lr = 1 / (1 + np.exp(-coef[idx[m]]))
        assert closed[m] == pytest.approx(p_newton, abs=1e-9)
        assert closed[m] == pytest.approx(p_lr, abs=1e-6)


def test_general_bt_when_models_meet_each_other():
    rng = np.random.default_rng(0)
    strength = {"base": 0.0, "a": 1.0, "b": -0.5}
    rows = []
    for q in range(400):
        for m, o in (("a", "base"), ("b", "base"), ("a", "b")):
            p = 1 / (1 + np.exp(-(strength[m] - strength[o])))
            rows.append((f"q{q}", m, o, "j", None, 1, None, "ok", float(rng.random() < p), 1.0))
    lb = leaderboard(pd.DataFrame(rows, columns=BATTLE_COLUMNS), "base", n_bootstrap=50, rng=np.random.default_rng(1))
    t = lb.table.set_index("model")
    assert lb.method == "bradley-terry"
    assert t.loc["a", "score"] == pytest.approx(100 / (1 + np.exp(-1.0)), abs=5)
    assert t.loc["b", "score"] == pytest.approx(100 / (1 + np.exp(0.5)), abs=5)
    assert t.loc["a", "lower"] < t.loc["a", "score"] < t.loc["a", "upper"]


def test_bootstrap_is_seeded_keeps_prompts_together_and_orders_ci():
    b = _sim(np.random.default_rng(5))
    one = leaderboard(b, "base", n_bootstrap=200, ci=0.9, rng=np.random.default_rng(11))
    two = leaderboard(b, "base", n_bootstrap=200, ci=0.9, rng=np.random.default_rng(11))
    pd.testing.assert_frame_equal(one.table, two.table)
    wide = leaderboard(b, "base", n_bootstrap=200, ci=0.99, rng=np.random.default_rng(11))
    t, w = one.table.set_index("model"), wide.table.set_index("model")
    for m in ["m0", "m1", "m2", "m3"]:
        assert t.loc[m, "lower"] <= t.loc[m, "score"] <= t.loc[m, "upper"]
        assert w.loc[m, "lower"] <= t.loc[m, "lower"] and w.loc[m, "upper"] >= t.loc[m, "upper"]
    # Prompt-level resampling: duplicating every game of a prompt must not change anything,
    # while the replicate count is what we asked for.
    assert one.replicates.shape == (200, 4)
