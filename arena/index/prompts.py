"""Turn an :class:`EvalItem` into chat messages with the methodology templates.

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


def _version(*templates: Template) -> str:
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
    return Prompt([{"role": "user", "content": text}], _version(tpl, cot), letters[gold_index], {"letters": letters})


def math_prompt(item: EvalItem) -> Prompt:
    tpl = load_template("index_math")
    return Prompt([{"role": "user", "content": tpl.format(problem=item.question)}], tpl.version, item.answer)


def mgsm_prompt(item: EvalItem) -> Prompt:
    tpl = load_template(f"index_mgsm_{item.meta['language']}")
    return Prompt([{"role": "user", "content": tpl.format(input=item.question)}], tpl.version, item.answer,
                  {"language": item.meta["language"]})


def hle_prompt(item: EvalItem) -> Prompt:
    name = "index_hle_system_mc" if item.meta["answer_type"] == "multipleChoice" else "index_hle_system_exact"
    tpl = load_template(name)
    return Prompt([{"role": "system", "content": tpl.format()}, {"role": "user", "content": item.question}], tpl.version, item.answer)


def livecodebench_prompt(item: EvalItem) -> Prompt:
    system = load_template("index_lcb_system")
    starter = item.meta.get("starter_code") or ""
    if starter:
        tpl = load_template("index_lcb_starter")
        user = tpl.format(question=item.question, starter_code=starter)
    else:
        tpl = load_template("index_lcb_stdin")
        user = tpl.format(question=item.question)
    return Prompt([{"role": "system", "content": system.text}, {"role": "user", "content": user}], _version(system, tpl), "")


def scicode_prompt(item: EvalItem) -> Prompt:
    """SciCode multistep prompt with the scientist-annotated background in every step;
    previous steps are shown with their reference code (gold previous steps)."""
    tpl = load_template("index_scicode")
    steps, k = item.meta["steps"], item.meta["step_index"]

    def describe(step: dict) -> str:
        text = step.get("step_description_prompt", "")
        if step.get("step_background"):
            text += "\n" + step["step_background"]
        return text

    prev = []
    for step in steps[:k]:
        code = step.get("ground_truth_code") or step.get("function_header", "") + "\n" + step.get("return_line", "")
        prev.append(describe(step) + "\n\n" + code)
    nxt = describe(steps[k]) + "\n\n" + steps[k].get("function_header", "") + "\n\n" + steps[k].get("return_line", "")
    text = tpl.format(problem_steps_str="\n\n---\n\n".join(prev), next_step_str=nxt, dependencies=item.meta.get("dependencies", ""))
    return Prompt([{"role": "user", "content": text}], tpl.version, "", {"prior_code": "\n\n".join(
        (s.get("ground_truth_code") or "") for s in steps[:k])})


def build_prompt(item: EvalItem, *, reasoning_model: bool = False, repeat: int = 0, seed: int = 0) -> Prompt:
    if item.eval in ("mmlu_pro", "mmmlu"):
        return multiple_choice(item, reasoning_model=reasoning_model)
    if item.eval == "gpqa_diamond":
        return multiple_choice(item, reasoning_model=reasoning_model, order=gpqa_permutation(item.item_id, repeat, seed))
    if item.eval in ("math500", "aime2024"):
        return math_prompt(item)
    if item.eval == "mgsm":
        return mgsm_prompt(item)
    if item.eval == "hle":
        return hle_prompt(item)
    if item.eval == "livecodebench":
        return livecodebench_prompt(item)
    if item.eval == "scicode":
        return scicode_prompt(item)
    raise ValueError(f"no prompt for eval {item.eval!r}")
