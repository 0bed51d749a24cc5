"""SciCode: multi-step scientific coding, each sub-step graded in the sandbox against its
targets; 1/8 of the Intelligence Index and half of the Coding Index.

Config key ``targets``: a JSON file ``{step_number: [python literal, ...]}`` (the official
targets live in SciCode's ``test_data.h5``); steps without targets are recorded ``no_targets``.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import TYPE_CHECKING

from arena.index.datasets import EvalItem, get_field
from arena.index.graders.code import SciCodeStepCheck, extract_code, grade_scicode
from arena.index.prompts import Prompt
from arena.index.tasks.base import EvalTask, GradeContext, Planned, Sample, Score
from arena.io.configfile import read_json
from arena.prompts import load_template

if TYPE_CHECKING:
    from arena.index.runner import EvalSpec


class SciCode(EvalTask):
    name = "scicode"
    default_repeats = 3
    indices = {"Intelligence Index": 1 / 8, "Coding Index": 1 / 2}
    hub = {"path": "SciCode1/SciCode", "split": "test"}
    options = frozenset({"targets"})
    id_field = "step_number"

    def load(self, spec: "EvalSpec", *, trust_remote_code: bool = False) -> list[Sample]:
        if spec.targets_data is None and spec.targets:
            spec = replace(spec, targets_data=read_json(spec.targets))
        return self.load_source(spec, spec.source, None, trust_remote_code=trust_remote_code)

    def row_to_samples(self, row, where, spec, language):
        steps = get_field(row, "sub_steps", where, (list,))
        targets = spec.targets_data
        out = []
        for k, step in enumerate(steps):
            num = str(get_field(step, "step_number", where))
            out.append(EvalItem(self.name, num, step.get("step_description_prompt", ""), "", meta={
                "problem_id": str(row.get("problem_id")), "step_index": k, "dependencies": row.get("required_dependencies", ""),
                "steps": steps, "test_cases": list(step.get("test_cases", [])),
                "targets": None if targets is None else targets.get(num),
            }))
        return out

    def prompt(self, sample: Sample, *, reasoning_model: bool, repeat: int, seed: int) -> Prompt:
        """Multistep prompt with the scientist-annotated background in every step; previous
        steps are shown with their reference code (gold previous steps)."""
        tpl = load_template("index_scicode")
        steps, k = sample.meta["steps"], sample.meta["step_index"]

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
        text = tpl.format(problem_steps_str="\n\n---\n\n".join(prev), next_step_str=nxt, dependencies=sample.meta.get("dependencies", ""))
        return Prompt([{"role": "user", "content": text}], tpl.version, "", {"prior_code": "\n\n".join(
            (s.get("ground_truth_code") or "") for s in steps[:k])})

    async def run(self, planned, ask, record, spec, ctx, existing, emit) -> None:
        """Steps of one (problem, repeat) are graded in step order: where the gold code of
        earlier steps is not published, the model's own earlier steps (from this run or from
        records of an earlier one) are run before the step under test."""
        chains: dict[tuple[str, int], list[Planned]] = {}
        for entry in planned:
            chains.setdefault((entry[0].meta["problem_id"], entry[1]), []).append(entry)

        async def chain(entries: list[Planned]) -> None:
            entries = sorted(entries, key=lambda e: e[0].meta["step_index"])
            results = await asyncio.gather(*(ask(e[3]) for e in entries))
            item0, r = entries[0][0], entries[0][1]
            own: dict[int, str] = {}
            for k, step in enumerate(item0.meta["steps"]):
                prev = existing.get((str(step.get("step_number")), r))
                if prev and prev.get("extracted"):
                    own[k] = prev["extracted"]
            for (item, _, p, _), res in zip(entries, results):
                rec = record(item, r, p, res)
                if res.ok:
                    rec.update((await self._score_step(item, p, res.text, own, ctx)).as_record())
                emit(rec)

        await asyncio.gather(*(chain(c) for c in chains.values()))

    async def _score_step(self, item: Sample, p: Prompt, text: str, own: dict[int, str], ctx: GradeContext) -> Score:
        k = item.meta["step_index"]
        code = extract_code(text)
        if code is None:
            return Score(False, None, "no_code", "unanswered")
        own[k] = code
        prior = p.context.get("prior_code") or "\n\n".join(own.get(j, "") for j in range(k))
        check = SciCodeStepCheck(item.item_id, item.meta["dependencies"], prior, tuple(item.meta["test_cases"]),
                                 None if item.meta["targets"] is None else tuple(item.meta["targets"]))
        if check.targets is None or len(check.targets) != len(check.test_cases):
            return Score(None, code, "no_targets", "no_targets")
        s = await ctx.run_code(lambda: grade_scicode(ctx.sandbox, check, code, tag=item.item_id))
        return Score(s.correct, code, s.method, s.status, s.extra)

    async def score(self, sample, prompt, text, spec, ctx) -> Score:  # graded in chains by run()
        raise NotImplementedError


TASK = SciCode()
