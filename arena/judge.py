"""Pairwise judging against a baseline, two games per prompt with positions swapped.

Game 1 puts the baseline in position A, game 2 puts the model in position A. The judge sees
the arena-hard system prompt and writes its own answer before its verdict. A judgment with no
verdict is re-asked once with the follow-up turn; if there is still none the game is recorded as
unparsed. Raw judgment text is kept. Output: ``model_judgment/<judge>/<model>.jsonl`` (arena-hard
v0.1 schema, one record per prompt, appended as soon as both games are done).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

from arena.errors import InputError
from arena.io.formats import Answer, Game, Judgment, JsonlAppender, Question, read_answer_file, read_judgment_file, write_jsonl
from arena.llm.client import ChatRequest, LLMClient
from arena.llm.cost import DryRunEstimate
from arena.prompts import Template, load_template
from arena.verdicts import parse_verdict

STAGE = "judge"
REASK_STAGE = "judge-reask"


@dataclass(frozen=True)
class JudgeTemplates:
    system: Template
    pairwise: Template
    reask: Template

    @classmethod
    def load(cls, system: str, pairwise: str, reask: str) -> "JudgeTemplates":
        return cls(load_template(system), load_template(pairwise), load_template(reask))

    @property
    def version(self) -> str:
        return f"{self.system.version}:{self.pairwise.version}"


@dataclass
class JudgeReport:
    model: str
    done_before: int = 0
    judged: int = 0
    games: int = 0
    unparsed: int = 0
    failed: int = 0
    reasked: int = 0
    missing_answers: int = 0


def game_request(judge: str, tpl: JudgeTemplates, question: str, answer_a: str, answer_b: str, params: Mapping) -> ChatRequest:
    user = tpl.pairwise.format(question=question, answer_a=answer_a, answer_b=answer_b)
    return ChatRequest(
        endpoint=judge,
        messages=[{"role": "system", "content": tpl.system.text}, {"role": "user", "content": user}],
        params=dict(params),
        template_version=tpl.version,
        stage=STAGE,
    )


async def play_game(client: LLMClient, req: ChatRequest, tpl: JudgeTemplates, quoted: tuple[str, ...], reask: bool, reask_params: Mapping | None = None) -> Game:
    user_prompt = req.messages[-1]["content"]
    res = await client.chat(req)
    if not res.ok:
        return Game(user_prompt, None, None, status="failed", extra={"error": res.error})
    text = res.text or ""
    verdict = parse_verdict(text, quoted)
    extra: dict = {}
    if verdict.status == "missing" and reask:
        follow = ChatRequest(
            endpoint=req.endpoint,
            messages=[*req.messages, {"role": "assistant", "content": text}, {"role": "user", "content": tpl.reask.text}],
            params={**req.params, **(reask_params or {})},
            template_version=f"{tpl.version}:{tpl.reask.version}",
            stage=REASK_STAGE,
        )
        res2 = await client.chat(follow)
        extra["reasked"] = True
        if not res2.ok:
            return Game(user_prompt, text, None, status="failed", extra={**extra, "error": res2.error})
        text = f"{text}\n\n{res2.text}"
        verdict = parse_verdict(res2.text, quoted)
    status = "ok" if verdict.ok else ("unparsed" if verdict.status == "missing" else "conflict")
    if verdict.labels and not verdict.ok:
        extra["labels"] = list(verdict.labels)
    return Game(user_prompt, text, verdict.label, status=status, extra=extra)


def load_judge_answers(questions: Sequence[Question], answer_dir: Path, models: Sequence[str], baseline: str) -> dict[str, dict[str, Answer]]:
    """The baseline's and every model's answers; each file must exist and answer only known questions."""
    qids = {q.question_id for q in questions}
    out: dict[str, dict[str, Answer]] = {}
    for m in dict.fromkeys([baseline, *models]):
        path = answer_dir / f"{m}.jsonl"
        if not path.exists():
            who = f"the baseline '{m}'" if m == baseline else f"model '{m}'"
            raise InputError(f"no answers for {who} (expected this file)", path=str(path))
        out[m] = read_answer_file(path, model=m, question_ids=qids)
    return out


def _pending(path: Path, retry_failed: bool) -> tuple[dict[str, Judgment], set[str]]:
    """Existing records by question id, and the ids to (re)do."""
    existing: dict[str, Judgment] = {}
    if path.exists() and path.stat().st_size:
        for j in read_judgment_file(path):
            existing[j.question_id] = j  # last record wins
    redo = {qid for qid, j in existing.items() if retry_failed and any(g.status == "failed" for g in j.games)}
    return existing, redo


def build_games(judge: str, tpl: JudgeTemplates, q: Question, base: Answer, ans: Answer, params: Mapping) -> list[ChatRequest]:
    return [
        game_request(judge, tpl, q.prompt, base.text, ans.text, params),
        game_request(judge, tpl, q.prompt, ans.text, base.text, params),
    ]


def estimate_judging(client: LLMClient, judge: str, tpl: JudgeTemplates, questions: Sequence[Question], answers: Mapping[str, Mapping[str, Answer]], models: Sequence[str], baseline: str, params: Mapping, placeholder_tokens: int = 512) -> DryRunEstimate:
    """Calls and cost of judging; missing answers are stood in for by text of a typical length."""
    filler = "x" * (4 * placeholder_tokens)
    reqs = []
    for m in models:
        for q in questions:
            # Stand-ins differ per model and prompt so that distinct future calls stay distinct.
            a = answers.get(m, {}).get(q.question_id) or Answer(q.question_id, m, f"{m}/{q.question_id} {filler}")
            b = answers.get(baseline, {}).get(q.question_id) or Answer(q.question_id, baseline, f"{baseline}/{q.question_id} {filler}")
            reqs.extend(build_games(judge, tpl, q, b, a, params))
    return client.estimate(reqs)


async def judge_models(
    client: LLMClient,
    judge: str,
    tpl: JudgeTemplates,
    questions: Sequence[Question],
    answers: Mapping[str, Mapping[str, Answer]],
    models: Sequence[str],
    baseline: str,
    out_dir: Path,
    *,
    params: Mapping | None = None,
    reask: bool = True,
    reask_params: Mapping | None = None,
    retry_failed: bool = False,
    on_progress: Callable[[str, Judgment], None] | None = None,
) -> list[JudgeReport]:
    """Judge each model against ``baseline`` on every question both have answered."""
    params = dict(params or {})
    if baseline not in answers:
        raise InputError(f"no answers for the baseline '{baseline}'", field="judge.baseline")
    reports: list[JudgeReport] = []
    tasks = []
    writers: dict[str, JsonlAppender] = {}
    rewrite: dict[str, dict[str, Judgment]] = {}
    base_answers = answers[baseline]
    for m in models:
        path = out_dir / f"{m}.jsonl"
        writers[m] = JsonlAppender(path)
        existing, redo = _pending(path, retry_failed)
        if redo:
            rewrite[m] = existing
        rep = JudgeReport(model=m, done_before=len(existing) - len(redo))
        reports.append(rep)
        for q in questions:
            if q.question_id in existing and q.question_id not in redo:
                continue
            a, b = answers.get(m, {}).get(q.question_id), base_answers.get(q.question_id)
            if a is None or b is None:
                rep.missing_answers += 1
                continue

            async def run(q: Question = q, a: Answer = a, b: Answer = b, m: str = m, rep: JudgeReport = rep) -> None:
                quoted = (q.prompt, a.text, b.text)
                g1, g2 = await asyncio.gather(*(play_game(client, r, tpl, quoted, reask, reask_params) for r in build_games(judge, tpl, q, b, a, params)))
                j = Judgment(question_id=q.question_id, model=m, judge=judge, games=[g1, g2], baseline=baseline, category=q.category)
                writers[m].append(j.to_v01())
                if m in rewrite:
                    rewrite[m][q.question_id] = j
                rep.judged += 1
                for g in (g1, g2):
                    rep.games += 1
                    rep.unparsed += g.status in ("unparsed", "conflict")
                    rep.failed += g.status == "failed"
                    rep.reasked += bool(g.extra.get("reasked"))
                if on_progress:
                    on_progress(m, j)

            tasks.append(run())
    try:
        await asyncio.gather(*tasks)
    finally:
        for w in writers.values():
            w.close()
    # Re-judged prompts were appended; keep one record per prompt, in question order.
    order = {q.question_id: i for i, q in enumerate(questions)}
    for m, recs in rewrite.items():
        write_jsonl(out_dir / f"{m}.jsonl", (j.to_v01() for j in sorted(recs.values(), key=lambda j: order.get(j.question_id, 1 << 30))))
    return reports
