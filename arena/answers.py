"""Generate model answers: ``model_answer/<model>.jsonl`` in arena-hard v0.1 schema.

Resumable: questions already answered in the output file are skipped, every call goes through
the shared cache, and each answer is appended the moment it is complete. Multi-turn questions
are answered turn by turn, each turn seeing the model's earlier answers.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

from arena.io.formats import Answer, Question, read_answer_file
from arena.io.jsonl import JsonlAppender
from arena.llm.client import ChatRequest, ChatResult, LLMClient
from arena.llm.cost import DryRunEstimate
from arena.stats.markdown_stats import answer_metadata
from arena.prompts import Template
from arena.provenance import endpoint_identity, endpoint_record

STAGE = "answers"


@dataclass
class AnswerReport:
    model: str
    done_before: int = 0
    written: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)
    other_settings: int = 0  # kept answers made with another endpoint, params or system prompt

    def settings_note(self) -> str | None:
        if not self.other_settings:
            return None
        return (f"{self.model}: {self.other_settings} kept answers were made with other settings (endpoint, params or system prompt); "
                f"delete them to regenerate (their judgments are re-judged automatically when answers change)")


def turn_request(model: str, question: Question, history: list[dict], system: Template | None, params: dict) -> ChatRequest:
    """The request for the next turn, given the conversation so far (user turns and answers)."""
    return ChatRequest(
        endpoint=model,
        messages=([{"role": "system", "content": system.text}] if system else []) + list(history),
        params=params,
        template_version=system.version if system else "",
        stage=STAGE,
        meta={"question_id": question.question_id},
    )


async def _answer_one(client: LLMClient, model: str, q: Question, system: Template | None, params: dict) -> tuple[list[ChatResult], list[str]]:
    history: list[dict] = []
    results: list[ChatResult] = []
    texts: list[str] = []
    for turn in q.turns:
        history.append({"role": "user", "content": turn})
        res = await client.chat(turn_request(model, q, history, system, params))
        results.append(res)
        if not res.ok:
            break
        texts.append(res.text or "")
        history.append({"role": "assistant", "content": res.text})
    return results, texts


def answer_provenance(client: LLMClient, model: str, system: Template | None, params: dict) -> dict:
    """What made these answers: the endpoint (model, base_url, effective params; no key) and
    the system prompt's version. Judgments hash the answer text itself, so a regenerated
    answer is noticed even where this is missing."""
    return {"endpoint": endpoint_record(client.endpoint(model), params), "template_version": system.version if system else ""}


def answer_record(model: str, q: Question, results: list[ChatResult], texts: list[str], provenance: dict | None = None) -> dict:
    turns = []
    for res, text in zip(results, texts):
        turns.append({"content": text, "token_len": res.completion_tokens or answer_metadata(text, None)["token_len"]})
    last = texts[-1]
    meta = answer_metadata(last, turns[-1]["token_len"])
    meta["token_len"] = sum(t["token_len"] for t in turns)
    return {
        "question_id": q.question_id,
        "answer_id": uuid.uuid5(uuid.NAMESPACE_URL, results[-1].key).hex,
        "model_id": model,
        "choices": [{"index": 0, "turns": turns}],
        "tstamp": time.time(),
        "conv_metadata": meta,
        "usage": {
            "prompt_tokens": sum(r.prompt_tokens for r in results),
            "completion_tokens": sum(r.completion_tokens for r in results),
            "reasoning_tokens": sum(r.reasoning_tokens for r in results),
            "cost": sum(r.cost for r in results),
        },
        **({"provenance": provenance} if provenance is not None else {}),
    }


def _existing_answers(path: Path) -> dict[str, Answer]:
    return read_answer_file(path, allow_empty=True, torn_tail="skip") if path.exists() and path.stat().st_size else {}


def pending_questions(path: Path, questions: Sequence[Question]) -> tuple[list[Question], int]:
    done = _existing_answers(path)
    todo = [q for q in questions if q.question_id not in done]
    return todo, len(questions) - len(todo)


def made_with_other_settings(answers: Iterable[Answer], provenance: dict) -> int:
    """How many answers record an endpoint (model, base_url, params) or system prompt other than
    ``provenance``; answers without provenance are of unknown settings and not counted."""
    want = (endpoint_identity(provenance["endpoint"]), provenance["template_version"])
    return sum(
        1 for a in answers
        if a.provenance is not None and (endpoint_identity(a.provenance.get("endpoint")), a.provenance.get("template_version")) != want
    )


def estimate_answers(client: LLMClient, models: Sequence[str], questions: Sequence[Question], answer_dir: Path, system: Template | None, params: dict) -> DryRunEstimate:
    est = DryRunEstimate()
    for m in models:
        todo, _ = pending_questions(answer_dir / f"{m}.jsonl", questions)
        # Later turns depend on earlier answers, so only first turns can be priced up front.
        est.merge(client.estimate(turn_request(m, q, [{"role": "user", "content": q.turns[0]}], system, params) for q in todo))
    return est


async def generate_answers(
    client: LLMClient,
    models: Sequence[str],
    questions: Sequence[Question],
    answer_dir: Path,
    *,
    system: Template | None = None,
    params: dict | None = None,
    on_progress: Callable[[str, bool], None] | None = None,
) -> list[AnswerReport]:
    """Answer every question with every model, appending to ``answer_dir/<model>.jsonl``."""
    params = dict(params or {})
    reports = []
    tasks = []
    writers = {}
    for m in models:
        path = answer_dir / f"{m}.jsonl"
        writers[m] = JsonlAppender(path)  # repairs a torn tail before we read it
        existing = _existing_answers(path)
        todo = [q for q in questions if q.question_id not in existing]
        rep = AnswerReport(model=m, done_before=len(questions) - len(todo))
        reports.append(rep)
        prov = answer_provenance(client, m, system, params)
        asked = {q.question_id for q in questions}
        rep.other_settings = made_with_other_settings((a for q, a in existing.items() if q in asked), prov)

        async def run(q: Question, m: str = m, rep: AnswerReport = rep, prov: dict = prov) -> None:
            results, texts = await _answer_one(client, m, q, system, params)
            ok = bool(results) and results[-1].ok and len(texts) == len(q.turns)
            if ok:
                writers[m].append(answer_record(m, q, results, texts, prov))
                rep.written += 1
            else:
                rep.failed += 1
                rep.errors.append(f"{q.question_id}: {results[-1].error if results else 'no call'}")
            if on_progress:
                on_progress(m, ok)

        tasks.extend(run(q) for q in todo)
    try:
        await asyncio.gather(*tasks)
    finally:
        for w in writers.values():
            w.close()
    return reports


def answers_by_model(answer_dir: Path, models: Sequence[str]) -> dict[str, dict[str, Answer]]:
    return {m: read_answer_file(answer_dir / f"{m}.jsonl", model=m, allow_empty=True, torn_tail="skip") for m in models if (answer_dir / f"{m}.jsonl").exists()}
