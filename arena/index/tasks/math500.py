"""MATH-500 (HuggingFaceH4): boxed answers, symbolic equivalence; 1/8 of the Intelligence
Index and half of the Math Index."""

from __future__ import annotations

from arena.index.tasks._math import MathTask


class Math500(MathTask):
    name = "math500"
    default_repeats = 3
    indices = {"Intelligence Index": 1 / 8, "Math Index": 1 / 2}
    hub = {"path": "HuggingFaceH4/MATH-500", "split": "test"}


TASK = Math500()
