"""Bradley–Terry ratings and prompt-level bootstrap confidence intervals.

Games become *battles* between a model and its opponent (the baseline, in arena-hard). A strong
verdict (``>>``) counts ``strong_weight`` times, a tie counts as half a win, as in
arena-hard-auto. When every battle is against one baseline, the Bradley–Terry MLE of each
model's win probability against it is exactly its weighted mean score, so we use that closed
form; otherwise we fit general Bradley–Terry with the one Newton solver of
:mod:`arena.stats.bradley_terry` (style control's, with no covariate). The bootstrap is the
prompt-level one of :mod:`arena.stats.bootstrap` (both games of a prompt stay together), driven by
an explicit ``numpy.random.Generator``; point estimates come from the full data. Ranks and rank
intervals follow :mod:`arena.stats.ranks`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np
import pandas as pd
from scipy.special import expit

from arena.io.formats import Judgment
from arena.stats.bootstrap import Bootstrap, bootstrap_prompts, bootstrap_rows, percentile_interval
from arena.stats.bradley_terry import fit_bradley_terry
from arena.stats.ranks import rank_intervals

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
) -> np.ndarray:
    """General Bradley–Terry MLE: natural-log strengths with ``theta[anchor] = 0``.

    Battle ``k`` is item ``i[k]`` against ``j[k]`` with ``score[k]`` in [0, 1] for ``i`` (ties 0.5)
    and ``weight[k]`` (``(n,)``, or ``(R, n)`` for R replicates, giving ``(R, n_items)``). This
    is :func:`arena.stats.bradley_terry.fit_bradley_terry` with no covariate: the same Newton
    solver as style control, so the two cannot drift apart.
    """
    fit = fit_bradley_terry(n_items, i, j, score, weight, anchor=anchor, tol=tol, max_iter=max_iter)
    return fit.theta[0] if np.ndim(weight) == 1 else fit.theta


@dataclass
class Leaderboard:
    table: pd.DataFrame          # model, score, lower, upper, rank, rank_lower, rank_upper, tied_with, n_battles, n_unparsed, avg_tokens
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
    resample: str = "prompt",
) -> Leaderboard:
    """Win rate (%) against ``baseline`` with percentile bootstrap CIs and rank intervals.

    ``resample="prompt"`` (the default, and the right one) is the prompt-level bootstrap of
    :mod:`arena.stats.bootstrap`; ``"game"`` resamples games one by one and exists only to show,
    in the CI-coverage audit, that it under-covers."""
    if not 0 < ci < 1:
        raise ValueError("ci must be in (0, 1)")
    rng = rng if rng is not None else np.random.default_rng(0)
    if battles.empty:
        raise ValueError("no battles")
    if resample == "prompt":
        boot = bootstrap_prompts(battles["question_id"].to_numpy(), n_bootstrap, rng)
    elif resample == "game":
        boot = bootstrap_rows(len(battles), n_bootstrap, rng)
    else:
        raise ValueError(f"unknown resampling unit {resample!r} (prompt, game)")
    parsed = battles["weight"].to_numpy() > 0
    single_baseline = bool((battles["opponent"] == baseline).all())
    if single_baseline:
        # Closed form, exactly the BT MLE: with every battle against the baseline the likelihood
        # factorises per model, and sigma(theta_m - theta_base) maximises model m's factor at its
        # weighted share of wins. Per unit sums make all replicates one matrix product.
        models = pd.Index(sorted(battles["model"].unique()))
        m_idx = models.get_indexer(battles["model"])
        ws = np.zeros((len(boot.units), len(models)))
        w = np.zeros((len(boot.units), len(models)))
        sw = battles["weight"].to_numpy() * np.nan_to_num(battles["score"].to_numpy())
        np.add.at(ws, (boot.unit_of_row, m_idx), sw)
        np.add.at(w, (boot.unit_of_row, m_idx), battles["weight"].to_numpy())
        point = weighted_win_rate(ws.sum(0), w.sum(0))
        reps = weighted_win_rate(boot.counts @ ws, boot.counts @ w) if n_bootstrap > 0 else np.zeros((0, len(models)))
        method = "closed-form"
    else:
        models, point, reps = _general_bt(battles, baseline, boot)
        method = "bradley-terry"
    lower, upper = percentile_interval(reps, ci) if len(reps) else (np.full(len(models), np.nan),) * 2
    # Game counts by integer codes: a pandas groupby on string columns costs more than the fit.
    code = pd.Index(models).get_indexer(battles["model"].to_numpy(object))
    ok = code >= 0
    n_parsed = np.bincount(code[ok], parsed[ok], len(models)).astype(int)
    n_games = np.bincount(code[ok], minlength=len(models))
    table = pd.DataFrame({"model": models, "score": 100 * point, "lower": 100 * lower, "upper": 100 * upper})
    table["n_battles"] = n_parsed
    table["n_unparsed"] = n_games - n_parsed
    if baseline not in set(models):
        vs_base = battles["opponent"] == baseline
        n_base = int((parsed & vs_base.to_numpy()).sum())
        base_row = {"model": baseline, "score": 50.0, "lower": 50.0, "upper": 50.0, "n_battles": n_base, "n_unparsed": int(vs_base.sum()) - n_base}
        table = pd.concat([table, pd.DataFrame([base_row])], ignore_index=True)
    table["avg_tokens"] = table["model"].map(avg_tokens or {}).astype(float)
    replicates = pd.DataFrame(100 * reps, columns=list(models))
    table = with_ranks(table, replicates, baseline, ci)
    return Leaderboard(table=table, replicates=replicates, method=method, ci=ci)


def with_ranks(table: pd.DataFrame, replicates: pd.DataFrame, baseline: str, ci: float) -> pd.DataFrame:
    """``table`` (model, score, ...) sorted by score, with the rank columns of
    :func:`arena.stats.ranks.rank_intervals` after ``upper``. The baseline, absent from the
    replicates, scores 50 in every replicate (its win rate against itself)."""
    names = table["model"].tolist()
    col_of = {m: k for k, m in enumerate(replicates.columns)}
    src = replicates.to_numpy(float)
    reps = np.full((len(src), len(names)), np.nan)
    for k, m in enumerate(names):
        if m in col_of:
            reps[:, k] = src[:, col_of[m]]
        elif m == baseline:
            reps[:, k] = 50.0
    ranks = rank_intervals(names, table["score"].to_numpy(float), reps, ci)
    out = table.drop(columns=[c for c in RANK_COLUMNS if c in table.columns])
    at = list(out.columns).index("upper") + 1 if "upper" in out.columns else len(out.columns)
    for k, col in enumerate(RANK_COLUMNS):
        vals = ranks[col].tolist()
        if col != "tied_with":  # whole ranks print and serialise as ints; NaN (no replicate) as None
            vals = [None if v != v else int(v) for v in vals]
        out.insert(at + k, col, pd.Series(vals, dtype=object).to_numpy())
    return out.sort_values("score", ascending=False, kind="stable").reset_index(drop=True)


RANK_COLUMNS = ("rank", "rank_lower", "rank_upper", "tied_with")


def _general_bt(battles: pd.DataFrame, baseline: str, boot: Bootstrap):
    """Every replicate in one batched Newton solve, warm-started from the point fit."""
    names = pd.Index(sorted(set(battles["model"]) | set(battles["opponent"])))
    if baseline not in names:
        raise ValueError(f"baseline '{baseline}' is in no battle")
    keep = battles["weight"].to_numpy() > 0
    i = names.get_indexer(battles["model"])[keep]
    j = names.get_indexer(battles["opponent"])[keep]
    s = battles["score"].to_numpy()[keep]
    w = battles["weight"].to_numpy()[keep]
    anchor = names.get_loc(baseline)
    models = names.drop(baseline)
    cols = names.get_indexer(models)
    fit = fit_bradley_terry(len(names), i, j, s, w, anchor=anchor, tol=1e-10)
    point = expit(fit.theta[0, cols])
    if boot.n_rounds == 0:
        return models, point, np.zeros((0, len(models)))
    w_boot = boot.counts[:, boot.unit_of_row[keep]] * w
    reps = fit_bradley_terry(len(names), i, j, s, w_boot, anchor=anchor, tol=1e-10, init=(fit.theta[0], fit.gamma[0]))
    theta = reps.theta[:, cols]
    # A model with no game in a replicate keeps its start value; it has no estimate there.
    present = (w_boot @ ((i[:, None] == cols) | (j[:, None] == cols)).astype(float)) > 0
    return models, point, np.where(present, expit(theta), np.nan)


def average_tokens(answers: dict[str, dict[str, object]]) -> dict[str, float]:
    """Mean answer length in tokens per model (``token_len`` of each answer)."""
    out = {}
    for model, by_q in answers.items():
        lens = [a.token_len for a in by_q.values() if getattr(a, "token_len", None) is not None]
        if lens:
            out[model] = float(np.mean(lens))
    return out
