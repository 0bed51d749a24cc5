"""Ranks with bootstrap rank intervals, and the models each one is statistically tied with.

Definitions (one convention, used by every leaderboard):

* ``rank``: competition rank of the point estimate, ``1 + #{models with a strictly higher
  score}`` (equal scores share the better rank);
* ``rank_lower`` / ``rank_upper``: the best and worst plausible rank, the ``(1 - ci) / 2`` and
  ``(1 + ci) / 2`` quantiles of the model's rank across bootstrap replicates, where its rank in
  replicate ``r`` is ``1 + #{models scoring strictly higher in r}``. Quantiles use the
  inverted-CDF definition (numpy ``method="inverted_cdf"``), so both bounds are ranks that some
  replicate actually gave; a replicate in which the model has no score is left out;
* ``tied_with``: the other models whose paired bootstrap difference ``score_i - score_j`` has a
  central ``ci`` percentile interval containing 0 (neither is confidently ahead). A paired test
  on the same replicates, not overlap of the two marginal CIs, which is far too conservative
  (two overlapping intervals can still separate the models when their scores move together).

Chosen over LMArena's "1 + number of models whose lower bound is above my upper bound" because
that rule reads marginal intervals as if they were independent, while both of these come from
the same replicates as the scores.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd


def competition_ranks(scores: np.ndarray) -> np.ndarray:
    """Per row of ``scores`` (..., K): ``1 + #{k: score_k > score_i}``; NaN where the score is NaN
    (a NaN score neither takes a rank nor pushes others down)."""
    s = np.asarray(scores, float)
    higher = (s[..., None, :] > s[..., :, None]).sum(axis=-1)  # NaN compares False both ways
    return np.where(np.isnan(s), np.nan, 1.0 + higher)


def rank_intervals(models, point: np.ndarray, replicates: np.ndarray, ci: float) -> pd.DataFrame:
    """``rank, rank_lower, rank_upper, tied_with`` for each of ``models`` (see module docstring).

    ``point`` (K,), ``replicates`` (R, K) in the same column order. Without replicates the
    interval is NaN and ``tied_with`` None (unknown, not "tied with nobody")."""
    models = list(models)
    point = np.asarray(point, float)
    reps = np.asarray(replicates, float).reshape(-1, len(models))
    rank = competition_ranks(point)
    out = pd.DataFrame({"model": models, "rank": rank})
    if reps.shape[0] == 0:
        out["rank_lower"] = np.nan
        out["rank_upper"] = np.nan
        out["tied_with"] = None
        return out
    a = (1.0 - ci) / 2.0
    rep_ranks = competition_ranks(reps)
    # numpy's nanquantile loops in Python per column; take it only when a replicate lacks a score.
    quantile = np.nanquantile if np.isnan(reps).any() else np.quantile
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a model never scored has no interval
        out["rank_lower"] = quantile(rep_ranks, a, axis=0, method="inverted_cdf")
        out["rank_upper"] = quantile(rep_ranks, 1 - a, axis=0, method="inverted_cdf")
        diff = reps[:, :, None] - reps[:, None, :]  # (R, i, j): score_i - score_j
        lo, hi = quantile(diff, [a, 1 - a], axis=0)
    tied = ~((lo > 0) | (hi < 0))  # NaN bounds (no common replicate) count as tied: unknown order
    order = np.argsort(-np.nan_to_num(point, nan=-np.inf), kind="stable")
    out["tied_with"] = [[models[j] for j in order if j != i and tied[i, j]] for i in range(len(models))]
    return out
