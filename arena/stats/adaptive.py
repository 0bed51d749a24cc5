"""Adaptive judging: spend judge calls where the leaderboard is still uncertain.

Uniform judging takes prompts in one random order for every model and judges all models on the
first k prompts, raising k until every model's confidence interval is narrow enough. Adaptive
judging does the same in rounds, but stops judging a model as soon as

* its CI half-width is at most the target (a model far from 50% has a small variance and gets
  there with far fewer prompts than one near 50%), or
* it is separated from its neighbours in the ranking (its rank is settled; more verdicts
  would not change the order).

Both are functions of the verdicts seen so far, so a judging run can call `still_uncertain`
between rounds.

The precision target can be set on two scales. ``winrate``: the half-width in win-rate units.
``bt``: the half-width on the Bradley–Terry (logit) scale the leaderboard ranks on, by the delta
method, so one unit there is 400/ln 10 ≈ 174 Elo points. The scale decides who gets the prompts.
In win-rate units a model that wins 3% of the time has a small variance and reaches the target
after ~100 prompts. In logit units it is the least certain model, because a few wins more or
less move its rating the most. On AlpacaEval 2.0, 16 of the 58 models win 1.7–4% of the time,
within 0.2 points of each other. A win-rate target stopped them early and shuffled their ranks:
Spearman 0.971 in the worst order at 54% of the calls. A BT target keeps judging them and stops
the separated models at the top instead (bench/adaptive_judging_ae2.py).

CIs here are conservative normal intervals on the mean score per prompt (see
`mean_ci`); pass a Bonferroni level (`simultaneous_level`) so that every model's interval holds
at once, since the run stops on all of them. A minimum number of prompts per model keeps early,
tiny samples from stopping by luck. The final leaderboard's CIs still come from the bootstrap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Mapping, Sequence

import numpy as np
from scipy.stats import norm

DEFAULT_MIN_PROMPTS = 50
ELO_PER_LOGIT = 400 / np.log(10)  # Elo points per unit of the Bradley–Terry logit scale
Scale = Literal["winrate", "bt"]


def mean_ci(scores: np.ndarray, ci: float = 0.95, scale: Scale = "winrate") -> tuple[float, float]:
    """Mean of per-prompt scores in [0, 1] and a conservative normal CI half-width.

    The variance is bounded by μ̃(1 − μ̃), with μ̃ = (Σs + 1)/(n + 2) (Agresti–Coull's add-one
    smoothing): for scores in [0, 1], s² ≤ s, so Var ≤ μ(1 − μ) always holds. The sample
    variance is not used because it stops adaptive judging on luck: a model that wins 3% of
    the time often shows no win in its first 50 prompts, a sample sd of 0 and a CI of zero width.
    With ``scale="bt"`` the half-width is on the logit scale: the delta method multiplies the sd
    by d logit(μ)/dμ = 1/(μ(1 − μ)), which gives z / sqrt(n μ̃(1 − μ̃)). The mean stays in [0, 1].
    """
    scores = np.asarray(scores, dtype=float)
    n = scores.size
    if n == 0:
        return float("nan"), float("inf")
    z = norm.ppf(0.5 + ci / 2)
    smoothed = (scores.sum() + 1) / (n + 2)
    spread = smoothed * (1 - smoothed)
    half = z / np.sqrt(n * spread) if scale == "bt" else z * np.sqrt(spread / n)
    return float(scores.mean()), float(half)


def paired_gap_ci(a: np.ndarray, b: np.ndarray, ci: float = 0.95) -> tuple[float, float]:
    """Mean of a − b over the prompts both were judged on (a common prefix of the order) and
    its CI half-width; one pseudo-pair (+1, −1) keeps a short run from showing zero spread."""
    n = min(np.asarray(a).size, np.asarray(b).size)
    if n == 0:
        return 0.0, float("inf")
    d = np.asarray(a, float)[:n] - np.asarray(b, float)[:n]
    padded = np.concatenate([d, [1.0, -1.0]])
    z = norm.ppf(0.5 + ci / 2)
    return float(d.mean()), float(z * padded.std(ddof=1) / np.sqrt(n))


def still_uncertain(
    scores: Mapping[str, np.ndarray], *, target_halfwidth: float | None, ci: float = 0.95,
    min_prompts: int = DEFAULT_MIN_PROMPTS, separation: bool = True, scale: Scale = "winrate",
) -> set[str]:
    """The models that need more verdicts.

    ``scores`` maps each model to its per-prompt scores so far, in [0, 1], in the order the
    prompts were judged (one shared random order, so two models' first k scores are on the same
    prompts). A model is done when it has at least ``min_prompts`` scores and either its
    half-width on ``scale`` is ≤ ``target_halfwidth`` (win-rate units, or logits) or, with ``separation``,
    it is separated from both neighbours in the current ranking: the CI of the paired
    difference on their shared prompts excludes 0. Pairing removes the prompts' common
    difficulty, so neighbours separate with far fewer prompts than disjoint intervals need.
    """
    stats = {m: mean_ci(s, ci, scale) for m, s in scores.items()}
    order = sorted(stats, key=lambda m: stats[m][0])  # logit is monotone: one order on both scales

    def separated(m: str, other: str | None) -> bool:
        if other is None:
            return True
        gap, half = paired_gap_ci(scores[m], scores[other], ci)
        return abs(gap) > half

    active = set()
    for pos, m in enumerate(order):
        mean, half = stats[m]
        if np.asarray(scores[m]).size < min_prompts:
            active.add(m)
            continue
        if target_halfwidth is not None and half <= target_halfwidth:
            continue
        below = order[pos - 1] if pos > 0 else None
        above = order[pos + 1] if pos + 1 < len(order) else None
        if separation and separated(m, below) and separated(m, above):
            continue
        active.add(m)
    return active


def simultaneous_level(ci: float, n_models: int) -> float:
    """Bonferroni: the per-model level that makes ``n_models`` intervals hold jointly at ``ci``."""
    return 1 - (1 - ci) / max(n_models, 1)


@dataclass(frozen=True)
class JudgingOutcome:
    """Per model: prompts judged, the resulting mean score and its CI half-width in win-rate
    units (whatever scale the stopping rule used)."""

    models: list[str]
    n_judged: np.ndarray
    mean: np.ndarray
    halfwidth: np.ndarray

    @property
    def calls(self) -> int:
        return int(self.n_judged.sum())


def _outcome(verdicts: Mapping[str, np.ndarray], order: np.ndarray, n: Mapping[str, int], ci: float) -> JudgingOutcome:
    models = list(verdicts)
    stats = [mean_ci(np.asarray(verdicts[m])[order[: n[m]]], ci) for m in models]
    return JudgingOutcome(models, np.array([n[m] for m in models]),
                          np.array([s[0] for s in stats]), np.array([s[1] for s in stats]))


def simulate_uniform(
    verdicts: Mapping[str, np.ndarray], order: np.ndarray, *, target_halfwidth: float,
    batch: int = 25, ci: float = 0.95, min_prompts: int = DEFAULT_MIN_PROMPTS, separation: bool = True,
    scale: Scale = "winrate",
) -> JudgingOutcome:
    """Uniform judging on recorded verdicts: every model on the first k prompts of ``order``,
    k raised by ``batch`` until no model is `still_uncertain` under the same target (or the
    prompts run out). Only the allocation differs from `simulate_adaptive`."""
    n_prompts = order.size
    k = min(max(batch, min_prompts), n_prompts)
    while True:
        seen = {m: np.asarray(verdicts[m])[order[:k]] for m in verdicts}
        if k >= n_prompts or not still_uncertain(seen, target_halfwidth=target_halfwidth, ci=ci, min_prompts=min_prompts,
                                                 separation=separation, scale=scale):
            return _outcome(verdicts, order, {m: k for m in verdicts}, ci)
        k = min(k + batch, n_prompts)


def simulate_adaptive(
    verdicts: Mapping[str, np.ndarray], order: np.ndarray, *, target_halfwidth: float,
    batch: int = 25, ci: float = 0.95, min_prompts: int = DEFAULT_MIN_PROMPTS, separation: bool = True,
    scale: Scale = "winrate",
) -> JudgingOutcome:
    """Adaptive judging on recorded verdicts: rounds of ``batch`` prompts (in ``order``) for the
    models `still_uncertain` says need them; a model's prompts are a prefix of ``order``, as in
    a real run that takes prompts in one random order."""
    n_prompts = order.size
    n = {m: min(max(batch, min_prompts), n_prompts) for m in verdicts}
    while True:
        seen = {m: np.asarray(verdicts[m])[order[: n[m]]] for m in verdicts}
        active = [m for m in still_uncertain(seen, target_halfwidth=target_halfwidth, ci=ci, min_prompts=min_prompts,
                                             separation=separation, scale=scale)
                  if n[m] < n_prompts]
        if not active:
            return _outcome(verdicts, order, n, ci)
        for m in active:
            n[m] = min(n[m] + batch, n_prompts)


def paired_verdicts(models: Sequence[str], prompts: Sequence, scores: Sequence[float]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Per-model score arrays aligned on the prompts every model has (prompt keys sorted)."""
    models = np.asarray(models).astype(str)
    prompts = np.asarray(prompts)
    scores = np.asarray(scores, dtype=float)
    names = np.unique(models)
    common = None
    for m in names:
        p = set(prompts[models == m].tolist())
        common = p if common is None else common & p
    keys = np.array(sorted(common or ()))
    out = {}
    for m in names:
        sel = models == m
        lookup = dict(zip(prompts[sel].tolist(), scores[sel]))
        out[str(m)] = np.array([lookup[k] for k in keys.tolist()])
    return out, keys
