"""HumanEval (openai/human-eval, 164 problems): complete a function from its signature and
docstring; graded in the sandbox by the problem's own ``check`` (``grade_humaneval``).
Reported on its own: it is in no index (not weighted in the Intelligence Index)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from arena.errors import InputError
from arena.index.datasets import EvalItem, get_field
from arena.index.graders.code import extract_code, grade_humaneval
from arena.index.prompts import Prompt
from arena.index.tasks.base import EvalTask, GradeContext, Sample, Score
from arena.prompts import load_template

if TYPE_CHECKING:
    from arena.index.runner import EvalSpec


class HumanEval(EvalTask):
    name = "humaneval"
    default_repeats = 1
    indices = {}
    hub = {"path": "openai/openai_humaneval", "split": "test"}
    id_field = "task_id"

    def row_to_samples(self, row, where, spec, language):
        fields = {k: get_field(row, k, where) for k in ("task_id", "prompt", "test", "entry_point")}
        for k, v in fields.items():
            if not isinstance(v, str):
                raise InputError(f"expected a string, got {type(v).__name__}", path=where[0], line=where[1], field=k)
        return EvalItem(self.name, fields["task_id"], fields["prompt"], "",
                        meta={"prompt": fields["prompt"], "test": fields["test"], "entry_point": fields["entry_point"]})

    def prompt(self, sample: Sample, *, reasoning_model: bool, repeat: int, seed: int) -> Prompt:
        tpl = load_template("index_humaneval")
        return Prompt([{"role": "user", "content": tpl.format(prompt=sample.meta["prompt"].rstrip())}], tpl.version, "")

    async def score(self, sample: Sample, prompt: Prompt, text: str, spec: "EvalSpec", ctx: GradeContext) -> Score:
        code = extract_code(text)
        if code is None:
            return Score(False, None, "no_code", "unanswered")
        # The solution process runs the problem's prompt (its imports and helpers) and then the
        # answer, which may be the body alone or the whole function (a later def replaces it).
        # A blank line between them is valid in both cases.
        s = await ctx.run_code(lambda: grade_humaneval(ctx.sandbox, sample.meta["prompt"], "\n" + code, sample.meta["test"],
                                                       sample.meta["entry_point"], tag=sample.item_id))
        return Score(s.correct, code, s.method, s.status, s.extra)


TASK = HumanEval()
