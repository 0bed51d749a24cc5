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
    assert one.replicates.shape == (200, 4)


def test_bootstrap_keeps_a_prompts_games_together():
    """Both games of every prompt agree here (perfectly correlated), so the win rate's standard
    error is that of n_prompts draws, sqrt(p (1 - p) / n_prompts); resampling the 2 n games one
    by one would give sqrt(2) times less. The bootstrap SD must match the prompt-level value."""
    rng = np.random.default_rng(0)
    n_prompts = 300
    s = (rng.random(n_prompts) < 0.6).astype(float)
    rows = [(f"q{q}", "m", "base", "j", None, g, None, "ok", s[q], 1.0) for q in range(n_prompts) for g in (1, 2)]
    lb = leaderboard(pd.DataFrame(rows, columns=BATTLE_COLUMNS), "base", n_bootstrap=4000, rng=np.random.default_rng(1))
    p = s.mean()
    sd_prompt = 100 * np.sqrt(p * (1 - p) / n_prompts)
    sd_boot = lb.replicates["m"].std()
    # 4000 replicates estimate an SD to ~1.1% (sd / sqrt(2R)); 5% leaves room, and the
    # game-level value is 29% lower.
    assert sd_boot == pytest.approx(sd_prompt, rel=0.05)
    game = leaderboard(pd.DataFrame(rows, columns=BATTLE_COLUMNS), "base", n_bootstrap=4000, rng=np.random.default_rng(1), resample="game")
    assert game.replicates["m"].std() == pytest.approx(sd_prompt / np.sqrt(2), rel=0.05)


# --------------------------------------------------------------------------- cross-check with choix
def _pairwise_games(rng, n_items=6, n=3000, sd=1.0):
    """Games between random pairs (not only against one item), no ties, unit weights: the data
    choix's maximum-likelihood functions accept."""
    strength = rng.normal(0, sd, n_items)
    i = rng.integers(0, n_items, n)
    j = (i + rng.integers(1, n_items, n)) % n_items
    won = rng.random(n) < 1 / (1 + np.exp(-(strength[i] - strength[j])))
    return i, j, won.astype(float)


def _choix_data(i, j, y):
    return [(a, b) if s == 1.0 else (b, a) for a, b, s in zip(i.tolist(), j.tolist(), y.tolist())]


def test_newton_fit_equals_choix_maximum_likelihood():
    import choix

    i, j, y = _pairwise_games(np.random.default_rng(12))
    theta = bradley_terry_mle(6, i, j, y, np.ones(len(i)), anchor=0)
    data = _choix_data(i, j, y)
    # ILSR with alpha = 0 is choix's unregularised MLE (the stationary point of the Luce spectral
    # ranking iteration is the likelihood's); run to a parameter change of 1e-13 so what is left
    # is its convergence error, far below the 1e-8 compared here.
    ilsr = choix.ilsr_pairwise(6, data, alpha=0.0, max_iter=10_000, tol=1e-13)
    assert np.abs((ilsr - ilsr[0]) - theta).max() < 1e-8
    # opt_pairwise always adds alpha/2 |theta|^2; with alpha = 1e-9 it moves the optimum by about
    # alpha |theta| / (Fisher information ~ n p (1 - p) per item ~ 100), i.e. ~1e-11, so the
    # remaining difference is scipy Newton-CG's tolerance (1e-10 on the gradient here).
    opt = choix.opt_pairwise(6, data, alpha=1e-9, method="Newton-CG", tol=1e-10)
    assert np.abs((opt - opt[0]) - theta).max() < 1e-6
    # A failing check would be visible: another data set's fit is far from this one.
    other = bradley_terry_mle(6, *_pairwise_games(np.random.default_rng(13)), np.ones(len(i)))
    assert np.abs(other - theta).max() > 0.05


def test_bootstrap_replicate_fits_equal_choix_on_the_resampled_games():
    """The general-BT leaderboard fits all replicates in one weighted batch; each must equal the
    plain MLE of the games its replicate draws (prompts repeated as drawn), as choix fits it."""
    import choix

    from arena.stats.bootstrap import bootstrap_prompts

    rng = np.random.default_rng(21)
    i, j, y = _pairwise_games(rng, n_items=5, n=1200)
    q = np.repeat(np.arange(600), 2)  # two games per prompt
    boot = bootstrap_prompts(q, 4, np.random.default_rng(3))
    batch = bradley_terry_mle(5, i, j, y, boot.row_weights(np.ones(len(i))), anchor=0)
    for r in range(4):
        rows = boot.indices(r)
        assert len(rows) == len(i)  # a replicate draws as many prompts as there are
        ref = choix.ilsr_pairwise(5, _choix_data(i[rows], j[rows], y[rows]), alpha=0.0, max_iter=10_000, tol=1e-13)
        assert np.abs((ref - ref[0]) - batch[r]).max() < 1e-8


def test_general_leaderboard_replicates_are_the_batched_fits():
    rng = np.random.default_rng(2)
    i, j, y = _pairwise_games(rng, n_items=4, n=800)
    names = ["base", "a", "b", "c"]
    q = np.repeat(np.arange(400), 2)
    b = pd.DataFrame({"question_id": [f"q{k:03d}" for k in q], "model": [names[k] for k in i], "opponent": [names[k] for k in j],
                      "judge": "j", "category": None, "game": 1, "label": None, "status": "ok", "score": y, "weight": 1.0})
    lb = leaderboard(b, "base", n_bootstrap=3, rng=np.random.default_rng(9))
    from arena.stats.bootstrap import bootstrap_prompts

    boot = bootstrap_prompts(b["question_id"].to_numpy(), 3, np.random.default_rng(9))
    idx = {n: k for k, n in enumerate(sorted(names))}
    ii, jj = b["model"].map(idx).to_numpy(), b["opponent"].map(idx).to_numpy()
    theta = bradley_terry_mle(4, ii, jj, y, boot.row_weights(np.ones(len(y))), anchor=idx["base"])
    for m in ("a", "b", "c"):
        assert lb.replicates[m].to_numpy() == pytest.approx(100 / (1 + np.exp(-theta[:, idx[m]])), abs=1e-9)


# --------------------------------------------------------------------------- rank intervals
def _brute_force_ranks(models, point, reps, ci):
    """Rank, rank interval and ties from the replicates, one model and one pair at a time."""
    a = (1 - ci) / 2
    out = {}
    for x, m in enumerate(models):
        rank = 1 + sum(point[y] > point[x] for y in range(len(models)))
        per_rep = sorted(1 + sum(r[y] > r[x] for y in range(len(models))) for r in reps)
        # inverted-CDF quantile: the smallest rank whose empirical CDF reaches the level
        lo = next(v for k, v in enumerate(per_rep) if (k + 1) / len(per_rep) >= a)
        hi = next(v for k, v in enumerate(per_rep) if (k + 1) / len(per_rep) >= 1 - a)
        tied = set()
        for y, other in enumerate(models):
            if y != x:
                d = np.array([r[x] - r[y] for r in reps])
                if not (np.quantile(d, a) > 0 or np.quantile(d, 1 - a) < 0):
                    tied.add(other)
        out[m] = (rank, lo, hi, tied)
    return out


@pytest.mark.parametrize("layout", ["baseline", "general"])
def test_rank_intervals_equal_brute_force_from_replicates(layout):
    if layout == "baseline":
        b = _sim(np.random.default_rng(5), n_models=6, n_prompts=80)
    else:
        rng = np.random.default_rng(4)
        i, j, y = _pairwise_games(rng, n_items=5, n=600, sd=0.3)
        names = ["base", "a", "b", "c", "d"]
        b = pd.DataFrame({"question_id": [f"q{k // 2}" for k in range(600)], "model": [names[k] for k in i], "opponent": [names[k] for k in j],
                          "judge": "j", "category": None, "game": 1, "label": None, "status": "ok", "score": y, "weight": 1.0})
    lb = leaderboard(b, "base", n_bootstrap=150, ci=0.9, rng=np.random.default_rng(1))
    t = lb.table
    models = t["model"].tolist()
    reps = lb.replicates.reindex(columns=models).fillna(50.0).to_numpy()  # the baseline scores 50 in every replicate
    expected = _brute_force_ranks(models, t["score"].to_numpy(), reps, 0.9)
    n_tied = 0
    for row in t.itertuples():
        rank, lo, hi, tied = expected[row.model]
        assert (row.rank, row.rank_lower, row.rank_upper) == (rank, lo, hi)
        assert set(row.tied_with) == tied
        n_tied += len(tied)
    assert 0 < n_tied < len(models) * (len(models) - 1)  # the data separate some pairs, not all
    # Ties are symmetric, and a model is never tied with itself.
    tw = dict(zip(t["model"], t["tied_with"]))
    assert all(m not in tw[m] and all(m in tw[o] for o in tw[m]) for m in tw)


def test_ranks_without_bootstrap_are_unknown_not_zero():
    lb = leaderboard(_sim(np.random.default_rng(5)), "base", n_bootstrap=0)
    assert lb.table["rank"].tolist() == list(range(1, 6))
    assert lb.table["rank_lower"].isna().all() and lb.table["tied_with"].isna().all()


def test_leaderboard_files_carry_rank_columns(tmp_path):
    import json

    from arena.show import write_leaderboard

    lb = leaderboard(_sim(np.random.default_rng(5)), "base", n_bootstrap=50, rng=np.random.default_rng(0))
    write_leaderboard(lb, tmp_path / "lb.json")
    write_leaderboard(lb, tmp_path / "lb.csv")
    rows = json.loads((tmp_path / "lb.json").read_text())["leaderboard"]
    for row, (_, t) in zip(rows, lb.table.iterrows()):
        assert (row["rank"], row["rank_lower"], row["rank_upper"], row["tied_with"]) == (t["rank"], t["rank_lower"], t["rank_upper"], t["tied_with"])
    csv = pd.read_csv(tmp_path / "lb.csv", keep_default_na=False)
    assert csv["tied_with"].tolist() == [";".join(t) for t in lb.table["tied_with"]]
    assert csv["rank_upper"].tolist() == lb.table["rank_upper"].tolist()


def test_undefeated_model_in_general_bt_converges_instead_of_stalling():
    # 'a' wins every game: its MLE is infinite, its curvature vanishes as e^-theta. Without the
    # Jacobi scaling of the Newton system the solver took that direction for flat, stopped moving
    # 'a' and raised "did not converge" after 100 steps.
    rows = []
    for q in range(30):
        rows.append((f"q{q}", "a", "base", "j", None, 1, None, "ok", 1.0, 3.0))
        rows.append((f"q{q}", "b", "base", "j", None, 1, None, "ok", float(q % 2), 1.0))
        rows.append((f"q{q}", "a", "b", "j", None, 1, None, "ok", 1.0, 1.0))
    lb = leaderboard(pd.DataFrame(rows, columns=BATTLE_COLUMNS), "base", n_bootstrap=50, rng=np.random.default_rng(0))
    t = lb.table.set_index("model")
    assert t.loc["a", "score"] == pytest.approx(100.0, abs=1e-6) and t.loc["a", "lower"] == pytest.approx(100.0, abs=1e-6)
    assert t.loc["b", "score"] == pytest.approx(50.0, abs=1e-6)
    assert (t.loc["a", "rank"], t.loc["a", "tied_with"]) == (1, [])
