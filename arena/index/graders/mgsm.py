"""MGSM numeric answers: the number after the language's "Answer:" prefix (openai/simple-evals)."""

from __future__ import annotations

import re

ANSWER_PREFIX = {
    "en": "Answer", "bn": "উত্তর", "de": "Antwort", "es": "Respuesta", "fr": "Réponse", "ja": "答え",
    "ru": "Ответ", "sw": "Jibu", "te": "సమాధానం", "th": "คำตอบ", "zh": "答案",
}


def extract_number(response: str | None, language: str) -> str | None:
    """Last number after the last answer prefix; ``None`` when the prefix or a number is absent."""
    prefix = ANSWER_PREFIX[language]
    if not response or prefix not in response:
        return None
    tail = response.split(prefix)[-1].strip()
    numbers = re.findall(r"\d+\.?\d*", tail.replace(",", ""))
    return numbers[-1].rstrip(".") if numbers else None


def score_number(gold: str, pred: str | None) -> bool:
    if pred is None:
        return False
    if "." in pred:
        pred = pred.rstrip("0").rstrip(".")
    return gold.replace(",", "") == pred.replace(",", "")
