"""Bradley–Terry ratings and prompt-level bootstrap confidence intervals.

Games become *battles* between a model and its opponent (the baseline, in arena-hard). A strong
verdict (``>>``) counts ``strong_weight`` times, a tie counts as half a win, as in
arena-hard-auto. When every battle is against one baseline, the Bradley–Terry MLE of each
model's win probability against it is exactly its weighted mean score, so we use that closed
form; otherwise we fit general Bradley–Terry by Newton's method. The bootstrap resamples
*prompts* (both games of a prompt stay together) with an explicit ``numpy.random.Generator``;
point estimates come from the full data.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Iterable

import numpy as np
import pandas as pd

from arena.io.formats import Judgment

# Score of the model (not the baseline) for each label, by the position the model held.
_MODEL_SCORE_AS_B = {"A>>B": 0.0, "A>B": 0.0, "A=B": 0.5, "B>A": 1.0, "B>>A": 1.0}
_MODEL_SCORE_AS_A = {"A>>B": 1.0, "A>B": 1.0, "A=B": 0.5, "B>A": 0.0, "B>>A": 0.0}

BATTLE_COLUMNS = ["question_id", "model", "opponent", "judge", "category", "game", "label", "status", "score", "weight"]


def battles_from_judgments(judgments: Iterable[Judgment], baseline: str, *, strong_weight: float = 3.0) -> pd.DataFrame:
    """One row per game: the model's score (1, 0.5, 0; NaN when unparsed) and its weight.

    Game 1 has the opponent (baseline) as assistant A, game 2 has the model as A. ``status``
    keeps unparsed and failed games visible; they carry weight 0 and are never dropped silently.
    """
    rows = []
    for j in judgments:
        opponent = j.baseline or baseline
        for k, g in enumerate(j.games):
            table = _MODEL_SCORE_AS_B if k % 2 == 0 else _MODEL_SCORE_AS_A
            if g.score is None:
                score, weight = np.nan, 0.0
            else:
                score = table[g.score]
                weight = strong_weight if ">>" in g.score else 1.0
            rows.append((j.question_id, j.model, opponent, j.judge, j.category, k + 1, g.score, g.status if g.score is None else "ok", score, weight))
    return pd.DataFrame(rows, columns=BATTLE_COLUMNS)


# --------------------------------------------------------------------------- estimators
def weighted_win_rate(score_sums: np.ndarray, weight_sums: np.ndarray) -> np.ndarray:
    """Closed-form Bradley–Terry win probability against a single baseline.

    With every battle against the baseline, the BT likelihood factorises per model, and the
    MLE of sigma(theta_m - theta_base) is the weighted share of wins (ties count half).
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(weight_sums > 0, score_sums / np.where(weight_sums > 0, weight_sums, 1.0), np.nan)


def bradley_terry_mle(
    n_items: int,
    i: np.ndarray,
    j: np.ndarray,
    score: np.ndarray,
    weight: np.ndarray,
    *,
    anchor: int = 0,
    tol: float = 1e-10,
    max_iter: int = 100,
    ridge: float = 0.0,
) -> np.ndarray:
    """General Bradley–Terry by Newton's method with a backtracking line search.

    Battle ``k`` is item ``i[k]`` against ``j[k]`` with ``score[k]`` in [0, 1] for ``i`` (ties 0.5)
    and ``weight[k]``. Returns natural-log strengths with ``theta[anchor] = 0``. The problem is
    convex, so Newton converges quadratically; ``ridge`` (an L2 penalty) keeps undefeated items
    finite if wanted.
    """
    won = np.zeros((n_items, n_items))
    tot = np.zeros((n_items, n_items))
    np.add.at(won, (i, j), weight * score)
    np.add.at(won, (j, i), weight * (1.0 - score))
    np.add.at(tot, (i, j), weight)
    np.add.at(tot, (j, i), weight)
    free = np.array([k for k in range(n_items) if k != anchor])
    theta = np.zeros(n_items)

    def nll(t: np.ndarray) -> float:
        d = t[:, None] - t[None, :]
        return float(np.sum(won * np.logaddexp(0.0, -d)) + 0.5 * ridge * np.sum(t * t))

    f = nll(theta)
    for _ in range(max_iter):
        d = theta[:, None] - theta[None, :]
        p = 1.0 / (1.0 + np.exp(-d))
        grad = -(won - tot * p).sum(axis=1) + ridge * theta
        w = tot * p * (1.0 - p)
        hess = -w
        np.fill_diagonal(hess, w.sum(axis=1) - np.diag(w))
        hess += ridge * np.eye(n_items)
        g, h = grad[free], hess[np.ix_(free, free)]
        if np.linalg.norm(g) < tol:
            break
        step = np.linalg.lstsq(h, -g, rcond=None)[0]
        t_new = theta.copy()
        alpha = 1.0
        while alpha > 1e-12:
            t_new[free] = theta[free] + alpha * step
            f_new = nll(t_new)
            if f_new <= f + 1e-4 * alpha * float(g @ step):
                break
            alpha *= 0.5
        theta, f = t_new, f_new
    return theta


def bootstrap_counts(n_prompts: int, n_rounds: int, rng: np.random.Generator) -> np.ndarray:
    """How often each prompt is drawn in each bootstrap round, shape ``(n_rounds, n_prompts)``."""
    return rng.multinomial(n_prompts, np.full(n_prompts, 1.0 / n_prompts), size=n_rounds).astype(np.float64)


@dataclass
class Leaderboard:
    table: pd.DataFrame          # model, score, lower, upper, n_battles, n_unparsed, avg_tokens
    replicates: pd.DataFrame     # bootstrap win rates (%), one column per model
    method: str                  # "closed-form" or "bradley-terry"
    ci: float


def leaderboard(
    battles: pd.DataFrame,
    baseline: str,
    *,
    n_bootstrap: int = 100,
    ci: float = 0.95,
    rng: np.random.Generator | None = None,
    avg_tokens: dict[str, float] | None = None,
) -> Leaderboard:
    """Win rate (%) against ``baseline`` with percentile bootstrap CIs over prompts."""
    if not 0 < ci < 1:
        raise ValueError("ci must be in (0, 1)")
    rng = rng if rng is not None else np.random.default_rng(0)
    if battles.empty:
        raise ValueError("no battles")
    prompts = pd.Index(sorted(battles["question_id"].unique()))
    p_idx = prompts.get_indexer(battles["question_id"])
    counts = bootstrap_counts(len(prompts), n_bootstrap, rng) if n_bootstrap > 0 else np.zeros((0, len(prompts)))
    parsed = battles["weight"].to_numpy() > 0
    single_baseline = bool((battles["opponent"] == baseline).all())
    if single_baseline:
        models = pd.Index(sorted(battles["model"].unique()))
        m_idx = models.get_indexer(battles["model"])
        ws = np.zeros((len(prompts), len(models)))
        w = np.zeros((len(prompts), len(models)))
        sw = battles["weight"].to_numpy() * np.nan_to_num(battles["score"].to_numpy())
        np.add.at(ws, (p_idx, m_idx), sw)
        np.add.at(w, (p_idx, m_idx), battles["weight"].to_numpy())
        point = weighted_win_rate(ws.sum(0), w.sum(0))
        reps = weighted_win_rate(counts @ ws, counts @ w) if n_bootstrap > 0 else np.zeros((0, len(models)))
        method = "closed-form"
    else:
        models, point, reps = _general_bt(battles, baseline, prompts, p_idx, counts)
        method = "bradley-terry"
    alpha = (1.0 - ci) / 2.0
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a model with no parsed game has no CI
        lower = np.nanquantile(reps, alpha, axis=0) if len(reps) else np.full(len(models), np.nan)
        upper = np.nanquantile(reps, 1 - alpha, axis=0) if len(reps) else np.full(len(models), np.nan)
    stats = battles.assign(parsed=parsed).groupby("model").agg(n_battles=("parsed", "sum"), n_games=("parsed", "size"))
    table = pd.DataFrame({"model": models, "score": 100 * point, "lower": 100 * lower, "upper": 100 * upper})
    table["n_battles"] = stats["n_battles"].reindex(models).fillna(0).astype(int).to_numpy()
    table["n_unparsed"] = (stats["n_games"] - stats["n_battles"]).reindex(models).fillna(0).astype(int).to_numpy()
    if baseline not in set(models):
        vs_base = battles["opponent"] == baseline
        n_base = int((parsed & vs_base.to_numpy()).sum())
        base_row = {"model": baseline, "score": 50.0, "lower": 50.0, "upper": 50.0, "n_battles": n_base, "n_unparsed": int(vs_base.sum()) - n_base}
        table = pd.concat([table, pd.DataFrame([base_row])], ignore_index=True)
    table["avg_tokens"] = table["model"].map(avg_tokens or {}).astype(float)
    table = table.sort_values("score", ascending=False, kind="stable").reset_index(drop=True)
    replicates = pd.DataFrame(100 * reps, columns=list(models))
    return Leaderboard(table=table, replicates=replicates, method=method, ci=ci)


def _general_bt(battles: pd.DataFrame, baseline: str, prompts: pd.Index, p_idx: np.ndarray, counts: np.ndarray):
    names = pd.Index(sorted(set(battles["model"]) | set(battles["opponent"])))
    if baseline not in names:
        raise ValueError(f"baseline '{baseline}' is in no battle")
    keep = battles["weight"].to_numpy() > 0
    i = names.get_indexer(battles["model"])[keep]
    j = names.get_indexer(battles["opponent"])[keep]
    s = battles["score"].to_numpy()[keep]
    w = battles["weight"].to_numpy()[keep]
    pk = p_idx[keep]
    anchor = names.get_loc(baseline)
    models = names.drop(baseline)
    cols = names.get_indexer(models)

    def win_rates(weights: np.ndarray) -> np.ndarray:
        theta = bradley_terry_mle(len(names), i, j, s, weights, anchor=anchor)
        return 1.0 / (1.0 + np.exp(-(theta[cols] - theta[anchor])))

    point = win_rates(w)
    reps = np.array([win_rates(w * c[pk]) for c in counts]) if len(counts) else np.zeros((0, len(models)))
    return models, point, reps


def average_tokens(answers: dict[str, dict[str, object]]) -> dict[str, float]:
    """Mean answer length in tokens per model (``token_len`` of each answer)."""
    out = {}
    for model, by_q in answers.items():
        lens = [a.token_len for a in by_q.values() if getattr(a, "token_len", None) is not None]
        if lens:
            out[model] = float(np.mean(lens))
    return out
