"""Judge stability: each game judged several times, the repeats aggregated, and the judge's
flip rate measured.

An LLM judge flips a sizeable share of pairwise verdicts when a run is repeated. With
``judge.repeats: N`` every game is asked N times (``ChatRequest.repeat`` is part of the cache key,
so each repeat is cached on its own and a resumed run asks only the missing ones; when the judge's
params carry a ``seed``, repeat r is sent with ``seed + r`` so seeded endpoints sample afresh).
With ``judge.repeats_adaptive: {max: N, confidence: c}`` a game is asked one repeat at a time until
its leading label is decided at confidence ``c`` or N repeats were made (:func:`leader_posterior`).

Aggregation (``judge.aggregate``), over the repeats that produced a label:

* ``majority``: the most frequent label. A tie between labels gives the game the *mean* of the
  tied labels' scores (``label_probs`` uniform over them, scored as in
  :mod:`arena.soft_verdicts`); its ``score`` field holds the tied label that came first.
* ``mean``: the game is scored by the mean label distribution of its repeats (a repeat with soft
  verdict probabilities contributes them, otherwise its label one-hot); ``score`` holds the
  distribution's most likely label (ties: the earliest among the repeats).

A game with no labelled repeat keeps the status of its first repeat (failed, unparsed, conflict).
Every repeat's raw text, label and status stays in the record under ``repeats``.

Flip rate (:func:`stability`): the share of pairs of repeats of one game whose labels differ,
averaged over games with at least two labelled repeats, with a bootstrap CI over games. Under the
symmetric flip model (the judge gives a game's true label with probability 1-p, otherwise one of
the other four at random) a pair differs with probability ``d = 2p - (5/4)p^2``; ``flip_p`` inverts
that (a monotone map for p <= 0.8, so the CI maps through it too).
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.stats import beta

from arena.io.formats import VERDICT_LABELS, Game, Judgment
from arena.soft_verdicts import LABEL_PROBS, mean_distribution, valid_label_probs

AGGREGATES = ("majority", "mean")


@dataclass(frozen=True)
class RepeatPlan:
    """How often to ask each game: ``repeats`` fixed, or adaptively up to ``max_repeats``."""

    repeats: int = 1
    aggregate: str = "majority"
    adaptive: bool = False
    max_repeats: int = 1
    confidence: float = 0.9

    def __post_init__(self) -> None:
        if self.aggregate not in AGGREGATES:
            raise ValueError(f"aggregate must be one of {AGGREGATES}")

    @property
    def active(self) -> bool:
        return self.adaptive or self.repeats > 1

    @property
    def version(self) -> str:
        """What changes the recorded verdicts; kept in each game so a changed plan is visible."""
        if self.adaptive:
            return f"adaptive:{self.max_repeats}:{self.confidence}:{self.aggregate}"
        return f"fixed:{self.repeats}:{self.aggregate}"


def leader_posterior(labels: Sequence[str]) -> float:
    """P(the leading label's share exceeds 1/2 | repeats), under a uniform Beta(1, 1) prior on
    that share: the leader is then the majority label of the judge's distribution. 0 for none."""
    if not labels:
        return 0.0
    k = Counter(labels).most_common(1)[0][1]
    return float(beta.sf(0.5, 1 + k, 1 + len(labels) - k))


def repeat_request(req, r: int):
    """Repeat ``r`` of a request: its own cache key, and ``seed + r`` where a seed is set."""
    params = dict(req.params)
    if r and isinstance(params.get("seed"), int) and not isinstance(params.get("seed"), bool):
        params["seed"] = params["seed"] + r
    return replace(req, repeat=r, params=params)


def aggregate_games(games: Sequence[Game], aggregate: str = "majority") -> Game:
    """One game from its repeats (module docstring); keeps every repeat under ``repeats``."""
    first = games[0]
    record = [{"judgment": g.judgment, "score": g.score, "status": g.status, **{k: v for k, v in g.extra.items() if k != "repeats"}} for g in games]
    labelled = [g for g in games if g.score is not None]
    extra: dict[str, Any] = {"repeats": record, "n_repeats": len(games)}
    if not labelled:
        return Game(first.user_prompt, first.judgment, None, status=first.status, extra=extra)
    labels = [g.score for g in labelled]
    extra["posterior"] = round(leader_posterior(labels), 6)
    counts = Counter(labels)
    if aggregate == "majority":
        top = max(counts.values())
        tied = [lab for lab in dict.fromkeys(labels) if counts[lab] == top]
        label = tied[0]
        if len(tied) > 1:
            extra["tie"] = tied
            extra[LABEL_PROBS] = {lab: 1 / len(tied) for lab in tied}
    else:
        dists = [valid_label_probs(g.extra.get(LABEL_PROBS)) or {g.score: 1.0} for g in labelled]
        mean = mean_distribution(dists)
        best = max(mean.values())
        leaders = [lab for lab in dict.fromkeys(labels) if math.isclose(mean.get(lab, 0.0), best)]
        label = leaders[0] if leaders else max(mean, key=mean.get)
        extra[LABEL_PROBS] = {k: round(v, 6) for k, v in mean.items()}
    status = "ok" if all(g.status == "ok" for g in labelled) else "reasked"
    return Game(first.user_prompt, labelled[0].judgment, label, status=status, extra=extra)


async def play_repeated(play, req, plan: RepeatPlan) -> Game:
    """Play a game under ``plan``: ``play(request) -> Game`` is one judged game (with its re-ask).

    Fixed repeats run concurrently; adaptive ones one at a time (each decides whether another is
    needed). Every repeat goes through the cache, so a resumed run pays only for missing ones."""
    if not plan.active:
        return await play(req)
    if not plan.adaptive:
        games = await asyncio.gather(*(play(repeat_request(req, r)) for r in range(plan.repeats)))
    else:
        games = []
        for r in range(plan.max_repeats):
            games.append(await play(repeat_request(req, r)))
            labels = [g.score for g in games if g.score is not None]
            if leader_posterior(labels) >= plan.confidence:
                break
    g = aggregate_games(list(games), plan.aggregate)
    g.extra["repeat_plan"] = plan.version
    return g


# --------------------------------------------------------------------------- audit
def implied_flip_p(d: float | np.ndarray) -> float | np.ndarray:
    """Invert d = 2p - (5/4) p^2 (pair disagreement under the symmetric five-label flip model)."""
    d = np.clip(np.asarray(d, dtype=float), 0.0, 0.8)
    return (2 - np.sqrt(4 - 5 * d)) / 2.5


def _entropy_bits(labels: Sequence[str]) -> float:
    c = np.array(list(Counter(labels).values()), dtype=float)
    p = c / c.sum()
    return float(-(p * np.log2(p)).sum())


def game_repeat_labels(judgments: Sequence[Judgment]) -> pd.DataFrame:
    """One row per game with repeats: judge, question_id, model, game, labels (list)."""
    rows = []
    for j in judgments:
        for k, g in enumerate(j.games):
            reps = g.extra.get("repeats")
            if not isinstance(reps, list):
                continue
            labels = [r.get("score") for r in reps if isinstance(r, Mapping) and r.get("score") in VERDICT_LABELS]
            rows.append((j.judge, j.question_id, j.model, k + 1, labels))
    return pd.DataFrame(rows, columns=["judge", "question_id", "model", "game", "labels"])


def stability(judgments: Sequence[Judgment], *, n_bootstrap: int = 1000, ci: float = 0.95, rng: np.random.Generator) -> pd.DataFrame:
    """Per judge: games with >= 2 labelled repeats, the flip rate between repeats (with a
    percentile bootstrap CI over games), the implied per-repeat flip probability ``flip_p``,
    mean verdict entropy (bits) over the repeats of a game, the mean number of repeats and
    the position inconsistency of the aggregated verdicts (game 1 vs mirrored game 2)."""
    from arena.audit.judges import MIRROR

    games = game_repeat_labels(judgments)
    out = []
    for judge, grp in games.groupby("judge", sort=True):
        multi = grp[grp["labels"].map(len) >= 2]
        per_game = np.array([_pair_disagreement(ls) for ls in multi["labels"]])
        n = len(per_game)
        rate = float(per_game.mean()) if n else float("nan")
        lo = hi = float("nan")
        if n and n_bootstrap:
            idx = rng.integers(0, n, size=(n_bootstrap, n))
            reps = per_game[idx].mean(axis=1)
            lo, hi = np.quantile(reps, [(1 - ci) / 2, (1 + ci) / 2])
        agg = {}
        for j in judgments:
            if j.judge == judge and len(j.games) >= 2:
                agg[(j.model, j.question_id)] = (j.games[0].score, j.games[1].score)
        pairs = [(a, b) for a, b in agg.values() if a is not None and b is not None]
        incons = float(np.mean([a != MIRROR[b] for a, b in pairs])) if pairs else float("nan")
        out.append({
            "judge": judge, "n_games": n, "flip_rate": rate, "flip_lower": float(lo), "flip_upper": float(hi),
            "flip_p": float(implied_flip_p(rate)) if n else float("nan"),
            "flip_p_lower": float(implied_flip_p(lo)) if n else float("nan"),
            "flip_p_upper": float(implied_flip_p(hi)) if n else float("nan"),
            "entropy_bits": float(np.mean([_entropy_bits(ls) for ls in multi["labels"]])) if n else float("nan"),
            "mean_repeats": float(grp["labels"].map(len).mean()) if len(grp) else float("nan"),
            "position_inconsistency": incons,
        })
    return pd.DataFrame(out)


def _pair_disagreement(labels: Sequence[str]) -> float:
    """Share of unordered pairs of repeats whose labels differ."""
    n = len(labels)
    same = sum(c * (c - 1) for c in Counter(labels).values())
    return 1.0 - same / (n * (n - 1))
