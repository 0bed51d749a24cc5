"""Bench: grading 12,032 real MMLU-Pro outputs (extraction + scoring) vs. the harness's method.

Reference method (same run): the MMLU-Pro harness's extraction (first "answer is", then
".*[aA]nswer:", in an equivalent linear form), re-implemented with ``re`` as in its ``evaluate_from_local.py``. Its third
stage (a lone letter, ``\b[A-J]\b(?!.*\b[A-J]\b)`` with DOTALL) is left out: it is quadratic
in the response length and took ~490 s on these outputs in a trial run. Target: ours <= 5 s.
Usage: python bench/index_mmlu_pro_grading.py
"""

from __future__ import annotations

import gzip
import json
import re
import time
from pathlib import Path

import numpy as np

from arena.index.graders.choice import ChoiceExtractor

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "index" / "mmlu_pro" / "llama31_8b_outputs.jsonl.gz"


def harness_extract(text: str) -> str | None:
    m = re.search(r"answer is \(?([A-J])\)?", text)
    if m:
        return m.group(1)
    # Linear form of the harness's ``re.search(r".*[aA]nswer:\s*([A-J])")`` (which backtracks
    # quadratically): the last match on the first line that has one.
    for line in text.split("\n"):
        found = re.findall(r"[aA]nswer:\s*([A-J])", line)
        if found:
            return found[-1]
    return None


def main() -> None:
    with gzip.open(DATA, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f.read().split("\n") if line]
    texts = [r["generated_text"] for r in rows]
    gold = np.array([r["answer"] for r in rows])

    t0 = time.perf_counter()
    ex = ChoiceExtractor(letters="ABCDEFGHIJ", fallbacks=("answer_is",))
    got = [ex.extract(t) for t in texts]
    pred = np.array([g.letter or "" for g in got])
    acc = float(np.mean(pred == gold))
    t_ours = time.perf_counter() - t0

    t0 = time.perf_counter()
    ref = np.array([harness_extract(t) or "" for t in texts])
    ref_acc = float(np.mean(ref == gold))
    t_ref = time.perf_counter() - t0

    answered = pred != ""
    harness_pred = np.array([r["pred"] for r in rows])
    print(f"outputs: {len(rows)}")
    print(f"ours:      {t_ours:.3f} s  answered {answered.sum()} ({answered.mean():.1%}), unanswered {(~answered).sum()}")
    print(f"           agreement with harness pred where answered: {np.mean(pred[answered] == harness_pred[answered]):.4%}")
    print(f"           accuracy (unanswered = wrong): {acc:.4f}; on answered only: {np.mean(pred[answered] == gold[answered]):.4f}")
    print(f"           harness recorded accuracy (random guess when unanswered): {np.mean(harness_pred == gold):.4f}")
    print(f"reference: {t_ref:.3f} s  harness chain re-run, accuracy {ref_acc:.4f}")
    print(f"ratio ours/reference: {t_ours / t_ref:.2f}x   target <= 5 s: {'OK' if t_ours <= 5 else 'MISSED'}")


if __name__ == "__main__":
    main()
