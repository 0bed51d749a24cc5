"""GPQA Diamond: 4-option graduate science questions, options shuffled per repeat (seeded);
1/6 of the Intelligence Index."""

from __future__ import annotations

from arena.index.datasets import EvalItem, get_field
from arena.index.prompts import Prompt, gpqa_permutation, multiple_choice
from arena.index.tasks._choice import MultipleChoiceTask
from arena.index.tasks.base import Sample


class GPQADiamond(MultipleChoiceTask):
    name = "gpqa_diamond"
    default_repeats = 5
    indices = {"Intelligence Index": 1 / 6}
    hub = {"path": "Idavidrein/gpqa", "name": "gpqa_diamond", "split": "train"}
    fallbacks = ("answer_is_loose",)
    id_field = "Record ID"

    def row_to_samples(self, row, where, spec, language):
        correct = str(get_field(row, "Correct Answer", where, (str,))).strip()
        wrong = [str(get_field(row, f"Incorrect Answer {k}", where, (str,))).strip() for k in (1, 2, 3)]
        item_id = str(row.get("Record ID") or row.get("id") or where[1])
        # Unshuffled options with the correct one first; prompts shuffle them per repeat.
        return EvalItem(self.name, item_id, str(get_field(row, "Question", where, (str,))).strip(), "A", (correct, *wrong),
                        {"domain": row.get("High-level domain", "")})

    def prompt(self, sample: Sample, *, reasoning_model: bool, repeat: int, seed: int) -> Prompt:
        return multiple_choice(sample, reasoning_model=reasoning_model, order=gpqa_permutation(sample.item_id, repeat, seed))


TASK = GPQADiamond()
