"""Prompt quality score against separability (BenchBuilder paper, Figure 4).

BenchBuilder's annotator gives each prompt a quality score (0-7: how many of the seven criteria
it meets). The paper shows that models separate better on high-score prompts. Here prompts are
put in buckets of the score (width 2 by default: 0-1, 2-3, 4-5, 6-7), the *same number* of prompts
is drawn from every bucket (so CI widths are comparable), and within each bucket:

* for chosen pairs ``a:b``, the win rate of a over b with a prompt-level bootstrap CI. Judgments
  are against one baseline, so when neither is the baseline the pair's win rate goes through it
  by Bradley-Terry: ``expit(logit(w_a) - logit(w_b))`` with ``w`` the win rates against the
  baseline, computed in each bootstrap replicate from the same resampled prompts;
* the separability of the whole leaderboard (share of model pairs with non-overlapping CIs,
  :func:`arena.audit.benchmark.separability`) and its agreement with a reference ranking
  (:func:`arena.audit.benchmark.agreement_paper`): the human-preference file when one is given,
  otherwise the leaderboard on all prompts.

Pure functions over the battle table and a ``question_id -> score`` mapping; randomness from an
explicit ``numpy.random.Generator``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.special import expit, logit

from arena.audit.benchmark import agreement_paper, separability
from arena.errors import InputError
from arena.stats.bootstrap import percentile_interval
from arena.stats.ratings import leaderboard


@dataclass
class QualityReport:
    pairs: pd.DataFrame  # bucket, pair, model_a, model_b, win_rate, lower, upper, n_prompts
    buckets: pd.DataFrame  # bucket, n_prompts, n_models, separability, agreement, mean_ci_width

    def to_dict(self) -> dict:
        clean = lambda df: df.replace({np.nan: None}).to_dict(orient="records")  # noqa: E731
        return {"pairs": clean(self.pairs), "buckets": clean(self.buckets)}


def score_bucket(score: float, width: float = 2.0, low: float = 0.0) -> str:
    """The bucket label of a score, e.g. 4-5 for 4 or 5 with width 2 (integer scores)."""
    k = math.floor((score - low) / width)
    a = low + k * width
    b = a + width - 1 if float(width).is_integer() else a + width
    return f"{a:g}-{b:g}"


def sample_per_bucket(buckets: Mapping[str, str], n: int | None, rng: np.random.Generator) -> dict[str, list[str]]:
    """``n`` prompts per bucket without replacement (``None``: the smallest bucket's size);
    question ids sorted first so the draw depends only on the seed."""
    groups: dict[str, list[str]] = {}
    for qid, b in sorted(buckets.items()):
        groups.setdefault(b, []).append(qid)
    size = min(len(v) for v in groups.values()) if n is None else n
    out = {}
    for b in sorted(groups, key=lambda s: float(s.split("-")[0])):
        qids = groups[b]
        if len(qids) < size:
            raise InputError(f"bucket {b} has {len(qids)} prompts, fewer than the {size} asked per bucket", field="--per-bucket")
        out[b] = [qids[i] for i in sorted(rng.choice(len(qids), size=size, replace=False))]
    return out


def quality_buckets(
    battles: pd.DataFrame, scores: Mapping[str, float], baseline: str, *, pairs: Sequence[tuple[str, str]] = (),
    width: float = 2.0, per_bucket: int | None = None, n_bootstrap: int = 200, ci: float = 0.95,
    rng: np.random.Generator, reference: pd.DataFrame | None = None,
) -> QualityReport:
    """Win rates of ``pairs`` and leaderboard separability/agreement per quality-score bucket."""
    battles = battles[battles["question_id"].isin(list(scores))]
    if battles.empty:
        raise InputError("no judged prompt has a quality score")
    judged = set(battles["question_id"])
    buckets = {q: score_bucket(float(s), width) for q, s in scores.items() if q in judged}
    drawn = sample_per_bucket(buckets, per_bucket, rng)
    full = leaderboard(battles, baseline, n_bootstrap=n_bootstrap, ci=ci, rng=rng).table
    ref = reference if reference is not None else full
    pair_rows, bucket_rows = [], []
    for b, qids in drawn.items():
        sub = battles[battles["question_id"].isin(qids)]
        lb = leaderboard(sub, baseline, n_bootstrap=n_bootstrap, ci=ci, rng=rng)
        t = lb.table.set_index("model")
        models = [m for m in t.index if m in set(ref["model"])]
        r = ref.set_index("model").loc[models]
        bucket_rows.append({
            "bucket": b, "n_prompts": len(qids), "n_models": len(t),
            "separability": separability(t["lower"].to_numpy(), t["upper"].to_numpy()),
            "agreement": agreement_paper(t.loc[models, "lower"].to_numpy(), t.loc[models, "upper"].to_numpy(),
                                         r["lower"].to_numpy(), r["upper"].to_numpy()),
            "mean_ci_width": float((t["upper"] - t["lower"]).drop(index=baseline, errors="ignore").mean()),
        })
        for a, c in pairs:
            point, reps = _pair_rate(t["score"], lb.replicates, a, c, baseline)
            lo, hi = percentile_interval(reps[:, None], ci) if len(reps) else (np.array([np.nan]),) * 2
            pair_rows.append({"bucket": b, "pair": f"{a}:{c}", "model_a": a, "model_b": c, "win_rate": 100 * point,
                              "lower": 100 * float(lo[0]), "upper": 100 * float(hi[0]), "n_prompts": len(qids)})
    return QualityReport(pd.DataFrame(pair_rows, columns=["bucket", "pair", "model_a", "model_b", "win_rate", "lower", "upper", "n_prompts"]),
                         pd.DataFrame(bucket_rows))


def _pair_rate(point: pd.Series, replicates: pd.DataFrame, a: str, b: str, baseline: str) -> tuple[float, np.ndarray]:
    """Win probability of a over b (fractions): direct against the baseline, else Bradley-Terry
    through it, in the point estimate and in every replicate."""
    for m in (a, b):
        if m not in point.index:
            raise InputError(f"model '{m}' has no judgments", field="--pairs")

    def rate(wa, wb):
        eps = 1e-6  # a model that won or lost every game: keep logit finite
        return expit(logit(np.clip(wa, eps, 1 - eps)) - logit(np.clip(wb, eps, 1 - eps)))

    def col(m):
        return np.full(len(replicates), 0.5) if m == baseline else replicates[m].to_numpy() / 100

    p = rate(point[a] / 100, point[b] / 100)
    return float(p), rate(col(a), col(b))


def read_quality_scores(path: Path) -> dict[str, float]:
    """``question_id`` (or ``uid``) -> ``score`` from a question.jsonl written by benchbuilder or
    any annotations JSONL; every record must carry a finite number in 0..7."""
    from arena.io.jsonl import read_jsonl

    out: dict[str, float] = {}
    for line, rec in read_jsonl(path):
        qid = rec.get("question_id", rec.get("uid"))
        if not isinstance(qid, (str, int)) or isinstance(qid, bool):
            raise InputError("missing question_id (or uid)", path=str(path), line=line, field="question_id")
        s = rec.get("score")
        if isinstance(s, dict):  # benchbuilder annotations may keep {"score": n, ...}
            s = s.get("score")
        if isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s) or not 0 <= s <= 7:
            raise InputError(f"score must be a number from 0 to 7, got {str(s)[:40]!r}", path=str(path), line=line, field="score")
        out[str(qid)] = float(s)
    if not out:
        raise InputError("no question with a score", path=str(path))
    return out
