"""Humanity's Last Exam (cais/hle), text-only subset: graded by the structured-output judge;
1/6 of the Intelligence Index. Reports RMS calibration error and accuracy by output tokens."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from arena.errors import InputError
from arena.index.datasets import EvalItem, get_field
from arena.index.graders.hle import JUDGE_SCHEMA, parse_judgement, stated_confidence
from arena.index.prompts import Prompt
from arena.index.tasks.base import EvalTask, GradeContext, Sample, Score
from arena.llm import ChatRequest
from arena.prompts import load_template

if TYPE_CHECKING:
    from arena.index.runner import EvalSpec


class HLE(EvalTask):
    name = "hle"
    default_repeats = 1
    indices = {"Intelligence Index": 1 / 6}
    hub = {"path": "cais/hle", "split": "test"}

    def row_to_samples(self, row, where, spec, language):
        if row.get("image"):  # the index uses the text-only subset
            return None
        kind = get_field(row, "answer_type", where)
        if kind not in ("exactMatch", "multipleChoice"):
            raise InputError(f"unknown answer_type {kind!r}", path=where[0], line=where[1], field="answer_type")
        return EvalItem(self.name, str(get_field(row, "id", where, (str, int))), get_field(row, "question", where, (str,)), str(get_field(row, "answer", where, (str,))),
                        meta={"answer_type": kind, "category": row.get("category", "")})

    def prompt(self, sample: Sample, *, reasoning_model: bool, repeat: int, seed: int) -> Prompt:
        name = "index_hle_system_mc" if sample.meta["answer_type"] == "multipleChoice" else "index_hle_system_exact"
        tpl = load_template(name)
        return Prompt([{"role": "system", "content": tpl.format()}, {"role": "user", "content": sample.question}], tpl.version, sample.answer)

    async def score(self, sample: Sample, prompt: Prompt, text: str, spec: "EvalSpec", ctx: GradeContext) -> Score:
        stated = {"stated_confidence": stated_confidence(text)}
        if not ctx.judge:
            return Score(None, status="not_judged", extra=stated)
        tpl = load_template("index_hle_judge")
        req = ChatRequest(ctx.judge, [{"role": "user", "content": tpl.format(
            question=sample.question, response=text, correct_answer=sample.answer)}],
            params={"response_format": JUDGE_SCHEMA, "temperature": 0}, template_version=tpl.version, stage="index:hle_judge")
        res = await ctx.client.chat(req)
        j = parse_judgement(res.text) if res.ok else None
        if j is None:
            if res.ok:  # arrived but unusable: --retry-failed must re-ask it, not serve it from the cache
                ctx.client.reject(res, "HLE judge reply has no yes/no verdict")
            return Score(None, status="judge_failure", extra={**stated, "judge": {"ok": res.ok, "reply": res.text, "error": res.error}})
        return Score(j.correct, j.extracted_final_answer, "hle_judge", "ok",
                     {**stated, "confidence": j.confidence, "judge": {"reasoning": j.reasoning}})

    def details(self, records: list[dict]) -> Iterator[str]:
        from arena.index.report import hle_details

        cerr, bins = hle_details(records)
        yield f"HLE RMS calibration error: {'—' if cerr != cerr else f'{100 * cerr:.1f}'}%"
        if not bins.empty:
            yield bins.to_string(index=False)


TASK = HLE()
