"""Multilingual MMLU (openai/MMMLU): 4-option questions per language; half of the Multilingual Index."""

from __future__ import annotations

from arena.index.datasets import EvalItem, get_field
from arena.index.tasks._choice import MultipleChoiceTask
from arena.index.tasks.base import MULTILINGUAL_LANGUAGES, PerLanguage

# openai/MMMLU configs for the index's languages (English is the original MMLU test set).
MMMLU_CONFIGS = {"es": "ES_LA", "bn": "BN_BD", "de": "DE_DE", "ja": "JA_JP", "zh": "ZH_CN", "sw": "SW_KE", "fr": "FR_FR"}


class MMMLU(PerLanguage, MultipleChoiceTask):
    name = "mmmlu"
    default_repeats = 1
    indices = {"Multilingual Index": 1 / 2}
    hub = {"path": "openai/MMMLU", "split": "test"}
    fallbacks = ("multilingual_answer",)
    options = frozenset({"fallbacks", "languages"})
    default_languages = MULTILINGUAL_LANGUAGES
    languages_supported = ("en", *MMMLU_CONFIGS)
    id_field = "Unnamed: 0"

    def hub_config(self, language):
        return MMMLU_CONFIGS.get(language or "") if language != "en" else None

    def row_to_samples(self, row, where, spec, language):
        lang = language or "en"
        opts = tuple(str(get_field(row, k, where)) for k in "ABCD")
        return EvalItem(self.name, f"{lang}-{row.get('Unnamed: 0', where[1])}", get_field(row, "Question", where, (str,)),
                        str(get_field(row, "Answer", where)).strip(), opts, {"language": lang, "subject": row.get("Subject", "")})


TASK = MMMLU()
