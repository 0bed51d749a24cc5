"""Pairwise judging against a baseline, two games per prompt with positions swapped.

Game 1 puts the baseline in position A, game 2 puts the model in position A. The judge sees
the arena-hard system prompt and writes its own answer before its verdict. A judgment with no
verdict of its own (none, or several that disagree; see arena/verdicts.py) is re-asked once in a
short constrained turn; if there is still none the game is recorded as unparsed (or conflict).
Raw judgment text is kept. Output: ``model_judgment/<judge>/<model>.jsonl`` (arena-hard v0.1 schema, one record per prompt, appended as soon as both games are done).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Awaitable, Callable, Mapping, Sequence

from arena.errors import InputError
from arena.io.formats import Answer, Game, Judgment, Question, read_answer_file, read_judgment_file
from arena.io.jsonl import JsonlAppender, write_jsonl
from arena.provenance import endpoint_record, judgment_provenance, stale_reasons
from arena.llm.client import ChatRequest, LLMClient
from arena.llm.cost import DryRunEstimate
from arena.prompts import Template, load_template
from arena.judge_repeats import RepeatPlan, play_repeated
from arena.soft_verdicts import soft_extra
from arena.verdicts import parse_reask, parse_verdict

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
    stale: int = 0  # records whose answers, question, judge or template changed: judged again
    stale_reasons: Counter = field(default_factory=Counter)
    unknown_provenance: int = 0  # kept as they are (see arena/provenance.py)
    duplicates_removed: int = 0  # extra records for one prompt, left by a killed run

    def stale_note(self) -> str | None:
        if not self.stale:
            return None
        why = ", ".join(f"{r}" if n == self.stale else f"{r}: {n}" for r, n in self.stale_reasons.most_common())
        return f"{self.model}: re-judging {self.stale} stale judgments ({why})"


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
    """One game: the judgment, the judge's own verdict (``arena/verdicts.py``) and, when that is
    missing or conflicting, one short re-ask showing the judge its judgment (constrained by
    ``reask_params``: a json_schema ``response_format`` or a llama.cpp grammar).

    Status: ``ok`` (verdict in the judgment), ``reasked`` (verdict from the re-ask), ``unparsed``
    (still no label), ``conflict`` (still disagreeing labels), ``failed`` (an API call failed).
    ``judgment`` keeps the whole transcript (judgment, then re-ask reply); ``reask_reply``,
    ``first_status`` and ``labels`` say what happened. A reply that stays without a verdict is
    rejected in the cache: resumes reuse it, ``--retry-failed`` asks again."""
    user_prompt = req.messages[-1]["content"]
    res = await client.chat(req)
    if not res.ok:
        return Game(user_prompt, None, None, status="failed", extra={"error": res.error})
    text = res.text or ""
    verdict = parse_verdict(text, quoted)
    if verdict.ok:
        return Game(user_prompt, text, verdict.label, extra=soft_extra(text, verdict.label, res.payload))
    extra: dict = {"first_status": verdict.status}
    if verdict.labels:
        extra["labels"] = list(verdict.labels)
    if not reask:
        client.reject(res, f"judge verdict {verdict.status}")
        return Game(user_prompt, text, None, status=_unresolved(verdict.status), extra=extra)
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
    extra["reask_reply"] = res2.text or ""
    text = f"{text}\n\n{res2.text or ''}"
    second = parse_reask(res2.text, quoted)
    if second.ok:
        extra.update(soft_extra(res2.text, second.label, res2.payload))
        return Game(user_prompt, text, second.label, status="reasked", extra=extra)
    client.reject(res2, f"judge re-ask verdict {second.status}")
    return Game(user_prompt, text, None, status=_unresolved(second.status), extra=extra)


def _unresolved(verdict_status: str) -> str:
    return "conflict" if verdict_status == "conflict" else "unparsed"


def load_judge_answers(questions: Sequence[Question], answer_dir: Path, models: Sequence[str], baseline: str) -> dict[str, dict[str, Answer]]:
    """The baseline's and every model's answers; each file must exist and answer only known questions."""
    qids = {q.question_id for q in questions}
    out: dict[str, dict[str, Answer]] = {}
    for m in dict.fromkeys([baseline, *models]):
        path = answer_dir / f"{m}.jsonl"
        if not path.exists():
            who = f"the baseline '{m}'" if m == baseline else f"model '{m}'"
            raise InputError(f"no answers for {who} (expected this file)", path=str(path))
        out[m] = read_answer_file(path, model=m, question_ids=qids, torn_tail="skip")
    return out


def _existing(path: Path) -> tuple[list[Judgment], dict[str, Judgment]]:
    """Every record of a judgment file in file order, and the newest per question id.

    A torn last line (a kill mid-append) is left out; the appender cuts it before writing."""
    if not path.exists() or not path.stat().st_size:
        return [], {}
    records = read_judgment_file(path, torn_tail="skip")
    latest: dict[str, Judgment] = {}
    for j in records:
        latest[j.question_id] = j  # later lines are newer: the one duplicate policy
    return records, latest


def compact_judgments(path: Path, latest: Mapping[str, Judgment], order: Sequence[str]) -> int:
    """Rewrite ``path`` atomically with one record per prompt (question order, then any others)."""
    rank = {qid: i for i, qid in enumerate(order)}
    recs = sorted(latest.values(), key=lambda j: rank.get(j.question_id, len(rank)))
    return write_jsonl(path, (j.to_v01() for j in recs))


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
    repeat_plan: RepeatPlan | None = None,
    on_progress: Callable[[str, Judgment], None] | None = None,
    notice: Callable[[str], None] | None = None,
) -> list[JudgeReport]:
    """Judge each model against ``baseline`` on every question both have answered.

    Resume: a prompt with a record is skipped unless the record is stale (its provenance
    differs from what judging now would use) or, with ``retry_failed``, has a failed game.
    Duplicates left by a killed run are compacted away (atomically) before anything is
    appended, and the file is compacted again after re-judging, so each prompt keeps one
    record. ``notice`` receives one line per model about stale or duplicate records."""
    params = dict(params or {})
    if baseline not in answers:
        raise InputError(f"no answers for the baseline '{baseline}'", field="judge.baseline")
    judge_ep = endpoint_record(client.endpoint(judge), params)
    reask_version = tpl.reask.version if reask else None
    qorder = [q.question_id for q in questions]
    reports: list[JudgeReport] = []
    tasks = []
    writers: dict[str, JsonlAppender] = {}
    latest_by_model: dict[str, dict[str, Judgment]] = {}
    rewrite: set[str] = set()
    base_answers = answers[baseline]
    try:
        for m in models:
            path = out_dir / f"{m}.jsonl"
            records, latest = _existing(path)
            rep = JudgeReport(model=m, duplicates_removed=len(records) - len(latest))
            if rep.duplicates_removed:
                compact_judgments(path, latest, qorder)
                if notice:
                    notice(f"{m}: removed {rep.duplicates_removed} duplicate judgment records (one per prompt kept, the newest)")
            writers[m] = JsonlAppender(path)
            latest_by_model[m] = latest
            reports.append(rep)
            for q in questions:
                a, b = answers.get(m, {}).get(q.question_id), base_answers.get(q.question_id)
                prev = latest.get(q.question_id)
                prov = None
                if a is not None and b is not None:
                    prov = judgment_provenance(question=q, model_answer=a, baseline_answer=b, judge_endpoint=judge_ep,
                                               template_version=tpl.version, reask_version=reask_version)
                    if repeat_plan is not None and repeat_plan.active:
                        prov["repeat_plan"] = repeat_plan.version
                if prev is not None:
                    if prev.provenance is None:
                        rep.unknown_provenance += 1
                    why = stale_reasons(prev.provenance, prov) if prov is not None else []
                    if prov is not None and prev.provenance is not None and prev.provenance.get("repeat_plan") != prov.get("repeat_plan"):
                        why.append("repeats changed")  # judge.repeats / aggregate changed: judged again
                    # unparsed and conflicting games too: their rejected replies are asked again
                    failed = retry_failed and any(g.status in ("failed", "unparsed", "conflict") for g in prev.games)
                    if why:
                        rep.stale += 1
                        rep.stale_reasons.update(why)
                    elif not failed:
                        rep.done_before += 1
                        continue
                if prov is None:
                    rep.missing_answers += 1
                    continue
                if prev is not None:
                    rewrite.add(m)

                async def run(q: Question = q, a: Answer = a, b: Answer = b, m: str = m, rep: JudgeReport = rep, prov: dict = prov) -> None:
                    quoted = (q.prompt, a.text, b.text)
                    def play(r: ChatRequest) -> Awaitable[Game]:
                        return play_game(client, r, tpl, quoted, reask, reask_params)

                    # judge.repeats (arena/judge_repeats.py): each game asked N times, aggregated
                    g1, g2 = await asyncio.gather(*(play_repeated(play, r, repeat_plan or RepeatPlan()) for r in build_games(judge, tpl, q, b, a, params)))
                    j = Judgment(question_id=q.question_id, model=m, judge=judge, games=[g1, g2], baseline=baseline, category=q.category,
                                 provenance=prov, tstamp=time.time())
                    writers[m].append(j.to_v01())
                    latest_by_model[m][q.question_id] = j
                    rep.judged += 1
                    for g in (g1, g2):
                        rep.games += 1
                        rep.unparsed += g.status in ("unparsed", "conflict")
                        rep.failed += g.status == "failed"
                        rep.reasked += bool(g.extra.get("reasked"))
                    if on_progress:
                        on_progress(m, j)

                tasks.append(run())
            note = rep.stale_note()
            if note and notice:
                notice(note)
            if rep.unknown_provenance and notice:
                notice(f"{m}: kept {rep.unknown_provenance} judgments of unknown provenance (written before provenance was recorded, "
                       "or imported); delete them to re-judge")
        await asyncio.gather(*tasks)
    finally:
        for w in writers.values():
            w.close()
    # Re-judged prompts were appended after their old records; keep one record per prompt.
    for m in rewrite:
        compact_judgments(out_dir / f"{m}.jsonl", latest_by_model[m], qorder)
    return reports
