"""AIME 2024 (HuggingFaceH4/aime_2024): integer answers, 10 repeats; 1/8 of the Intelligence
Index and half of the Math Index."""

from __future__ import annotations

from arena.index.tasks._math import MathTask


class AIME2024(MathTask):
    name = "aime2024"
    default_repeats = 10
    indices = {"Intelligence Index": 1 / 8, "Math Index": 1 / 2}
    hub = {"path": "HuggingFaceH4/aime_2024", "split": "train"}
    id_field = "id"


TASK = AIME2024()
