"""Simulated arena battles with known truth, for validating estimators (coverage, recovery).

Battles follow arena-hard's layout: every model plays the baseline twice per prompt (two
position-swapped games), and the judge's verdict for the model is drawn from a Bradley–Terry
(logistic) model, optionally with style covariates and a random effect per prompt. The prompt
effect ``u_q ~ N(0, prompt_sd^2)`` is shared by both games of a prompt and by every model (a
prompt the baseline answers badly is won by everyone), so games are correlated within a prompt,
as real judgments are; the estimand is then the marginal win rate E_u[P(win | u)].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import expit

from arena.stats.style import style_features


@dataclass
class SimulatedArena:
    battles: pd.DataFrame  # ratings battle table: question_id, model, opponent, game, score, weight
    model_meta: pd.DataFrame  # per battle: token_len, header_count, list_count, bold_count of the model
    opponent_meta: pd.DataFrame  # the same for the baseline's answer
    theta: pd.Series  # true log-strength of each model relative to the baseline
    gamma: np.ndarray  # true style coefficients (on the standardised covariates)
    features: pd.DataFrame | None  # standardised style covariates (None without style)
    true_win_rate: pd.Series | None = None  # marginal P(model beats baseline), %, without style


def marginal_win_rate(theta: np.ndarray, prompt_sd: float, tie_prob: float = 0.0) -> np.ndarray:
    """E_u[sigmoid(theta + u)] for u ~ N(0, prompt_sd^2), ties scoring 0.5 with ``tie_prob``:
    the expected score the weighted win rate estimates. Gauss–Hermite quadrature with 80 nodes
    (exact to ~1e-12 for the smooth sigmoid at the SDs used here)."""
    x, wts = np.polynomial.hermite_e.hermegauss(80)
    p = (expit(np.asarray(theta, float)[:, None] + prompt_sd * x[None, :]) @ wts) / wts.sum()
    return (1 - tie_prob) * p + tie_prob * 0.5


def simulate_arena(
    rng: np.random.Generator,
    n_models: int,
    n_prompts: int,
    *,
    theta: np.ndarray | None = None,
    gamma: np.ndarray | None = None,
    style_groups: tuple[str, ...] = ("length", "markdown"),
    tie_prob: float = 0.0,
    strong_prob: float = 0.0,
    strong_weight: float = 3.0,
    baseline: str = "baseline",
    prompt_sd: float = 0.0,
) -> SimulatedArena:
    """Draw ``n_models`` x ``n_prompts`` x 2 games against ``baseline``.

    ``theta``: true log-strengths (default N(0, 1)); ``gamma``: true style coefficients for the
    standardised covariates of ``style_groups`` (None: no style effect, no features). A game is
    a tie with ``tie_prob``; otherwise the model wins with probability
    ``sigmoid(theta_m + gamma . z)``; a decided game is strong (weight ``strong_weight``) with
    ``strong_prob``, independently of who won, so the weighted MLE stays consistent.
    ``prompt_sd``: SD of the per-prompt random effect added to every game's logit (module
    docstring); 0 draws none (and consumes no random numbers, so seeds reproduce older runs).
    Groups ``emoji`` adds an ``emoji_count`` per answer.
    """
    theta = rng.normal(0, 1, n_models) if theta is None else np.asarray(theta, float)
    models = [f"model-{k:02d}" for k in range(n_models)]
    m_idx = np.repeat(np.arange(n_models), n_prompts * 2)
    q_idx = np.tile(np.repeat(np.arange(n_prompts), 2), n_models)
    game = np.tile([1, 2], n_models * n_prompts)
    n = len(m_idx)

    def answers(scale: np.ndarray, md_rate: np.ndarray) -> pd.DataFrame:
        tokens = np.maximum(1, rng.lognormal(np.log(scale), 0.6)).round()
        return pd.DataFrame(
            {
                "token_len": tokens,
                "header_count": rng.poisson(md_rate * tokens / 100),
                "list_count": rng.poisson(2 * md_rate * tokens / 100),
                "bold_count": rng.poisson(1.5 * md_rate * tokens / 100),
            }
        )

    def add_emoji(frame: pd.DataFrame, rate: np.ndarray) -> pd.DataFrame:
        return frame.assign(emoji_count=rng.poisson(rate * frame["token_len"].to_numpy() / 100))

    # One answer per (model, prompt); both games of a prompt share it.
    per_model_len = rng.uniform(200, 900, n_models)
    per_model_md = rng.uniform(0.2, 2.0, n_models)
    pairs = np.arange(n_models * n_prompts)
    m_of_pair = pairs // n_prompts
    model_ans = answers(per_model_len[m_of_pair], per_model_md[m_of_pair])
    base_ans = answers(np.full(n_prompts, 500.0), np.full(n_prompts, 1.0))
    if "emoji" in style_groups:  # drawn only when asked, so runs without emoji replay as before
        model_ans = add_emoji(model_ans, rng.uniform(0.0, 1.5, n_models)[m_of_pair])
        base_ans = add_emoji(base_ans, np.full(n_prompts, 0.3))
    pair_of_row = m_idx * n_prompts + q_idx
    model_meta = model_ans.iloc[pair_of_row].reset_index(drop=True)
    opponent_meta = base_ans.iloc[q_idx].reset_index(drop=True)
    eta = theta[m_idx]
    if prompt_sd > 0:
        eta = eta + rng.normal(0.0, prompt_sd, n_prompts)[q_idx]
    features = None
    if gamma is not None:
        features = style_features(model_meta, opponent_meta, style_groups)
        eta = eta + features.to_numpy() @ np.asarray(gamma, float)
    tie = rng.random(n) < tie_prob
    win = rng.random(n) < expit(eta)
    score = np.where(tie, 0.5, win.astype(float))
    weight = np.where(~tie & (rng.random(n) < strong_prob), strong_weight, 1.0)
    battles = pd.DataFrame(
        {
            "question_id": [f"q{k:04d}" for k in q_idx],
            "model": np.array(models)[m_idx],
            "opponent": baseline,
            "judge": "simulated",
            "category": None,
            "game": game,
            "label": None,
            "status": "ok",
            "score": score,
            "weight": weight,
        }
    )
    return SimulatedArena(
        battles=battles,
        model_meta=model_meta,
        opponent_meta=opponent_meta,
        theta=pd.Series(theta, index=models),
        gamma=None if gamma is None else np.asarray(gamma, float),
        features=features,
        true_win_rate=None if gamma is not None else pd.Series(100 * marginal_win_rate(theta, prompt_sd, tie_prob), index=models),
    )


def bootstrap_ci_coverage(
    rng: np.random.Generator,
    n_runs: int,
    *,
    n_models: int = 5,
    n_prompts: int = 300,
    n_bootstrap: int = 200,
    ci: float = 0.95,
    strong_prob: float = 0.3,
    prompt_sd: float = 0.0,
    resample: str = "prompt",
) -> pd.DataFrame:
    """Coverage of the leaderboard's bootstrap CI for the true win rate.

    Each run draws fresh true strengths theta ~ N(0, 1), simulates battles against the
    baseline (decisive verdicts, strong ones weighted independently of the winner, so the
    weighted win rate estimates the marginal win probability without bias; a prompt effect of SD
    ``prompt_sd`` correlates the games of a prompt), and scores them with
    :func:`arena.stats.ratings.leaderboard` resampling ``resample`` units (``prompt``: the
    leaderboard's bootstrap; ``game``: games one by one, which ignores the correlation). Returns
    one row per (run, model): true win rate, CI and whether the CI covers it."""
    from arena.stats.ratings import leaderboard

    rows = []
    # Separate streams: the arenas depend on the seed only, not on how many random numbers the
    # resampling used, so both resampling units are compared on the same arenas.
    sim_rng, boot_rng = rng.spawn(2)
    for run in range(n_runs):
        sim = simulate_arena(sim_rng, n_models, n_prompts, strong_prob=strong_prob, prompt_sd=prompt_sd)
        lb = leaderboard(sim.battles, "baseline", n_bootstrap=n_bootstrap, ci=ci, rng=boot_rng, resample=resample).table.set_index("model")
        truth = sim.true_win_rate
        for m, t in truth.items():
            lo, hi = lb.loc[m, "lower"], lb.loc[m, "upper"]
            rows.append({"run": run, "model": m, "truth": t, "score": lb.loc[m, "score"], "lower": lo, "upper": hi, "covered": bool(lo <= t <= hi)})
    return pd.DataFrame(rows)
