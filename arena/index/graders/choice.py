"""Multiple-choice answer extraction: the methodology regex, then a configurable fallback chain.

Every pattern is applied to the whole response and its LAST match counts (models often
restate options before concluding). A response that no pattern matches is *unanswered*:
it is scored wrong and counted separately, never replaced by a random guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# The Artificial Analysis methodology's answer regex (tolerates markdown bold/italics).
METHODOLOGY_PATTERN = r"(?i)[\*\_]{0,2}Answer[\*\_]{0,2}\s*:[\s\*\_]{0,2}\s*([A-Z])(?![a-zA-Z0-9])"

# Named fallbacks a config may list after the methodology pattern.
FALLBACK_PATTERNS: dict[str, str] = {
    # The MMLU-Pro harness's chain-of-thought format: "The answer is (C)."
    "answer_is": r"answer is \(?([A-J])\)?",
    # Looser variant: "the correct answer is: **C**", "answer is C".
    "answer_is_loose": r"(?i)answer is\s*:?\s*[\*\_]{0,2}\(?([A-Z])\)?(?![a-zA-Z0-9])",
    # "Answer:" in the languages of Multilingual MMLU (after openai/simple-evals' list).
    "multilingual_answer": r"(?i)(?:Answer|Antwort|Respuesta|Réponse|Jibu|উত্তর|উত্তরঃ|答案|答え|回答|解答|答)\s*[:：]?\s*[\*\_]{0,2}\(?([A-D])(?![a-zA-Z0-9])",
    # A final bare "(C)" or "C)" on the last line.
    "last_line_letter": r"(?m)^\s*\(?([A-Z])\)\s*$",
}


@dataclass(frozen=True)
class Extraction:
    letter: str | None
    rule: str | None  # name of the pattern that matched; None when unanswered

    @property
    def answered(self) -> bool:
        return self.letter is not None


@dataclass(frozen=True)
class ChoiceExtractor:
    """``extract(text)`` -> the last valid letter of the first pattern in the chain that matches.

    ``fallbacks`` are names from :data:`FALLBACK_PATTERNS` or raw regexes (group 1 = letter).
    ``letters`` bounds the valid options (e.g. "ABCD" for GPQA, "ABCDEFGHIJ" for MMLU-Pro);
    matches outside it are ignored rather than scored.
    """

    letters: str = "ABCDEFGHIJ"
    fallbacks: tuple[str, ...] = ()
    primary: str = METHODOLOGY_PATTERN
    _compiled: tuple[tuple[str, re.Pattern], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        chain = [("methodology", re.compile(self.primary))]
        for fb in self.fallbacks:
            chain.append((fb, re.compile(FALLBACK_PATTERNS.get(fb, fb))))
        object.__setattr__(self, "_compiled", tuple(chain))

    def extract(self, text: str | None) -> Extraction:
        if not text:
            return Extraction(None, None)
        valid = self.letters
        for name, rx in self._compiled:
            found = [(m[0] if isinstance(m, tuple) else m).upper() for m in rx.findall(text)]
            found = [m for m in found if m in valid]
            if found:
                return Extraction(found[-1], name)
        return Extraction(None, None)


def letters_for(n_options: int) -> str:
    return "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:n_options]
