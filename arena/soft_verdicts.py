"""Soft verdicts: a game's score as the judge's probability over the five labels.

When the judge endpoint returns token logprobs (OpenAI's ``logprobs.content[].top_logprobs``;
llama.cpp's server when asked with ``logprobs: true, top_logprobs: K``), the game's score is the
expectation of the usual weighted score under the judge's label distribution instead of the one
sampled label. Without logprobs a game keeps its sampled label (a one-hot distribution).

How the distribution is read (:func:`label_distribution`)
--------------------------------------------------------
The verdict parser (``arena/verdicts.py``) has already chosen the label and we only ever read the
judge's *own* reply: the last ``[[<label>]]`` in it. The reply's tokens are laid end to end to find
the tokens that spell the label. At each of them, the alternatives listed in ``top_logprobs`` that
keep the text a prefix of some label (e.g. after ``[[`` the tokens ``A`` and ``B``; after ``[[B``
only ``>``; after ``[[B>`` the tokens ``>`` and ``A``) are renormalised among themselves. llama.cpp
reports logprobs of the raw logits, before its grammar masks them, so this renormalisation over the
allowed continuations is exactly the grammar-constrained sampler's distribution. The sampled path
carries its probability on; an alternative that leads to a single label gives it its mass; an
alternative that leads to several labels (the branch not taken, e.g. ``A`` when ``B`` was sampled)
is never expanded by the endpoint, so its mass is shared evenly among those labels. A label
alternative missing from the top K counts as probability 0. Any mismatch (tokens that do not spell
the reply, no label found) gives no distribution, and the game falls back to its label.

Scoring (:func:`soft_battles`)
------------------------------
With label probabilities ``p_l``, strong-label weight ``w_l`` (``strong_weight`` for ``>>``, else 1)
and the model's score ``s_l`` for each label, a game enters the closed-form win rate with weight
``sum p_l w_l`` and score ``sum p_l w_l s_l / sum p_l w_l``: the expected contribution of a
sampled label. Repeated games (``arena/judge_repeats.py``) store their aggregate in the same field.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from arena.io.formats import VERDICT_LABELS, Judgment

LABEL_PROBS = "label_probs"  # the key in a game's record
DEFAULT_TOP_LOGPROBS = 20

# The model's score per label by its position (as in arena/stats/ratings.py).
_MODEL_SCORE_AS_B = {"A>>B": 0.0, "A>B": 0.0, "A=B": 0.5, "B>A": 1.0, "B>>A": 1.0}
_MODEL_SCORE_AS_A = {"A>>B": 1.0, "A>B": 1.0, "A=B": 0.5, "B>A": 0.0, "B>>A": 0.0}


def soft_params(top_logprobs: int = DEFAULT_TOP_LOGPROBS) -> dict[str, Any]:
    """Request params that make an OpenAI-compatible endpoint return top-K token logprobs."""
    return {"logprobs": True, "top_logprobs": int(top_logprobs)}


def _tokens(payload: Mapping[str, Any] | None) -> list[tuple[str, float, list[tuple[str, float]]]] | None:
    """``[(token, logprob, [(alt, logprob), ...]), ...]`` from a stored reply payload, or None."""
    raw = (payload or {}).get("logprobs")
    if not isinstance(raw, list) or not raw:
        return None
    out = []
    for t in raw:
        if not isinstance(t, Mapping) or not isinstance(t.get("token"), str):
            return None
        try:
            lp = float(t.get("logprob"))
            alts = [(str(a[0]), float(a[1])) for a in (t.get("top_logprobs") or [])]
        except (TypeError, ValueError, IndexError):
            return None
        out.append((t["token"], lp, alts))
    return out


def label_distribution(text: str, label: str, tokens: Sequence[tuple[str, float, Sequence[tuple[str, float]]]]) -> dict[str, float] | None:
    """The judge's probability over the five labels at the tokens spelling ``[[label]]`` (the
    last one in ``text``); None when it cannot be read. See the module docstring."""
    if label not in VERDICT_LABELS or not tokens:
        return None
    if "".join(t[0] for t in tokens) != text:
        return None
    at = text.rfind(f"[[{label}]]")
    if at < 0:
        return None
    start = at + 2
    end = start + len(label)
    dist = {lab: 0.0 for lab in VERDICT_LABELS}
    mass = 1.0
    pos = 0
    for tok, lp, alts in tokens:
        t_start, t_end = pos, pos + len(tok)
        pos = t_end
        if t_end <= start:
            continue
        if t_start >= end:
            break
        if t_start < start:  # a token that straddles "[[" and the label: nothing to choose here
            continue
        prefix = text[start:t_start]
        options: dict[str, float] = {}
        for alt, alp in [*alts, (tok, lp)]:
            cont = prefix + alt
            if any(lab.startswith(cont) or cont.startswith(lab) for lab in VERDICT_LABELS):
                options[alt] = alp
        if tok not in options:
            return None
        top = max(options.values())
        z = sum(math.exp(v - top) for v in options.values())
        for alt, alp in options.items():
            if alt == tok:
                continue
            p = mass * math.exp(alp - top) / z
            cont = prefix + alt
            reach = [lab for lab in VERDICT_LABELS if lab.startswith(cont) or cont.startswith(lab)]
            for lab in reach:
                dist[lab] += p / len(reach)
        mass *= math.exp(options[tok] - top) / z
        if t_end >= end:
            break
    dist[label] += mass
    total = sum(dist.values())
    if not total > 0:
        return None
    return {lab: v / total for lab, v in dist.items() if v > 0}


def soft_extra(text: str | None, label: str | None, payload: Mapping[str, Any] | None) -> dict[str, Any]:
    """``{"label_probs": {...}}`` for a game's record when the reply carries logprobs, else ``{}``."""
    if not text or label is None:
        return {}
    toks = _tokens(payload)
    if toks is None:
        return {}
    dist = label_distribution(text, label, toks)
    return {LABEL_PROBS: {k: round(v, 6) for k, v in dist.items()}} if dist else {}


def valid_label_probs(value: Any) -> dict[str, float] | None:
    """A stored distribution, checked (files are untrusted): known labels, finite non-negative
    numbers, positive total; renormalised. Anything else is ignored (the label is used)."""
    if not isinstance(value, Mapping) or not value:
        return None
    out = {}
    for k, v in value.items():
        if k not in VERDICT_LABELS or isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        if not math.isfinite(v) or v < 0:
            return None
        out[k] = float(v)
    total = sum(out.values())
    if not total > 0:
        return None
    return {k: v / total for k, v in out.items()}


def expected_score(probs: Mapping[str, float], model_is_a: bool, strong_weight: float) -> tuple[float, float]:
    """(score, weight) of a game under a label distribution, for the model in position A or B."""
    table = _MODEL_SCORE_AS_A if model_is_a else _MODEL_SCORE_AS_B
    w = sum(p * (strong_weight if ">>" in lab else 1.0) for lab, p in probs.items())
    ws = sum(p * (strong_weight if ">>" in lab else 1.0) * table[lab] for lab, p in probs.items())
    return ws / w, w


def soft_battles(judgments: Iterable[Judgment], baseline: str, *, strong_weight: float = 3.0) -> pd.DataFrame:
    """:func:`arena.stats.ratings.battles_from_judgments`, with each game that records a label
    distribution scored by its expectation (module docstring), and each game imported from
    AlpacaEval with a soft preference (``soft_score``, the model's win probability) scored by it
    at weight 1, which reproduces AlpacaEval's win rates; ``label`` stays the sampled one."""
    from arena.io.alpaca_eval import SOFT_KEY
    from arena.stats.ratings import battles_from_judgments

    judgments = list(judgments)
    battles = battles_from_judgments(judgments, baseline, strong_weight=strong_weight)
    if battles.empty:
        return battles
    if len(battles) != sum(len(j.games) for j in judgments):  # rows are matched to games by position
        raise RuntimeError("battles_from_judgments no longer gives one row per game; soft_battles needs updating")
    score = battles["score"].to_numpy(dtype=float).copy()
    weight = battles["weight"].to_numpy(dtype=float).copy()
    row = 0
    for j in judgments:
        for k, g in enumerate(j.games):
            probs = valid_label_probs(g.extra.get(LABEL_PROBS)) if g.score is not None else None
            imported = g.extra.get(SOFT_KEY) if g.score is not None else None
            if probs is not None:
                score[row], weight[row] = expected_score(probs, model_is_a=k % 2 == 1, strong_weight=strong_weight)
            elif isinstance(imported, (int, float)) and not isinstance(imported, bool) and 0.0 <= imported <= 1.0:
                score[row], weight[row] = float(imported), 1.0
            row += 1
    return battles.assign(score=score, weight=weight)


def soft_share(judgments: Iterable[Judgment]) -> float:
    """Share of scored games that carry a label distribution (0 when none)."""
    n = soft = 0
    for j in judgments:
        for g in j.games:
            if g.score is not None:
                n += 1
                soft += valid_label_probs(g.extra.get(LABEL_PROBS)) is not None
    return soft / n if n else 0.0


def mean_distribution(dists: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """The average of label distributions (the ``mean`` aggregate of repeats)."""
    acc = np.zeros(len(VERDICT_LABELS))
    for d in dists:
        acc += [d.get(lab, 0.0) for lab in VERDICT_LABELS]
    acc /= max(len(dists), 1)
    return {lab: float(v) for lab, v in zip(VERDICT_LABELS, acc) if v > 0}
