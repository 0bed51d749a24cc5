"""Summaries of stored index records: per-eval scores, indices, HLE calibration and token bins.

Pure functions over the per-item records; ``arena index show`` prints them and never calls a model.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from arena.index.graders.hle import rms_calibration_error
from arena.index.indices import accuracy_by_log2_tokens, eval_estimate, index_estimates

SCORED = {"ok", "unanswered"}


def score_matrix(records: list[dict]) -> np.ndarray:
    """``S[item, repeat]``: 1/0 for scored answers (unanswered = 0), NaN for failures."""
    items = sorted({r["item_id"] for r in records})
    repeats = max((r["repeat"] for r in records), default=-1) + 1
    idx = {k: i for i, k in enumerate(items)}
    s = np.full((len(items), max(repeats, 1)), np.nan)
    for r in records:
        if r.get("status") in SCORED and r.get("correct") is not None:
            s[idx[r["item_id"]], r["repeat"]] = float(bool(r["correct"]))
    return s


def summarize(records_by_eval: dict[str, list[dict]], *, rng: np.random.Generator, rounds: int = 1000) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows, matrices = [], {}
    for name, recs in sorted(records_by_eval.items()):
        s = score_matrix(recs)
        matrices[name] = s
        est = _metric(name)(s, rng=rng, rounds=rounds)
        status = pd.Series([r.get("status") for r in recs]).value_counts().to_dict()
        rows.append({
            "eval": name, "score": est.value, "low": est.low, "high": est.high, "items": est.n_items,
            "records": len(recs), "unanswered": status.get("unanswered", 0),
            "failures": sum(v for k, v in status.items() if k not in SCORED),
            "output_tokens": int(sum(r.get("completion_tokens") or 0 for r in recs)),
            "reasoning_tokens": int(sum(r.get("reasoning_tokens") or 0 for r in recs)),
            "cost": float(sum(r.get("cost") or 0.0 for r in recs)),
        })
    return pd.DataFrame(rows), index_estimates(matrices, rng=rng, rounds=rounds)


def _metric(name: str):
    """The eval's own metric (its task's); records of an unregistered eval get the default."""
    from arena.index.tasks import REGISTRY, get_task

    return get_task(name).metric if name in REGISTRY else eval_estimate


def hle_details(records: list[dict]) -> tuple[float, pd.DataFrame]:
    """RMS calibration error (judge-extracted confidences) and accuracy by log2 output tokens."""
    judged = [r for r in records if r.get("method") == "hle_judge"]
    if not judged:
        return float("nan"), pd.DataFrame()
    conf = np.array([r.get("confidence", 100) for r in judged], dtype=float) / 100
    correct = np.array([bool(r["correct"]) for r in judged], dtype=float)
    toks = np.array([r.get("completion_tokens") or 0 for r in judged], dtype=float)
    return rms_calibration_error(conf, correct), accuracy_by_log2_tokens(correct, toks)
