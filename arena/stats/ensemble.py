"""Ensembles of LLM judges (several judges' verdicts on the same games).

Three ways to combine, all producing a battle table of :mod:`arena.stats.ratings` so the usual
leaderboard and bootstrap apply:

* ``pool``: every judge's battles count, side by side (arena-hard's way of using two judges);
* ``mean``: per game, the weight-averaged model score over the judges that parsed it; the
  combined weight is the judges' mean weight (a strong verdict still counts more);
* ``majority``: per game, the majority direction (model win / tie / model loss) among the judges
  that parsed it. A split vote (no strict majority) is handled by ``split``: ``"tie"`` scores
  it 0.5, ``"drop"`` leaves the game out (kept visible with weight 0 and status ``split``).
  The winner's verdict is strong when most judges on the winning side said ``>>``.

``min_judges`` keeps only games parsed by at least that many judges (in every mode).
:func:`leave_one_judge_out` reports how each judge moves the leaderboard.
"""

from __future__ import annotations

from typing import Callable, Literal

import numpy as np
import pandas as pd
from scipy import stats

Mode = Literal["pool", "mean", "majority"]
GAME_KEY = ["question_id", "model", "opponent", "game"]


def combine_judges(battles: pd.DataFrame, mode: Mode = "pool", *, min_judges: int = 1, split: str = "tie", strong_weight: float = 3.0) -> pd.DataFrame:
    """Combine a multi-judge battle table into one battle table (see module docstring)."""
    if mode not in ("pool", "mean", "majority"):
        raise ValueError(f"unknown ensemble mode {mode!r} (pool, mean, majority)")
    if split not in ("tie", "drop"):
        raise ValueError("split must be 'tie' or 'drop'")
    # One record per game and judge, the newest (last) winning: the project's duplicate
    # policy, also applied here for battle tables built outside the file readers.
    battles = battles.drop_duplicates(subset=[*GAME_KEY, "judge"], keep="last")
    parsed = battles["weight"] > 0
    n_judges = battles[parsed].groupby(GAME_KEY)["judge"].nunique().rename("n_judges")
    b = battles.join(n_judges, on=GAME_KEY)
    b["n_judges"] = b["n_judges"].fillna(0).astype(int)
    if mode == "pool":
        out = b.copy()
        few = out["n_judges"] < min_judges
        out.loc[few, "weight"] = 0.0
        out.loc[few & (out["status"] == "ok"), "status"] = "too_few_judges"
        return out.drop(columns="n_judges")
    ok = b[parsed]
    first = b.groupby(GAME_KEY, sort=False).first().reset_index()
    g = ok.assign(ws=ok["weight"] * ok["score"]).groupby(GAME_KEY)
    if mode == "mean":
        comb = pd.DataFrame({"score": g["ws"].sum() / g["weight"].sum(), "weight": g["weight"].mean()})
        comb["status"] = "ok"
    else:
        direction = np.sign(ok["score"] - 0.5).astype(int)  # +1 model wins, 0 tie, -1 model loses
        strong = ok["weight"] > 1
        v = ok.assign(win=direction == 1, tie=direction == 0, loss=direction == -1, strong_win=(direction == 1) & strong, strong_loss=(direction == -1) & strong)
        c = v.groupby(GAME_KEY)[["win", "tie", "loss", "strong_win", "strong_loss"]].sum()
        n = c[["win", "tie", "loss"]].sum(axis=1)
        score = np.select([c["win"] * 2 > n, c["loss"] * 2 > n, c["tie"] * 2 > n], [1.0, 0.0, 0.5], np.nan)
        strong_w = np.select(
            [score == 1.0, score == 0.0], [np.where(c["strong_win"] * 2 > c["win"], strong_weight, 1.0), np.where(c["strong_loss"] * 2 > c["loss"], strong_weight, 1.0)], 1.0
        )
        comb = pd.DataFrame({"score": score, "weight": strong_w}, index=c.index)
        is_split = comb["score"].isna()
        comb["status"] = np.where(is_split, "split", "ok")
        if split == "tie":
            comb.loc[is_split, "score"] = 0.5
            comb.loc[is_split, "status"] = "ok"
        else:
            comb.loc[is_split, "weight"] = 0.0
    out = first.drop(columns=["score", "weight", "status", "label"], errors="ignore").join(comb, on=GAME_KEY)
    missing = out["score"].isna() & ~out["status"].eq("split")
    out.loc[missing, "weight"] = 0.0
    out.loc[missing, "status"] = "unparsed"
    few = out["n_judges"] < min_judges
    out.loc[few & (out["weight"] > 0), "status"] = "too_few_judges"
    out.loc[few, "weight"] = 0.0
    out["judge"] = f"ensemble:{mode}"
    out["label"] = None
    return out.drop(columns="n_judges")[battles.columns]


def leave_one_judge_out(
    battles: pd.DataFrame, score_fn: Callable[[pd.DataFrame], pd.DataFrame], mode: Mode = "pool", **kwargs
) -> pd.DataFrame:
    """How each judge moves the ranking: the leaderboard without that judge vs with all.

    ``score_fn(battles) -> table`` (``model, score`` at least) scores a combined battle table.
    Returns one row per (left-out judge, model) with the score and rank change, plus the
    Spearman correlation of the reduced ranking with the full one."""
    full = score_fn(combine_judges(battles, mode, **kwargs)).set_index("model")["score"]
    full_rank = full.rank(ascending=False, method="min")
    rows = []
    for judge in sorted(battles["judge"].unique()):
        rest = battles[battles["judge"] != judge]
        if rest.empty:
            continue
        kw = dict(kwargs)
        kw["min_judges"] = min(kw.get("min_judges", 1), rest["judge"].nunique())
        red = score_fn(combine_judges(rest, mode, **kw)).set_index("model")["score"].reindex(full.index)
        red_rank = red.rank(ascending=False, method="min")
        rho = float(stats.spearmanr(full, red, nan_policy="omit").statistic)
        for m in full.index:
            rows.append({"left_out": judge, "model": m, "score_all": full[m], "score_without": red[m], "delta": red[m] - full[m], "rank_all": int(full_rank[m]), "rank_without": red_rank[m], "spearman_vs_all": rho})
    return pd.DataFrame(rows)
