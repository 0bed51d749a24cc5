"""Prompt records and the prompt builders shared by several index tasks (multiple choice).

Returns a :class:`Prompt` with the messages, the combined template version (content hash of
every template used, for the cache key) and what the grader needs (e.g. the gold letter
after GPQA's per-repeat shuffle).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from arena.index.datasets import EvalItem
from arena.index.graders.choice import letters_for
from arena.prompts import Template, load_template


@dataclass(frozen=True)
class Prompt:
    messages: list[dict]
    template_version: str
    gold: str
    context: dict = field(default_factory=dict)


def combined_version(*templates: Template) -> str:
    return hashlib.sha256("|".join(t.version for t in templates).encode()).hexdigest()[:16]


def gpqa_permutation(item_id: str, repeat: int, seed: int) -> np.ndarray:
    """Seeded option order for one (item, repeat): a Generator keyed by seed, item and repeat."""
    key = int.from_bytes(hashlib.sha256(f"{seed}:{item_id}:{repeat}".encode()).digest()[:8], "big")
    return np.random.default_rng(key).permutation(4)


def multiple_choice(item: EvalItem, *, reasoning_model: bool = False, order: np.ndarray | None = None) -> Prompt:
    """The methodology's zero-shot prompt; non-reasoning models also get "Think step by step
    before answering." after the instruction, as the Intelligence Index method specifies."""
    tpl, cot = load_template("index_mc"), load_template("index_mc_cot")
    options = list(item.options)
    gold_index = "ABCDEFGHIJKLMNOPQRSTUVWXYZ".index(item.answer)
    if order is not None:
        options = [options[i] for i in order]
        gold_index = int(np.flatnonzero(order == gold_index)[0])
    letters = letters_for(len(options))
    text = tpl.format(
        letters="/".join(letters),
        reasoning_instruction="" if reasoning_model else cot.text,
        question=item.question,
        options="\n".join(f"{letters[i]}) {o}" for i, o in enumerate(options)),
    )
    return Prompt([{"role": "user", "content": text}], combined_version(tpl, cot), letters[gold_index], {"letters": letters})


def build_prompt(item: EvalItem, *, reasoning_model: bool = False, repeat: int = 0, seed: int = 0) -> Prompt:
    """The prompt of ``item``'s eval (its task in ``arena.index.tasks``)."""
    from arena.index.tasks import get_task

    return get_task(item.eval).prompt(item, reasoning_model=reasoning_model, repeat=repeat, seed=seed)
