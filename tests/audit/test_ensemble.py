"""Judge ensembles: pool / mean / majority on hand-worked games, min-judges, leave-one-judge-out."""

from __future__ import annotations

import numpy as np
import pytest

from arena.stats.ensemble import combine_judges, leave_one_judge_out
from arena.io.formats import Game, Judgment
from arena.stats.ratings import battles_from_judgments, leaderboard


def _j(judge, q, model, g1, g2):
    return Judgment(q, model, judge, [Game("", "", g1), Game("", "", g2)], baseline="base")


def _battles():
    # Prompt 0, game 1 (model is B): j1 B>>A (model, strong), j2 B>A (model), j3 A>B (baseline).
    # Prompt 0, game 2 (model is A): j1 A>B (model), j2 B>A (baseline), j3 unparsed -> split 1:1.
    js = [_j("j1", "0", "m", "B>>A", "A>B"), _j("j2", "0", "m", "B>A", "B>A"), _j("j3", "0", "m", "A>B", None)]
    return battles_from_judgments(js, "base")


def _row(b, game):
    return b[b["game"] == game].iloc[0]


def test_pool_keeps_every_judges_battle():
    b = combine_judges(_battles(), "pool")
    assert len(b) == 6 and (b["weight"] > 0).sum() == 5


def test_mean_by_hand():
    b = combine_judges(_battles(), "mean")
    assert len(b) == 2
    g1 = _row(b, 1)
    assert g1["score"] == pytest.approx((3 * 1 + 1 * 1 + 1 * 0) / 5) and g1["weight"] == pytest.approx(5 / 3)
    g2 = _row(b, 2)  # j1 model win (1), j2 model loss (0); j3 unparsed does not count
    assert g2["score"] == pytest.approx(0.5) and g2["weight"] == pytest.approx(1.0)


def test_majority_by_hand_with_explicit_split_handling():
    b = combine_judges(_battles(), "majority")
    g1 = _row(b, 1)
    # 2 of 3 judges say model: model wins; only 1 of the 2 winners was strong -> weight 1.
    assert g1["score"] == 1.0 and g1["weight"] == 1.0
    g2 = _row(b, 2)
    assert g2["score"] == 0.5 and g2["weight"] == 1.0  # 1:1 split scored as a tie
    d = combine_judges(_battles(), "majority", split="drop")
    assert _row(d, 2)["weight"] == 0 and _row(d, 2)["status"] == "split"


def test_min_judges_drops_thin_games():
    for mode in ("pool", "mean", "majority"):
        b = combine_judges(_battles(), mode, min_judges=3)
        kept = b[b["weight"] > 0]
        assert set(kept["game"]) == {1}, mode  # game 2 was parsed by two judges only
        assert (b.loc[b["game"] == 2, "status"].isin(["too_few_judges", "unparsed"])).all()


def test_leave_one_judge_out_finds_the_outlier():
    rng = np.random.default_rng(0)
    js = []
    strength = {"strong": 0.8, "mid": 0.5, "weak": 0.2}
    for judge in ("j1", "j2", "contrarian"):
        for m, p in strength.items():
            for q in range(200):
                win = rng.random() < (1 - p if judge == "contrarian" else p)
                js.append(_j(judge, str(q), m, "B>A" if win else "A>B", "A>B" if win else "B>A"))
    battles = battles_from_judgments(js, "base")

    def score(b):
        return leaderboard(b, "base", n_bootstrap=0).table

    loo = leave_one_judge_out(battles, score, "mean")
    rho = loo.groupby("left_out")["spearman_vs_all"].first()
    # Dropping the contrarian keeps the order; dropping a sound judge lets the contrarian pull.
    by = loo.set_index(["left_out", "model"])
    assert by.loc[("contrarian", "strong"), "delta"] > 5
    assert by.loc[("j1", "strong"), "delta"] < 0
    assert rho["contrarian"] == pytest.approx(1.0)
