"""Shared scorer of the math tasks (MATH-500, AIME): script stage off the event loop, then
the LLM equality checker for what the script could not prove."""

from __future__ import annotations

from typing import TYPE_CHECKING

from arena.index.datasets import EvalItem, get_field
from arena.index.graders.math import parse_equality_reply
from arena.index.prompts import Prompt
from arena.index.tasks.base import EvalTask, GradeContext, Sample, Score
from arena.llm import ChatRequest
from arena.prompts import load_template

if TYPE_CHECKING:
    from arena.index.runner import EvalSpec


class MathTask(EvalTask):
    hub_id_fields = ("unique_id", "id", "idx")
    id_field = "unique_id"

    def row_to_samples(self, row, where, spec, language):
        item_id = str(next((row[k] for k in self.hub_id_fields if row.get(k)), where[1]))
        answer = get_field(row, "answer", where, (str, int, float))
        if isinstance(answer, float) and answer.is_integer():
            answer = int(answer)
        return EvalItem(self.name, item_id, get_field(row, "problem", where, (str,)), str(answer),
                        meta={k: row[k] for k in ("subject", "level") if k in row})

    def prompt(self, sample: Sample, *, reasoning_model: bool, repeat: int, seed: int) -> Prompt:
        tpl = load_template("index_math")
        return Prompt([{"role": "user", "content": tpl.format(problem=sample.question)}], tpl.version, sample.answer)

    async def score(self, sample: Sample, prompt: Prompt, text: str, spec: "EvalSpec", ctx: GradeContext) -> Score:
        v = await ctx.math.grade(text, sample.answer)
        score = Score(v.correct, v.extracted, v.method, "ok" if v.extracted is not None else "unanswered")
        if v.correct or v.extracted is None:
            return score
        if not ctx.judge:
            # A timeout proved nothing either way, and there is nobody else to ask.
            return Score(None, v.extracted, v.method, "grading_failure") if v.method == "timeout" else score
        tpl = load_template("index_math_equality")
        req = ChatRequest(ctx.judge, [{"role": "user", "content": tpl.format(expression1=sample.answer, expression2=v.extracted)}],
                          params={"temperature": 0}, template_version=tpl.version, stage="index:equality")
        res = await ctx.client.chat(req)
        checker = {"equality_checker": {"ok": res.ok, "reply": res.text, "error": res.error}}
        verdict = parse_equality_reply(res.text) if res.ok else None
        if verdict is None:
            if res.ok:  # arrived but unusable: --retry-failed must re-ask it, not serve it from the cache
                ctx.client.reject(res, "equality checker reply is neither Yes nor No")
            # Unknown, not wrong: the rule-based "no" may be overturned by the checker.
            return Score(None, v.extracted, v.method, "checker_failure", checker)
        if verdict:
            return Score(True, v.extracted, "llm_equality", "ok", checker)
        return Score(False, v.extracted, v.method, score.status, checker)
