"""Eval scores and weighted indices with confidence intervals across items and repeats.

Scores per eval are a matrix ``S[item, repeat]`` in {0, 1} (NaN where the item failed at
the API and was not scored). The eval score is the mean over items of each item's mean
over its scored repeats. CIs come from a two-stage bootstrap: resample items with
replacement, then repeats within each item, so both sources of variance are reflected.
Indices are weighted means of eval scores; their CI resamples every eval jointly. Which
evals an index holds, and their weights, come from the tasks (``arena.index.tasks``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Estimate:
    value: float
    low: float
    high: float
    n_items: int


def item_means(scores: np.ndarray) -> np.ndarray:
    """Per-item mean over scored repeats (NaN rows = items never scored)."""
    if not scores.size:
        return np.array([])
    counts = np.sum(~np.isnan(scores), axis=1)
    sums = np.nansum(scores, axis=1)
    return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def _bootstrap_eval(scores: np.ndarray, rng: np.random.Generator, rounds: int) -> np.ndarray:
    """Two-stage bootstrap replicates of the eval score (items, then repeats within item)."""
    scored = scores[~np.all(np.isnan(scores), axis=1)]
    n, r = scored.shape
    if n == 0:
        return np.full(rounds, np.nan)
    out = np.empty(rounds)
    for b in range(rounds):
        rows = scored[rng.integers(0, n, n)]
        cols = rng.integers(0, r, (n, r))
        resampled = np.take_along_axis(rows, cols, axis=1)
        with np.errstate(invalid="ignore"):
            m = np.nanmean(resampled, axis=1)
        # A row whose resampled repeats are all NaN falls back to its own mean.
        m = np.where(np.isnan(m), np.nanmean(rows, axis=1), m)
        out[b] = m.mean()
    return out


def eval_estimate(scores: np.ndarray, *, rng: np.random.Generator, rounds: int = 1000, level: float = 0.95) -> Estimate:
    means = item_means(scores)
    means = means[~np.isnan(means)]
    if len(means) == 0:
        return Estimate(float("nan"), float("nan"), float("nan"), 0)
    reps = _bootstrap_eval(scores, rng, rounds)
    a = (1 - level) / 2
    return Estimate(float(means.mean()), float(np.quantile(reps, a)), float(np.quantile(reps, 1 - a)), len(means))


def index_estimates(
    eval_scores: dict[str, np.ndarray], *, rng: np.random.Generator, rounds: int = 1000, level: float = 0.95,
    definitions: dict[str, dict[str, float]] | None = None,
) -> pd.DataFrame:
    """Each index whose evals are all present: weighted mean (weights renormalised to the
    index's definition) with a joint bootstrap CI. Indices missing an eval are reported as
    NaN with the missing evals named, never silently re-weighted."""
    if definitions is None:
        from arena.index.tasks import index_definitions

        definitions = index_definitions()
    reps = {name: _bootstrap_eval(s, rng, rounds) for name, s in eval_scores.items()}
    point = {}
    for name, s in eval_scores.items():
        m = item_means(s)
        m = m[~np.isnan(m)]
        point[name] = float(m.mean()) if len(m) else float("nan")
    rows = []
    a = (1 - level) / 2
    for index, weights in definitions.items():
        missing = [e for e in weights if e not in eval_scores or np.isnan(point.get(e, np.nan))]
        total = sum(weights.values())
        if missing:
            rows.append({"index": index, "value": np.nan, "low": np.nan, "high": np.nan, "missing": ", ".join(missing)})
            continue
        value = sum(w * point[e] for e, w in weights.items()) / total
        dist = sum(w * reps[e] for e, w in weights.items()) / total
        rows.append({"index": index, "value": value, "low": float(np.quantile(dist, a)), "high": float(np.quantile(dist, 1 - a)), "missing": ""})
    return pd.DataFrame(rows)


def accuracy_by_log2_tokens(correct: np.ndarray, output_tokens: np.ndarray) -> pd.DataFrame:
    """Accuracy binned by floor(log2(output tokens)), as in the HLE paper's Figure 5."""
    toks = np.asarray(output_tokens, dtype=float)
    ok = toks > 0
    bins = np.floor(np.log2(toks[ok])).astype(int)
    df = pd.DataFrame({"bin": bins, "correct": np.asarray(correct, dtype=float)[ok]})
    g = df.groupby("bin").agg(accuracy=("correct", "mean"), n=("correct", "size")).reset_index()
    g["tokens_from"] = 2 ** g["bin"]
    g["tokens_to"] = 2 ** (g["bin"] + 1) - 1
    return g[["tokens_from", "tokens_to", "n", "accuracy"]]
