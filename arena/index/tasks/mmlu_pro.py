"""MMLU-Pro (TIGER-Lab): 10-option multiple choice; 1/6 of the Intelligence Index."""

from __future__ import annotations

import ast

from arena.index.datasets import EvalItem, get_field
from arena.index.tasks._choice import MultipleChoiceTask


class MMLUPro(MultipleChoiceTask):
    name = "mmlu_pro"
    default_repeats = 1
    indices = {"Intelligence Index": 1 / 6}
    hub = {"path": "TIGER-Lab/MMLU-Pro", "split": "test"}
    fallbacks = ("answer_is",)
    id_field = "question_id"

    def row_to_samples(self, row, where, spec, language):
        options = get_field(row, "options", where, (list, str))
        if isinstance(options, str):  # the harness's zip stores a Python-literal list (literal_eval runs no code)
            options = ast.literal_eval(options)
        return EvalItem(self.name, str(get_field(row, "question_id", where, (str, int))), get_field(row, "question", where, (str,)),
                        str(get_field(row, "answer", where, (str,))), tuple(str(o) for o in options), {"category": row.get("category", "")})


TASK = MMLUPro()
