"""Shared scorer of the multiple-choice tasks (MMLU-Pro, GPQA Diamond, MMMLU)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from arena.index.graders.choice import ChoiceExtractor
from arena.index.prompts import Prompt, multiple_choice
from arena.index.tasks.base import EvalTask, GradeContext, Sample, Score

if TYPE_CHECKING:
    from arena.index.runner import EvalSpec


class MultipleChoiceTask(EvalTask):
    """Zero-shot methodology prompt; the methodology regex, then this eval's fallback chain."""

    fallbacks: ClassVar[tuple[str, ...]] = ()
    options = frozenset({"fallbacks"})

    def prompt(self, sample: Sample, *, reasoning_model: bool, repeat: int, seed: int) -> Prompt:
        return multiple_choice(sample, reasoning_model=reasoning_model)

    async def score(self, sample: Sample, prompt: Prompt, text: str, spec: "EvalSpec", ctx: GradeContext) -> Score:
        fb = spec.fallbacks if spec.fallbacks is not None else self.fallbacks
        ex = ChoiceExtractor(letters="".join(prompt.context["letters"]), fallbacks=fb).extract(text)
        return Score(ex.letter == prompt.gold, ex.letter, ex.rule or "unanswered", "ok" if ex.answered else "unanswered")
