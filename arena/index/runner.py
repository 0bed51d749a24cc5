"""Run the index suite: ask the model, grade, judge where needed, write per-item records.

Records go to ``<output>/<model>/<eval>.jsonl``, one per (item, repeat), appended as each
batch is graded; on a rerun, records already written are skipped and every model/judge call
is served by the shared response cache, so nothing paid for is asked twice. API failures
are recorded with ``status="api_failure"`` and ``correct=null`` (reported, never scored).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable


from arena.configfile import read_yaml
from arena.errors import InputError
from arena.index.datasets import MULTILINGUAL_LANGUAGES, EvalItem, load_eval
from arena.index.graders.choice import ChoiceExtractor
from arena.index.graders.code import SciCodeStepCheck, extract_code, lcb_program, scicode_program
from arena.index.graders.hle import JUDGE_SCHEMA, parse_judgement, stated_confidence
from arena.index.graders.math import grade_math, parse_equality_reply
from arena.index.graders.mgsm import extract_number, score_number
from arena.index.prompts import Prompt, build_prompt
from arena.index.sandbox import Sandbox, SandboxJob
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


def load_config(path: str | Path) -> IndexConfig:
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
        langs = spec.get("languages") or (MULTILINGUAL_LANGUAGES if name in ("mmmlu", "mgsm") else ())
        targets = spec.get("targets")
        specs.append(EvalSpec(name, src, int(spec.get("repeats", DEFAULT_REPEATS[name])), spec.get("limit"),
                              tuple(langs), tuple(spec["fallbacks"]) if "fallbacks" in spec else None,
                              str((base / targets).resolve()) if targets else None))
    return IndexConfig(
        endpoints=endpoints, model=model, judge=judge, evals=specs,
        output=(base / raw.get("output", "index_results")).resolve(), cache=(base / raw.get("cache", "index_cache.sqlite")).resolve(),
        seed=int(raw.get("seed", 0)), sandbox_workers=int(raw.get("sandbox_workers", 2)),
        max_tokens=int(raw.get("max_tokens", 4096)), source=str(path),
    )


def _source_for(spec: EvalSpec, language: str) -> str | None:
    """``source`` may hold ``{lang}`` for per-language local files (MGSM TSVs, MMMLU CSVs)."""
    if spec.source and "{lang}" in spec.source:
        return spec.source.replace("{lang}", language)
    return spec.source


def load_items(spec: EvalSpec) -> list[EvalItem]:
    targets = None
    if spec.targets:
        targets = json.loads(Path(spec.targets).read_text(encoding="utf-8"))
    if spec.name in ("mmmlu", "mgsm"):
        items: list[EvalItem] = []
        for lang in spec.languages:
            src = _source_for(spec, lang)
            items += load_eval(spec.name, src, language=lang, limit=spec.limit)
        return items
    return load_eval(spec.name, spec.source, limit=spec.limit, scicode_targets=targets)


@dataclass
class IndexRunner:
    """Ask, grade and judge one model on the configured evals."""

    config: IndexConfig
    client: LLMClient
    sandbox: Sandbox
    progress: Callable[[str, int, int], None] | None = None
    _done: dict[str, set[tuple[str, int]]] = field(default_factory=dict)

    def results_path(self, eval_name: str) -> Path:
        return self.config.output / self.config.model / f"{eval_name}.jsonl"

    def _load_done(self, eval_name: str) -> set[tuple[str, int]]:
        done: set[tuple[str, int]] = set()
        path = self.results_path(eval_name)
        if path.exists():
            for line in path.read_text(encoding="utf-8").split("\n"):
                if line.strip():
                    try:
                        rec = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # a torn last line from a kill; that item is redone (from cache)
                    if rec.get("status") != "api_failure":
                        done.add((rec["item_id"], rec["repeat"]))
        return done

    def _params(self, ep: Endpoint) -> dict[str, Any]:
        params: dict[str, Any] = {}
        if "temperature" not in ep.params:
            params["temperature"] = 0
        if not ep.reasoning and "max_tokens" not in ep.params and "max_completion_tokens" not in ep.params:
            params["max_tokens"] = self.config.max_tokens
        return params

    def plan(self, spec: EvalSpec) -> list[tuple[EvalItem, int, Prompt, ChatRequest]]:
        ep = self.config.endpoints[self.config.model]
        done = self._load_done(spec.name)
        out = []
        for item in load_items(spec):
            for r in range(spec.repeats):
                if (item.item_id, r) in done:
                    continue
                p = build_prompt(item, reasoning_model=ep.reasoning, repeat=r, seed=self.config.seed)
                req = ChatRequest(ep.name, p.messages, params=self._params(ep), template_version=p.template_version,
                                  stage=f"index:{spec.name}", repeat=r, meta={"item_id": item.item_id})
                out.append((item, r, p, req))
        return out

    async def run_eval(self, spec: EvalSpec) -> int:
        planned = self.plan(spec)
        if not planned:
            return 0
        results = await self.client.chat_many([q for *_, q in planned], progress=self._tick(spec.name, len(planned)))
        records = [self._base_record(spec, item, r, p, res) for (item, r, p, _), res in zip(planned, results)]
        await self._grade(spec, planned, results, records)
        path = self.results_path(spec.name)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            for rec in records:
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
        return len(records)

    def _tick(self, name: str, total: int) -> Callable[[ChatResult], None]:
        count = [0]

        def tick(_: ChatResult) -> None:
            count[0] += 1
            if self.progress:
                self.progress(name, count[0], total)
        return tick

    def _base_record(self, spec: EvalSpec, item: EvalItem, r: int, p: Prompt, res: ChatResult) -> dict:
        return {
            "eval": spec.name, "item_id": item.item_id, "repeat": r, "language": item.meta.get("language"),
            "model": self.config.model, "status": "ok" if res.ok else "api_failure", "error": res.error,
            "response": res.text, "gold": p.gold, "extracted": None, "correct": None, "method": None,
            "prompt_tokens": res.prompt_tokens, "completion_tokens": res.completion_tokens,
            "reasoning_tokens": res.reasoning_tokens, "cost": res.cost, "cached": res.cached,
        }

    async def _grade(self, spec: EvalSpec, planned: list, results: list[ChatResult], records: list[dict]) -> None:
        name = spec.name
        live = [i for i, res in enumerate(results) if res.ok]
        if name in ("mmlu_pro", "gpqa_diamond", "mmmlu"):
            for i in live:
                item, _, p, _ = planned[i]
                fb = spec.fallbacks if spec.fallbacks is not None else MC_FALLBACKS[name]
                ex = ChoiceExtractor(letters="".join(p.context["letters"]), fallbacks=fb).extract(results[i].text)
                records[i].update(extracted=ex.letter, correct=ex.letter == p.gold,
                                  method=ex.rule or "unanswered", status="ok" if ex.answered else "unanswered")
        elif name == "mgsm":
            for i in live:
                item = planned[i][0]
                pred = extract_number(results[i].text, item.meta["language"])
                records[i].update(extracted=pred, correct=score_number(item.answer, pred), method="number" if pred else "unanswered",
                                  status="ok" if pred else "unanswered")
        elif name in ("math500", "aime2024"):
            await self._grade_math(planned, results, records, live)
        elif name == "hle":
            await self._grade_hle(planned, results, records, live)
        elif name in ("livecodebench", "scicode"):
            self._grade_code(name, planned, results, records, live)

    async def _grade_math(self, planned, results, records, live) -> None:
        checker = []
        for i in live:
            v = grade_math(results[i].text, planned[i][0].answer)
            records[i].update(extracted=v.extracted, correct=v.correct, method=v.method,
                              status="ok" if v.extracted is not None else "unanswered")
            if not v.correct and v.extracted is not None:
                checker.append(i)
        if not checker or not self.config.judge:
            return
        tpl = load_template("index_math_equality")
        reqs = [ChatRequest(self.config.judge, [{"role": "user", "content": tpl.format(expression1=planned[i][0].answer, expression2=records[i]["extracted"])}],
                            params={"temperature": 0}, template_version=tpl.version, stage="index:equality") for i in checker]
        for i, res in zip(checker, await self.client.chat_many(reqs)):
            verdict = parse_equality_reply(res.text) if res.ok else None
            records[i]["equality_checker"] = {"ok": res.ok, "reply": res.text, "error": res.error}
            if verdict:
                records[i].update(correct=True, method="llm_equality")

    async def _grade_hle(self, planned, results, records, live) -> None:
        for i in live:
            records[i]["stated_confidence"] = stated_confidence(results[i].text)
        if not self.config.judge:
            for i in live:
                records[i].update(status="not_judged")
            return
        tpl = load_template("index_hle_judge")
        reqs = [ChatRequest(self.config.judge, [{"role": "user", "content": tpl.format(
            question=planned[i][0].question, response=results[i].text, correct_answer=planned[i][0].answer)}],
            params={"response_format": JUDGE_SCHEMA, "temperature": 0}, template_version=tpl.version, stage="index:hle_judge")
            for i in live]
        for i, res in zip(live, await self.client.chat_many(reqs)):
            j = parse_judgement(res.text) if res.ok else None
            if j is None:
                records[i].update(status="judge_failure", judge={"ok": res.ok, "reply": res.text, "error": res.error})
                continue
            records[i].update(extracted=j.extracted_final_answer, correct=j.correct, method="hle_judge",
                              confidence=j.confidence, judge={"reasoning": j.reasoning})

    def _grade_code(self, name, planned, results, records, live) -> None:
        jobs, where = [], []
        own_code: dict[tuple[str, int, int], str] = {}
        for i in live:
            item, r, p, _ = planned[i]
            code = extract_code(results[i].text)
            records[i]["extracted"] = code
            if code is None:
                records[i].update(correct=False, method="no_code", status="unanswered")
                continue
            if name == "livecodebench":
                prog = lcb_program(code, item.meta["tests"], testtype=item.meta["testtype"], fn_name=item.meta.get("fn_name"))
            else:
                own_code[(item.meta["problem_id"], r, item.meta["step_index"])] = code
                prior = p.context.get("prior_code") or "\n\n".join(
                    own_code.get((item.meta["problem_id"], r, k), "") for k in range(item.meta["step_index"]))
                check = SciCodeStepCheck(item.item_id, item.meta["dependencies"], prior, tuple(item.meta["test_cases"]),
                                         None if item.meta["targets"] is None else tuple(item.meta["targets"]))
                prog = scicode_program(check, code)
                if prog is None:
                    records[i].update(status="no_targets", method="no_targets")
                    continue
            jobs.append(SandboxJob(prog, tag=item.item_id))
            where.append(i)
        for i, res in zip(where, self.sandbox.run_many(jobs)):
            records[i].update(correct=res.passed, method=f"sandbox:{res.status}", sandbox={"status": res.status, "stderr": res.stderr[-2000:]})


def read_records(output: Path, model: str) -> dict[str, list[dict]]:
    """All records per eval for ``model``; for a repeated (item, repeat) the last one wins."""
    out: dict[str, list[dict]] = {}
    base = Path(output) / model
    if not base.is_dir():
        return out
    for path in sorted(base.glob("*.jsonl")):
        latest: dict[tuple[str, int], dict] = {}
        for line_no, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            latest[(rec["item_id"], rec["repeat"])] = rec
        out[path.stem] = list(latest.values())
    return out
