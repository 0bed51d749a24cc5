"""Humanity's Last Exam grading: the structured-output judge and RMS calibration error.

The judge (template ``index_hle_judge``) returns ``extracted_final_answer``, ``reasoning``,
``correct`` ("yes"/"no") and ``confidence`` (0-100) as JSON enforced by a JSON schema, as in
the HLE reference ``run_judge_results.py``. Calibration error follows that repository's
``calib_err`` (from hendrycks/outlier-exposure): sort by stated confidence, cut into
consecutive bins of ``beta`` examples (the last bin absorbs the remainder), and take the
example-weighted RMS of |mean confidence - accuracy| over bins.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import numpy as np

JUDGE_SCHEMA: dict = {
    "type": "json_schema",
    "json_schema": {
        "name": "extracted_answer",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {
                "extracted_final_answer": {"type": "string"},
                "reasoning": {"type": "string"},
                "correct": {"type": "string", "enum": ["yes", "no"]},
                "confidence": {"type": "integer"},
            },
            "required": ["extracted_final_answer", "reasoning", "correct", "confidence"],
            "additionalProperties": False,
        },
    },
}


@dataclass(frozen=True)
class HLEJudgement:
    extracted_final_answer: str
    reasoning: str
    correct: bool
    confidence: int  # 0-100 as stated by the graded model (100 when it stated none)


def parse_judgement(text: str | None) -> HLEJudgement | None:
    """Parse the judge's reply: JSON first (structured output), else the plain
    ``field: value`` layout the prompt describes. ``None`` when the reply is unusable."""
    if not text:
        return None
    body = text.strip()
    fence = re.search(r"```(?:json)?\s*(\{.*?\})\s*```", body, re.S)
    if fence:
        body = fence.group(1)
    try:
        obj = json.loads(body)
    except json.JSONDecodeError:
        obj = None
    if isinstance(obj, dict) and "correct" in obj:
        correct = str(obj.get("correct", "")).strip().lower()
        if correct not in {"yes", "no"}:
            return None
        return HLEJudgement(
            extracted_final_answer=str(obj.get("extracted_final_answer", "None")),
            reasoning=str(obj.get("reasoning", "")),
            correct=correct == "yes",
            confidence=_clip_conf(obj.get("confidence", 100)),
        )
    fields = {}
    for key in ("extracted_final_answer", "reasoning", "correct", "confidence"):
        m = re.search(rf"(?im)^\**{key}\**\s*:\s*(.+)$", text)
        if m:
            fields[key] = m.group(1).strip()
    correct = fields.get("correct", "").lower().strip("*. ")
    if not correct.startswith(("yes", "no")):
        return None
    return HLEJudgement(
        extracted_final_answer=fields.get("extracted_final_answer", "None"),
        reasoning=fields.get("reasoning", ""),
        correct=correct.startswith("yes"),
        confidence=_clip_conf(fields.get("confidence", 100)),
    )


def _clip_conf(value: object) -> int:
    m = re.search(r"\d+(?:\.\d+)?", str(value))
    return int(min(100.0, max(0.0, float(m.group(0))))) if m else 100


def stated_confidence(response: str | None) -> int | None:
    """The ``Confidence: NN%`` line the HLE system prompt asks the graded model for."""
    if not response:
        return None
    found = re.findall(r"(?i)confidence\s*[:：]\s*\**\s*(\d{1,3}(?:\.\d+)?)\s*%?", response)
    return _clip_conf(found[-1]) if found else None


def rms_calibration_error(confidence: np.ndarray, correct: np.ndarray, *, beta: int = 100, skip_last_bin: bool = False) -> float:
    """RMS calibration error with adaptive bins of ``beta`` examples (HLE ``calib_err``, p=2).

    ``confidence`` in [0, 1], ``correct`` in {0, 1}. Examples are sorted by confidence
    (stable sort, so ties keep input order); bins are ``[i*beta, (i+1)*beta)`` and the last
    bin extends to the end. Returns ``sqrt(sum_b n_b/N * (mean_conf_b - acc_b)^2)``.

    The reference loop runs ``for i in range(len(bins) - 1)`` and so never visits the last
    bin; ``skip_last_bin=True`` reproduces that exactly for comparison with published
    numbers. With fewer than ``beta`` examples the reference crashes; here they form one bin.
    """
    conf = np.asarray(confidence, dtype=float)
    corr = np.asarray(correct, dtype=float)
    if conf.shape != corr.shape or conf.ndim != 1:
        raise ValueError("confidence and correct must be 1-D arrays of equal length")
    n = len(conf)
    if n == 0:
        return float("nan")
    if beta < 1:
        raise ValueError("beta must be >= 1")
    order = np.argsort(conf, kind="stable")
    conf, corr = conf[order], corr[order]
    n_bins = max(1, n // beta)
    edges = [i * beta for i in range(n_bins)] + [n]
    visit = n_bins - 1 if skip_last_bin else n_bins
    total = 0.0
    for b in range(visit):
        lo, hi = edges[b], edges[b + 1]
        diff = abs(np.nanmean(conf[lo:hi]) - np.nanmean(corr[lo:hi]))
        total += (hi - lo) / n * diff**2
    return float(np.sqrt(total))
