"""Run the index suite: ask the model, grade, judge where needed, write per-item records.

Records go to ``<output>/<model>/<eval>.jsonl``, one per (item, repeat), appended as soon as
that item is answered and graded; on a rerun, recorded items are skipped and every
model/judge call of an unrecorded one is served by the shared response cache, so nothing
paid for is asked twice. Failed calls are recorded as failures (``status`` ``api_failure``,
``judge_failure`` or ``checker_failure``, ``correct=null``: reported, never scored) and are
redone only with ``retry_failed``.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from arena.io.configfile import read_yaml
from arena.errors import InputError
from arena.io.formats import JsonlAppender, read_jsonl, write_jsonl
from arena.index.datasets import MULTILINGUAL_LANGUAGES, EvalItem, load_eval, looks_local
from arena.index.graders.choice import ChoiceExtractor
from arena.index.graders.code import CodeGrade, SciCodeStepCheck, extract_code, grade_lcb, grade_scicode
from arena.index.graders.hle import JUDGE_SCHEMA, parse_judgement, stated_confidence
from arena.index.graders.math import MathScriptGrader, parse_equality_reply
from arena.index.graders.mgsm import extract_number, score_number
from arena.index.prompts import Prompt, build_prompt
from arena.index.sandbox import Sandbox
from arena.llm import ChatRequest, ChatResult, Endpoint, LLMClient, load_endpoints
from arena.llm.endpoints import parse_endpoints
from arena.prompts import load_template

DEFAULT_REPEATS = {"mmlu_pro": 1, "hle": 1, "gpqa_diamond": 5, "math500": 3, "aime2024": 10, "scicode": 3,
                   "livecodebench": 3, "mmmlu": 1, "mgsm": 1}
MC_FALLBACKS = {"mmlu_pro": ("answer_is",), "gpqa_diamond": ("answer_is_loose",), "mmmlu": ("multilingual_answer",)}


@dataclass(frozen=True)
class EvalSpec:
    name: str
    source: str | None = None
    repeats: int = 1
    limit: int | None = None
    languages: tuple[str, ...] = ()
    fallbacks: tuple[str, ...] | None = None
    targets: str | None = None  # SciCode: JSON {step_number: [python literal, ...]}


@dataclass
class IndexConfig:
    endpoints: dict[str, Endpoint]
    model: str
    judge: str | None
    evals: list[EvalSpec]
    output: Path
    cache: Path
    seed: int = 0
    sandbox_workers: int = 2
    max_tokens: int = 4096
    source: str = "<config>"
    trust_remote_code: bool = False
    math_timeout: float = 10.0


def load_config(path: str | Path, *, trust_remote_code: bool = False) -> IndexConfig:
    path = Path(path)
    raw = read_yaml(path)
    base = path.parent
    if "endpoints_file" in raw:
        endpoints = load_endpoints(base / raw["endpoints_file"])
    else:
        endpoints = parse_endpoints(raw.get("endpoints") or {}, source=str(path))
    for key in ("model", "evals"):
        if key not in raw:
            raise InputError("missing field", path=str(path), field=key)
    model = raw["model"]
    if model not in endpoints:
        raise InputError(f"unknown endpoint {model!r}", path=str(path), field="model")
    judge = raw.get("judge")
    if judge is not None and judge not in endpoints:
        raise InputError(f"unknown endpoint {judge!r}", path=str(path), field="judge")
    specs = []
    for name, spec in (raw["evals"] or {}).items():
        spec = spec or {}
        if name not in DEFAULT_REPEATS:
            raise InputError(f"unknown eval; known: {', '.join(DEFAULT_REPEATS)}", path=str(path), field=f"evals.{name}")
        src = spec.get("source")
        if src and ((base / src).exists() or "{lang}" in str(src)):
            src = str((base / src).resolve()) if (base / src).exists() else str(base / src)
        elif src and looks_local(str(src)):
            raise InputError(f"no such file or directory: {base / src}", path=str(path), field=f"evals.{name}.source")
        langs = spec.get("languages") or (MULTILINGUAL_LANGUAGES if name in ("mmmlu", "mgsm") else ())
        targets = spec.get("targets")
        specs.append(EvalSpec(name, src, int(spec.get("repeats", DEFAULT_REPEATS[name])), spec.get("limit"),
                              tuple(langs), tuple(spec["fallbacks"]) if "fallbacks" in spec else None,
                              str((base / targets).resolve()) if targets else None))
    return IndexConfig(
        endpoints=endpoints, model=model, judge=judge, evals=specs,
        output=(base / raw.get("output", "index_results")).resolve(), cache=(base / raw.get("cache", "index_cache.sqlite")).resolve(),
        seed=int(raw.get("seed", 0)), sandbox_workers=int(raw.get("sandbox_workers", 2)),
        max_tokens=int(raw.get("max_tokens", 4096)), source=str(path), trust_remote_code=trust_remote_code,
        math_timeout=float(raw.get("math_timeout", 10.0)),
    )


def _source_for(spec: EvalSpec, language: str) -> str | None:
    """``source`` may hold ``{lang}`` for per-language local files (MGSM TSVs, MMMLU CSVs)."""
    if spec.source and "{lang}" in spec.source:
        return spec.source.replace("{lang}", language)
    return spec.source


def load_items(spec: EvalSpec, *, trust_remote_code: bool = False) -> list[EvalItem]:
    targets = None
    if spec.targets:
        targets = json.loads(Path(spec.targets).read_text(encoding="utf-8"))
    if spec.name in ("mmmlu", "mgsm"):
        items: list[EvalItem] = []
        for lang in spec.languages:
            src = _source_for(spec, lang)
            items += load_eval(spec.name, src, language=lang, limit=spec.limit, trust_remote_code=trust_remote_code)
        return items
    return load_eval(spec.name, spec.source, limit=spec.limit, scicode_targets=targets, trust_remote_code=trust_remote_code)


FAILED = frozenset({"api_failure", "judge_failure", "checker_failure", "grading_failure"})
"""Record statuses that ``--retry-failed`` redoes (each names a call that failed)."""

Key = tuple[str, int]
Planned = tuple[EvalItem, int, Prompt, ChatRequest]


def read_result_file(path: Path) -> dict[Key, dict]:
    """Records of one results file by (item, repeat), the last one winning.

    A torn final line (no newline: the writer was killed mid-write) is ignored; any other
    line that is not a JSON record is bad input and raises, naming file and line.
    """
    out: dict[Key, dict] = {}
    if not path.exists():
        return out
    for line_no, rec in read_jsonl(path, skip_torn_tail=True):
        for key in ("item_id", "repeat"):
            if key not in rec:
                raise InputError("missing field", path=str(path), line=line_no, field=key)
        out[(rec["item_id"], rec["repeat"])] = rec
    return out


@dataclass
class IndexRunner:
    """Ask, grade and judge one model on the configured evals.

    Each (item, repeat) runs as its own task: ask, grade (equality checker, HLE judge or
    sandbox as the eval needs), then append its record at once, so a kill loses at most
    the items in flight (their finished calls are in the response cache). A rerun skips
    recorded items; ``retry_failed`` redoes records whose status is in :data:`FAILED`
    and then rewrites the file with one record per (item, repeat).
    """

    config: IndexConfig
    client: LLMClient
    sandbox: Sandbox
    progress: Callable[[str, int, int], None] | None = None
    retry_failed: bool = False
    math: MathScriptGrader | None = None

    def __post_init__(self) -> None:
        if self.math is None:
            self.math = MathScriptGrader(timeout=self.config.math_timeout)

    def close(self) -> None:
        self.math.close()

    def results_path(self, eval_name: str) -> Path:
        return self.config.output / self.config.model / f"{eval_name}.jsonl"

    def _params(self, ep: Endpoint) -> dict[str, Any]:
        params: dict[str, Any] = {}
        if "temperature" not in ep.params:
            params["temperature"] = 0
        if not ep.reasoning and "max_tokens" not in ep.params and "max_completion_tokens" not in ep.params:
            params["max_tokens"] = self.config.max_tokens
        return params

    def _todo(self, existing: dict[Key, dict]) -> Callable[[Key], bool]:
        def todo(key: Key) -> bool:
            rec = existing.get(key)
            return rec is None or (self.retry_failed and rec.get("status") in FAILED)
        return todo

    def plan(self, spec: EvalSpec, existing: dict[Key, dict] | None = None) -> list[Planned]:
        """Requests for every (item, repeat) not yet recorded (or failed, with ``retry_failed``)."""
        ep = self.config.endpoints[self.config.model]
        if existing is None:
            existing = read_result_file(self.results_path(spec.name))
        todo = self._todo(existing)
        out = []
        for item in load_items(spec, trust_remote_code=self.config.trust_remote_code):
            for r in range(spec.repeats):
                if not todo((item.item_id, r)):
                    continue
                p = build_prompt(item, reasoning_model=ep.reasoning, repeat=r, seed=self.config.seed)
                req = ChatRequest(ep.name, p.messages, params=self._params(ep), template_version=p.template_version,
                                  stage=f"index:{spec.name}", repeat=r, meta={"item_id": item.item_id})
                out.append((item, r, p, req))
        return out

    async def run_eval(self, spec: EvalSpec) -> int:
        """Run what is left of ``spec``; returns the number of records written."""
        path = self.results_path(spec.name)
        writer = JsonlAppender(path)  # cuts a torn last line left by a kill
        try:
            existing = read_result_file(path)
            planned = self.plan(spec, existing)
            if not planned:
                return 0
            redone = {(item.item_id, r) for item, r, *_ in planned if (item.item_id, r) in existing}
            done = [0]

            def emit(rec: dict) -> None:
                writer.append(rec)
                existing[(rec["item_id"], rec["repeat"])] = rec
                done[0] += 1
                if self.progress:
                    self.progress(spec.name, done[0], len(planned))

            if spec.name == "scicode":
                await self._run_scicode(spec, planned, existing, emit)
            else:
                async def one(entry: Planned) -> None:
                    item, r, p, req = entry
                    res = await self.client.chat(req)
                    rec = self._base_record(spec, item, r, p, res)
                    if res.ok:
                        await self._grade(spec, item, p, res, rec)
                    emit(rec)
                await asyncio.gather(*(one(e) for e in planned))
        finally:
            writer.close()
        if redone:
            # Redone items were appended after their failed records: keep one per (item, repeat).
            write_jsonl(path, existing.values())
        return done[0]

    def _base_record(self, spec: EvalSpec, item: EvalItem, r: int, p: Prompt, res: ChatResult) -> dict:
        return {
            "eval": spec.name, "item_id": item.item_id, "repeat": r, "language": item.meta.get("language"),
            "model": self.config.model, "status": "ok" if res.ok else "api_failure", "error": res.error,
            "response": res.text, "gold": p.gold, "extracted": None, "correct": None, "method": None,
            "prompt_tokens": res.prompt_tokens, "completion_tokens": res.completion_tokens,
            "reasoning_tokens": res.reasoning_tokens, "cost": res.cost, "cached": res.cached,
        }

    async def _grade(self, spec: EvalSpec, item: EvalItem, p: Prompt, res: ChatResult, rec: dict) -> None:
        name, text = spec.name, res.text
        if name in ("mmlu_pro", "gpqa_diamond", "mmmlu"):
            fb = spec.fallbacks if spec.fallbacks is not None else MC_FALLBACKS[name]
            ex = ChoiceExtractor(letters="".join(p.context["letters"]), fallbacks=fb).extract(text)
            rec.update(extracted=ex.letter, correct=ex.letter == p.gold,
                       method=ex.rule or "unanswered", status="ok" if ex.answered else "unanswered")
        elif name == "mgsm":
            pred = extract_number(text, item.meta["language"])
            rec.update(extracted=pred, correct=score_number(item.answer, pred), method="number" if pred else "unanswered",
                       status="ok" if pred else "unanswered")
        elif name in ("math500", "aime2024"):
            await self._grade_math(item, text, rec)
        elif name == "hle":
            await self._grade_hle(item, text, rec)
        elif name == "livecodebench":
            code = extract_code(text)
            rec["extracted"] = code
            if code is None:
                rec.update(correct=False, method="no_code", status="unanswered")
                return
            await self._sandbox(lambda: grade_lcb(self.sandbox, code, item.meta["tests"], testtype=item.meta["testtype"],
                                                  fn_name=item.meta.get("fn_name"), tag=item.item_id), rec)

    async def _grade_math(self, item: EvalItem, text: str, rec: dict) -> None:
        v = await self.math.grade(text, item.answer)
        rec.update(extracted=v.extracted, correct=v.correct, method=v.method,
                   status="ok" if v.extracted is not None else "unanswered")
        if v.correct or v.extracted is None:
            return
        if not self.config.judge:
            if v.method == "timeout":  # not proved either way, and nobody else to ask
                rec.update(status="grading_failure", correct=None)
            return
        tpl = load_template("index_math_equality")
        req = ChatRequest(self.config.judge, [{"role": "user", "content": tpl.format(expression1=item.answer, expression2=v.extracted)}],
                          params={"temperature": 0}, template_version=tpl.version, stage="index:equality")
        res = await self.client.chat(req)
        rec["equality_checker"] = {"ok": res.ok, "reply": res.text, "error": res.error}
        verdict = parse_equality_reply(res.text) if res.ok else None
        if verdict is None:
            if res.ok:  # arrived but unusable: --retry-failed must re-ask it, not serve it from the cache
                self.client.reject(res, "equality checker reply is neither Yes nor No")
            # Unknown, not wrong: the rule-based "no" may be overturned by the checker.
            rec.update(status="checker_failure", correct=None)
        elif verdict:
            rec.update(correct=True, method="llm_equality")

    async def _grade_hle(self, item: EvalItem, text: str, rec: dict) -> None:
        rec["stated_confidence"] = stated_confidence(text)
        if not self.config.judge:
            rec.update(status="not_judged")
            return
        tpl = load_template("index_hle_judge")
        req = ChatRequest(self.config.judge, [{"role": "user", "content": tpl.format(
            question=item.question, response=text, correct_answer=item.answer)}],
            params={"response_format": JUDGE_SCHEMA, "temperature": 0}, template_version=tpl.version, stage="index:hle_judge")
        res = await self.client.chat(req)
        j = parse_judgement(res.text) if res.ok else None
        if j is None:
            if res.ok:  # arrived but unusable: --retry-failed must re-ask it, not serve it from the cache
                self.client.reject(res, "HLE judge reply has no yes/no verdict")
            rec.update(status="judge_failure", judge={"ok": res.ok, "reply": res.text, "error": res.error})
            return
        rec.update(extracted=j.extracted_final_answer, correct=j.correct, method="hle_judge",
                   confidence=j.confidence, judge={"reasoning": j.reasoning})

    async def _sandbox(self, grade: Callable[[], CodeGrade], rec: dict) -> None:
        res = await asyncio.to_thread(grade)
        rec.update(correct=res.passed, method=f"sandbox:{res.status}", sandbox=res.to_dict())

    async def _run_scicode(self, spec: EvalSpec, planned: list[Planned], existing: dict[Key, dict],
                           emit: Callable[[dict], None]) -> None:
        """SciCode steps of one (problem, repeat) are graded in step order: where the gold code
        of earlier steps is not published, the model's own earlier steps (from this run or
        from records of an earlier one) are run before the step under test."""
        chains: dict[tuple[str, int], list[Planned]] = {}
        for entry in planned:
            chains.setdefault((entry[0].meta["problem_id"], entry[1]), []).append(entry)

        async def chain(entries: list[Planned]) -> None:
            entries = sorted(entries, key=lambda e: e[0].meta["step_index"])
            results = await asyncio.gather(*(self.client.chat(e[3]) for e in entries))
            item0, r = entries[0][0], entries[0][1]
            own: dict[int, str] = {}
            for k, step in enumerate(item0.meta["steps"]):
                prev = existing.get((str(step.get("step_number")), r))
                if prev and prev.get("extracted"):
                    own[k] = prev["extracted"]
            for (item, _, p, _), res in zip(entries, results):
                rec = self._base_record(spec, item, r, p, res)
                if res.ok:
                    await self._grade_scicode(item, p, res.text, own, rec)
                emit(rec)

        await asyncio.gather(*(chain(c) for c in chains.values()))

    async def _grade_scicode(self, item: EvalItem, p: Prompt, text: str, own: dict[int, str], rec: dict) -> None:
        k = item.meta["step_index"]
        code = extract_code(text)
        rec["extracted"] = code
        if code is None:
            rec.update(correct=False, method="no_code", status="unanswered")
            return
        own[k] = code
        prior = p.context.get("prior_code") or "\n\n".join(own.get(j, "") for j in range(k))
        check = SciCodeStepCheck(item.item_id, item.meta["dependencies"], prior, tuple(item.meta["test_cases"]),
                                 None if item.meta["targets"] is None else tuple(item.meta["targets"]))
        if check.targets is None or len(check.targets) != len(check.test_cases):
            rec.update(status="no_targets", method="no_targets")
            return
        await self._sandbox(lambda: grade_scicode(self.sandbox, check, code, tag=item.item_id), rec)


def read_records(output: Path, model: str) -> dict[str, list[dict]]:
    """All records per eval for ``model``; for a repeated (item, repeat) the last one wins."""
    base = Path(output) / model
    if not base.is_dir():
        return {}
    return {path.stem: list(read_result_file(path).values()) for path in sorted(base.glob("*.jsonl"))}
