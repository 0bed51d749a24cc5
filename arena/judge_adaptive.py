"""Adaptive judging in ``arena judge --target-ci W`` (or ``--budget CALLS``).

The prompts are put in one random order (seeded, shared by every model). Judging goes in rounds:
every model still in play is judged on the next ``batch`` prompts of that order, and after each
round :func:`arena.stats.adaptive.still_uncertain` decides which models need more: a model stops
once its CI half-width is at most W (``--target-ci``: win-rate points; ``--target-elo``: Elo
points on the Bradley–Terry scale, which keeps judging models with extreme win rates) or it is
separated from its neighbours (paired CI on the shared prompts), and never before ``min_prompts``. Intervals use the Bonferroni
level of :func:`arena.stats.adaptive.simultaneous_level` so that all of them hold at once.

A prompt's score for a model is the weighted mean of its games' scores (soft verdicts and
repeats included, :func:`arena.soft_verdicts.soft_battles`), in [0, 1]. Each round is an ordinary
resumable :func:`arena.judge.judge_models` call on a prefix of the order, so a rerun with the same
seed replays the same rounds from stored judgments (cached games are free) and continues where
the last run stopped. ``--budget`` caps the judge calls made by this run (checked between rounds).
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np

from arena.stats.adaptive import DEFAULT_MIN_PROMPTS, ELO_PER_LOGIT, Scale, simultaneous_level, still_uncertain


@dataclass(frozen=True)
class AdaptiveOptions:
    target_ci: float | None = None  # CI half-width, percentage points of win rate
    target_elo: float | None = None  # or CI half-width in Elo points (Bradley–Terry scale)
    budget: int | None = None  # judge calls this run may make
    batch: int = 25
    min_prompts: int = DEFAULT_MIN_PROMPTS
    seed: int = 0
    ci: float = 0.95

    def __post_init__(self):
        if self.target_ci is not None and self.target_elo is not None:
            raise ValueError("give one precision target: --target-ci (win-rate points) or --target-elo (Elo points)")
        for flag, v in (("--target-ci", self.target_ci), ("--target-elo", self.target_elo)):
            # nan would silently turn the precision rule off, inf stop every model at once
            if v is not None and not (math.isfinite(v) and v > 0):
                raise ValueError(f"{flag} must be a positive number, got {v}")

    def precision_target(self) -> tuple[float | None, Scale]:
        """The half-width the stopping rule compares with, and the scale it is on."""
        if self.target_elo is not None:
            return self.target_elo / ELO_PER_LOGIT, "bt"
        return (None if self.target_ci is None else self.target_ci / 100), "winrate"


@dataclass
class AdaptiveReport:
    n_prompts: int
    order: list[str]
    judged: dict[str, int] = field(default_factory=dict)  # prompts judged per model
    rounds: int = 0
    calls: int = 0  # judge calls made by this run (cache misses)
    cached: int = 0  # judge requests answered from the cache
    stopped_by_budget: bool = False

    def uniform_calls(self, games_per_prompt: int) -> int:
        return len(self.judged) * self.n_prompts * games_per_prompt


def prompt_order(question_ids: Sequence[str], rng: np.random.Generator) -> list[str]:
    """One random order of the prompts, shared by every model."""
    ids = list(question_ids)
    return [ids[i] for i in rng.permutation(len(ids))]


def prompt_scores(judgments, baseline: str, strong_weight: float) -> dict[str, dict[str, float]]:
    """Per model, per prompt: the weighted mean score of its parsed games, in [0, 1]."""
    from arena.soft_verdicts import soft_battles

    b = soft_battles(judgments, baseline, strong_weight=strong_weight)
    out: dict[str, dict[str, float]] = {}
    if b.empty:
        return out
    b = b[b["weight"] > 0]
    ws = (b["score"] * b["weight"]).groupby([b["model"], b["question_id"]]).sum()
    w = b["weight"].groupby([b["model"], b["question_id"]]).sum()
    for (m, q), v in (ws / w).items():
        out.setdefault(m, {})[q] = float(v)
    return out


def _ledger_counts(client) -> tuple[int, int]:
    calls = cached = 0
    for (stage, _), t in client.ledger.totals.items():
        if str(stage).startswith("judge"):
            calls += t.calls
            cached += t.cache_hits
    return calls, cached


def judge_adaptively(
    client, *, judge: str, tpl, questions, answers: Mapping, models: Sequence[str], baseline: str, out_dir,
    opts: AdaptiveOptions, strong_weight: float, judge_kwargs: Mapping, notice: Callable[[str], None] | None = None,
) -> AdaptiveReport:
    """Rounds of :func:`arena.judge.judge_models` on growing prefixes of one shared prompt order
    until no model is uncertain, the prompts run out or the budget is spent (module docstring)."""
    from arena.judge import judge_models
    from arena.show import load_judgments

    by_id = {q.question_id: q for q in questions}
    order = prompt_order([q.question_id for q in questions], np.random.default_rng(opts.seed))
    rep = AdaptiveReport(n_prompts=len(order), order=order)
    start = min(max(opts.batch, opts.min_prompts), len(order))
    n = {m: start for m in models}
    level = simultaneous_level(opts.ci, len(models))
    target, scale = opts.precision_target()
    calls0, cached0 = _ledger_counts(client)
    active = list(models)
    while True:
        rep.rounds += 1

        async def one_round():
            try:
                return await asyncio.gather(*(judge_models(client, judge, tpl, [by_id[q] for q in order[: n[m]]], answers, [m], baseline, out_dir,
                                                           **judge_kwargs) for m in active))
            finally:
                await client.aclose()

        asyncio.run(one_round())
        calls, cached = _ledger_counts(client)
        rep.calls, rep.cached = calls - calls0, cached - cached0
        per_prompt = prompt_scores(load_judgments([out_dir]), baseline, strong_weight)
        seen = {m: np.array([per_prompt.get(m, {})[q] for q in order[: n[m]] if q in per_prompt.get(m, {})]) for m in models}
        uncertain = set(models) if target is None else \
            still_uncertain(seen, target_halfwidth=target, ci=level, min_prompts=opts.min_prompts, scale=scale)
        active = [m for m in models if m in uncertain and n[m] < len(order)]
        if not active:
            break
        if opts.budget is not None and rep.calls >= opts.budget:
            rep.stopped_by_budget = True
            break
        for m in active:
            n[m] = min(n[m] + opts.batch, len(order))
        if notice:
            notice(f"round {rep.rounds}: {len(active)} models still uncertain ({', '.join(active)}); {rep.calls} judge calls so far")
    rep.judged = dict(n)
    return rep
