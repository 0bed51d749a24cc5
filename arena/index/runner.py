"""Run the index suite: ask the model, grade, judge where needed, write per-item records.

Records go to ``<output>/<model>/<eval>.jsonl``, one per (item, repeat), appended as soon as
that item is answered and graded; on a rerun, recorded items are skipped and every
model/judge call of an unrecorded one is served by the shared response cache, so nothing
paid for is asked twice. Failed calls are recorded as failures (``status`` ``api_failure``,
``judge_failure`` or ``checker_failure``, ``correct=null``: reported, never scored) and are
redone only with ``retry_failed``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from arena.errors import InputError
from arena.index.datasets import EvalItem
from arena.index.graders.choice import FALLBACK_PATTERNS
from arena.index.graders.math import MathScriptGrader
from arena.index.prompts import Prompt
from arena.index.sandbox import Sandbox
from arena.index.tasks import REGISTRY, GradeContext, get_task, suggest
from arena.io.configfile import read_yaml, validation_error
from arena.io.formats import JsonlAppender, read_jsonl, write_jsonl
from arena.llm import ChatRequest, ChatResult, Endpoint, LLMClient, load_endpoints
from arena.llm.endpoints import parse_endpoints


@dataclass(frozen=True)
class EvalSpec:
    """One configured eval: its task's name, where its data is, and how much of it to run."""

    name: str
    source: str | None = None
    repeats: int = 1
    limit: int | None = None
    languages: tuple[str, ...] = ()
    fallbacks: tuple[str, ...] | None = None
    targets: str | None = None  # SciCode: JSON {step_number: [python literal, ...]}
    targets_data: dict | None = field(default=None, hash=False, compare=False)


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


# --------------------------------------------------------------------------- config file
class EvalEntry(BaseModel):
    """``evals.<name>`` in the index config. ``languages``, ``fallbacks`` and ``targets`` are
    accepted only by the evals whose task lists them in ``options``."""

    model_config = ConfigDict(extra="forbid")
    source: str | None = None
    repeats: int | None = Field(default=None, gt=0)
    limit: int | None = Field(default=None, gt=0)
    languages: list[str] | None = None
    fallbacks: list[str] | None = None
    targets: str | None = None


class IndexConfigFile(BaseModel):
    """The index config YAML (unknown keys are errors, with the closest valid key suggested)."""

    model_config = ConfigDict(extra="forbid")
    endpoints: dict[str, Any] | None = None
    endpoints_file: str | None = None
    model: str
    judge: str | None = None
    evals: dict[str, EvalEntry | None]
    output: str = "index_results"
    cache: str = "index_cache.sqlite"
    seed: int = 0
    sandbox_workers: int = Field(default=2, gt=0)
    max_tokens: int = Field(default=4096, gt=0)
    math_timeout: float = Field(default=10.0, gt=0)


_COMMON_EVAL_KEYS = frozenset({"source", "repeats", "limit"})


def _check_keys(raw: dict, allowed, path: Path, prefix: str, what: str = "unknown key") -> None:
    for key in raw:
        if key not in allowed:
            raise InputError(f"{what}{suggest(key, allowed)}", path=str(path), field=f"{prefix}{key}")


def load_config(path: str | Path, *, trust_remote_code: bool = False) -> IndexConfig:
    """Read and validate an index config; every error names the file and the config key."""
    path = Path(path)
    try:
        raw = read_yaml(path)
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid UTF-8 text ({exc.reason} at byte {exc.start})", path=str(path)) from None
    base = path.parent
    _check_keys(raw, IndexConfigFile.model_fields, path, "")
    evals_raw = raw.get("evals")
    if isinstance(evals_raw, dict):
        for name, entry in evals_raw.items():
            if name not in REGISTRY:
                raise InputError(f"unknown eval{suggest(name, REGISTRY)}", path=str(path), field=f"evals.{name}")
            if isinstance(entry, dict):
                _check_keys(entry, _COMMON_EVAL_KEYS | get_task(name).options, path, f"evals.{name}.",
                            f"not a key of eval {name!r}")
    try:
        cfg = IndexConfigFile(**raw)
    except ValidationError as exc:
        raise validation_error(exc, path) from None
    if cfg.endpoints_file is not None:
        endpoints = load_endpoints(base / cfg.endpoints_file)
    else:
        endpoints = parse_endpoints(cfg.endpoints or {}, source=str(path))
    if cfg.model not in endpoints:
        raise InputError(f"unknown endpoint {cfg.model!r}{suggest(cfg.model, endpoints)}", path=str(path), field="model")
    if cfg.judge is not None and cfg.judge not in endpoints:
        raise InputError(f"unknown endpoint {cfg.judge!r}{suggest(cfg.judge, endpoints)}", path=str(path), field="judge")
    if not cfg.evals:
        raise InputError("no evals configured", path=str(path), field="evals")
    specs = []
    for name, entry in cfg.evals.items():
        entry = entry or EvalEntry()
        task = get_task(name)
        src = None
        if entry.source:
            src = task.resolve_source(entry.source, base)
            problem = task.check_source(src)
            if problem:
                raise InputError(f"{problem}: {src}", path=str(path), field=f"evals.{name}.source")
        for lang in entry.languages or ():
            if lang not in task.languages_supported:
                raise InputError(f"unknown language {lang!r}{suggest(lang, task.languages_supported)}; known: "
                                 f"{', '.join(task.languages_supported)}", path=str(path), field=f"evals.{name}.languages")
        for fb in entry.fallbacks or ():
            if fb not in FALLBACK_PATTERNS:
                try:
                    re.compile(fb)
                except re.error as exc:
                    raise InputError(f"{fb!r} is neither a named fallback ({', '.join(FALLBACK_PATTERNS)}) nor a regex ({exc})",
                                     path=str(path), field=f"evals.{name}.fallbacks") from None
        targets = None
        if entry.targets:
            targets = str((base / entry.targets).resolve())
            if not Path(targets).is_file():
                raise InputError(f"no such file: {targets}", path=str(path), field=f"evals.{name}.targets")
        specs.append(EvalSpec(name, src, entry.repeats or task.default_repeats, entry.limit,
                              tuple(entry.languages or task.default_languages),
                              tuple(entry.fallbacks) if entry.fallbacks is not None else None, targets))
    return IndexConfig(
        endpoints=endpoints, model=cfg.model, judge=cfg.judge, evals=specs,
        output=(base / cfg.output).resolve(), cache=(base / cfg.cache).resolve(), seed=cfg.seed,
        sandbox_workers=cfg.sandbox_workers, max_tokens=cfg.max_tokens, source=str(path),
        trust_remote_code=trust_remote_code, math_timeout=cfg.math_timeout,
    )


def load_items(spec: EvalSpec, *, trust_remote_code: bool = False) -> list[EvalItem]:
    return get_task(spec.name).load(spec, trust_remote_code=trust_remote_code)


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

    Each (item, repeat) runs as its own asyncio task through its eval's :class:`EvalTask`
    (ask, grade with the equality checker, judge or sandbox as the task needs), and its
    record is appended at once, so a kill loses at most the items in flight (their finished
    calls are in the response cache). A rerun skips recorded items; ``retry_failed`` redoes
    records whose status is in :data:`FAILED` and then rewrites the file with one record per
    (item, repeat).
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
        task = get_task(spec.name)
        ep = self.config.endpoints[self.config.model]
        if existing is None:
            existing = read_result_file(self.results_path(spec.name))
        todo = self._todo(existing)
        out = []
        for item in task.load(spec, trust_remote_code=self.config.trust_remote_code):
            for r in range(spec.repeats):
                if not todo((item.item_id, r)):
                    continue
                p = task.prompt(item, reasoning_model=ep.reasoning, repeat=r, seed=self.config.seed)
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

            ctx = GradeContext(self.client, self.config.judge, self.math, self.sandbox)
            await get_task(spec.name).run(planned, self.client.chat, lambda item, r, p, res: self._base_record(spec, item, r, p, res),
                                          spec, ctx, existing, emit)
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


def read_records(output: Path, model: str) -> dict[str, list[dict]]:
    """All records per eval for ``model``; for a repeated (item, repeat) the last one wins."""
    base = Path(output) / model
    if not base.is_dir():
        return {}
    return {path.stem: list(read_result_file(path).values()) for path in sorted(base.glob("*.jsonl"))}
