"""MGSM (juletxara/mgsm; the published per-language TSVs): grade-school math per language,
numeric answer after the language's "Answer:"; half of the Multilingual Index."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from arena.errors import InputError
from arena.index.datasets import EvalItem, get_field, read_mgsm_tsv
from arena.index.graders.mgsm import ANSWER_PREFIX, extract_number, score_number
from arena.index.prompts import Prompt
from arena.index.tasks.base import MULTILINGUAL_LANGUAGES, EvalTask, GradeContext, PerLanguage, Sample, Score
from arena.prompts import load_template

if TYPE_CHECKING:
    from arena.index.runner import EvalSpec


class MGSM(PerLanguage, EvalTask):
    name = "mgsm"
    default_repeats = 1
    indices = {"Multilingual Index": 1 / 2}
    hub = {"path": "juletxara/mgsm", "split": "test"}
    options = frozenset({"languages"})
    default_languages = MULTILINGUAL_LANGUAGES
    languages_supported = tuple(ANSWER_PREFIX)

    def hub_config(self, language):
        return language or "en"

    def rows(self, source, *, language, trust_remote_code):
        path = Path(source)
        if path.is_file() and path.name.removesuffix(".gz").endswith(".tsv"):
            return read_mgsm_tsv(path), str(path)
        return super().rows(source, language=language, trust_remote_code=trust_remote_code)

    def load_source(self, spec, source, language, *, trust_remote_code=False):
        if language is None:  # a single file named like the published mgsm_<lang>.tsv
            language = Path(source).stem.split("_")[-1] if source and Path(source).is_file() else "en"
        return super().load_source(spec, source, language, trust_remote_code=trust_remote_code)

    def row_to_samples(self, row, where, spec, language):
        answer = row.get("answer_number", row.get("answer"))
        if answer is None:
            raise InputError("missing field", path=where[0], line=where[1], field="answer_number")
        if isinstance(answer, float) and answer.is_integer():
            answer = int(answer)
        return EvalItem(self.name, f"{language}-{where[1]}", get_field(row, "question", where, (str,)), str(answer), meta={"language": language})

    def prompt(self, sample: Sample, *, reasoning_model: bool, repeat: int, seed: int) -> Prompt:
        tpl = load_template(f"index_mgsm_{sample.meta['language']}")
        return Prompt([{"role": "user", "content": tpl.format(input=sample.question)}], tpl.version, sample.answer,
                      {"language": sample.meta["language"]})

    async def score(self, sample: Sample, prompt: Prompt, text: str, spec: "EvalSpec", ctx: GradeContext) -> Score:
        pred = extract_number(text, sample.meta["language"])
        return Score(score_number(sample.answer, pred), pred, "number" if pred else "unanswered", "ok" if pred else "unanswered")


TASK = MGSM()
