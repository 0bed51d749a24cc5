"""What an index eval is: a dataset of typed samples, a prompt, a grader, a metric, and its
place in the indices (after inspect_ai's ``Task(dataset, solver, scorer)``).

Each eval is one :class:`EvalTask` subclass in its own module under ``arena.index.tasks``,
registered in :data:`arena.index.tasks.REGISTRY`. The runner only calls the hooks below,
so adding an eval is one module plus one registry line.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, ClassVar, Iterable, Iterator

import numpy as np

from arena.errors import InputError
from arena.index.datasets import EvalItem, hf_rows, looks_local, read_rows
from arena.index.indices import Estimate, eval_estimate
from arena.index.prompts import Prompt

if TYPE_CHECKING:
    from arena.index.graders.code import CodeGrade
    from arena.index.graders.math import MathScriptGrader
    from arena.index.runner import EvalSpec
    from arena.index.sandbox import Sandbox
    from arena.llm import ChatResult, LLMClient

Sample = EvalItem
"""One question of an eval (``arena.index.datasets.EvalItem``)."""

MULTILINGUAL_LANGUAGES = ("es", "bn", "de", "ja", "en", "zh", "sw", "fr")
"""Languages of the Multilingual Index (MMMLU and MGSM), in the methodology's order."""

Where = tuple[str, int]  # (file or hub id, line) of a dataset row, for located errors


@dataclass(frozen=True)
class Score:
    """A graded answer: what was extracted, whether it is correct (``None``: unknown, e.g.
    the checker failed), how it was decided, the record status, and grader details."""

    correct: bool | None
    extracted: Any = None
    method: str | None = None
    status: str = "ok"
    extra: dict[str, Any] = field(default_factory=dict)

    def as_record(self) -> dict[str, Any]:
        return {"extracted": self.extracted, "correct": self.correct, "method": self.method, "status": self.status, **self.extra}


@dataclass
class GradeContext:
    """Collaborators a grader may use, bound at run time (the judge is a role, not a task field)."""

    client: "LLMClient"
    judge: str | None
    math: "MathScriptGrader"
    sandbox: "Sandbox"

    async def run_code(self, grade: Callable[[], "CodeGrade"]) -> Score:
        """Run a blocking sandbox grade off the event loop and score it."""
        res = await asyncio.to_thread(grade)
        return Score(res.passed, method=f"sandbox:{res.status}", extra={"sandbox": res.to_dict()})


# (sample, repeat, prompt, request) of one planned call, and the runner's record builder.
Planned = tuple[Sample, int, Prompt, Any]
Emit = Callable[[dict], None]


class EvalTask:
    """Base of every index eval. Subclasses set the class attributes and implement
    :meth:`row_to_samples`, :meth:`prompt` and :meth:`score`."""

    name: ClassVar[str]
    default_repeats: ClassVar[int] = 1
    indices: ClassVar[dict[str, float]] = {}
    """Index name -> weight of this eval in it (weights are renormalised within an index)."""
    hub: ClassVar[dict[str, Any]] = {}
    """``datasets.load_dataset`` arguments of the published copy (``path``, ``split``, ...)."""
    options: ClassVar[frozenset[str]] = frozenset()
    """Config keys this eval accepts beyond ``source``, ``repeats`` and ``limit``."""
    default_languages: ClassVar[tuple[str, ...]] = ()
    languages_supported: ClassVar[tuple[str, ...]] = ()
    id_field: ClassVar[str] = "id"
    """The dataset field that names a sample (for duplicate-id errors)."""

    # ----------------------------------------------------------------- dataset
    def rows(self, source: str, *, language: str | None, trust_remote_code: bool) -> tuple[Iterable[tuple[int, dict]], str]:
        """(line, row) pairs of ``source``: a local file, else the hub (or a local hub copy)."""
        path = Path(source)
        if looks_local(source) and not path.exists():
            raise InputError("no such file or directory", path=source)
        if path.is_file():
            return read_rows(path), str(path)
        return hf_rows(self.hub, source, config=self.hub_config(language), trust_remote_code=trust_remote_code), source

    def hub_config(self, language: str | None) -> str | None:
        return self.hub.get("name")

    def row_to_samples(self, row: dict, where: Where, spec: "EvalSpec", language: str | None) -> Sample | list[Sample] | None:
        raise NotImplementedError

    def load(self, spec: "EvalSpec", *, trust_remote_code: bool = False) -> list[Sample]:
        return self.load_source(spec, spec.source, None, trust_remote_code=trust_remote_code)

    def load_source(self, spec: "EvalSpec", source: str | None, language: str | None, *, trust_remote_code: bool = False) -> list[Sample]:
        src = str(source) if source is not None else self.hub["path"]
        rows, where = self.rows(src, language=language, trust_remote_code=trust_remote_code)
        items: list[Sample] = []
        seen: dict[str, int] = {}
        for line, row in rows:
            got = self.row_to_samples(row, (where, line), spec, language)
            if got is None:
                continue
            for item in got if isinstance(got, list) else [got]:
                if item.item_id in seen:
                    raise InputError(f"duplicate id {item.item_id!r} (first on line {seen[item.item_id]})", path=where, line=line, field=self.id_field)
                seen[item.item_id] = line
                items.append(item)
            if spec.limit is not None and len(items) >= spec.limit:
                return items[: spec.limit]
        if not items:
            raise InputError(f"no {self.name} samples", path=where)
        return items

    def resolve_source(self, source: str, base: Path) -> str:
        """``source`` as written in a config at ``base``: relative local paths are resolved there."""
        local = base / Path(source).expanduser()
        if local.exists():
            return str(local.resolve())
        return str(local) if looks_local(source) else source  # a hub id stays as written

    def check_source(self, source: str) -> str | None:
        """Why a configured local ``source`` cannot be read (``None`` when it can, or is a hub id)."""
        return "no such file or directory" if looks_local(source) and not Path(source).exists() else None

    # ----------------------------------------------------------------- solver and scorer
    def prompt(self, sample: Sample, *, reasoning_model: bool, repeat: int, seed: int) -> Prompt:
        raise NotImplementedError

    async def score(self, sample: Sample, prompt: Prompt, text: str, spec: "EvalSpec", ctx: GradeContext) -> Score:
        raise NotImplementedError

    async def run(self, planned: list[Planned], ask: Callable[[Any], Awaitable["ChatResult"]],
                  record: Callable[[Sample, int, Prompt, "ChatResult"], dict], spec: "EvalSpec",
                  ctx: GradeContext, existing: dict, emit: Emit) -> None:
        """Ask and grade every planned (sample, repeat) concurrently; each record is emitted
        as soon as it is graded."""

        async def one(entry: Planned) -> None:
            sample, r, p, req = entry
            res = await ask(req)
            rec = record(sample, r, p, res)
            if res.ok:
                rec.update(self.normalise(await self.score(sample, p, res.text, spec, ctx)).as_record())
            emit(rec)

        await asyncio.gather(*(one(e) for e in planned))

    @staticmethod
    def normalise(score: Score) -> Score:
        return score

    # ----------------------------------------------------------------- metric and report
    def metric(self, scores: np.ndarray, *, rng: np.random.Generator, rounds: int = 1000) -> Estimate:
        """Eval score from ``S[item, repeat]``: mean of per-item means, two-stage bootstrap CI."""
        return eval_estimate(scores, rng=rng, rounds=rounds)

    def details(self, records: list[dict]) -> Iterator[str]:
        """Extra report lines for ``arena index show`` (none by default)."""
        return iter(())


class PerLanguage:
    """Mixin for evals asked per language: ``source`` may hold ``{lang}`` for per-language
    local files (MGSM TSVs, MMMLU CSVs); a hub source loads each language's config."""

    def load(self, spec: "EvalSpec", *, trust_remote_code: bool = False) -> list[Sample]:
        items: list[Sample] = []
        for lang in spec.languages or self.default_languages:  # type: ignore[attr-defined]
            src = spec.source.replace("{lang}", lang) if spec.source and "{lang}" in spec.source else spec.source
            items += self.load_source(spec, src, lang, trust_remote_code=trust_remote_code)  # type: ignore[attr-defined]
        return items

    def resolve_source(self, source: str, base: Path) -> str:
        if "{lang}" in source:
            return str(base / source)
        return EvalTask.resolve_source(self, source, base)  # type: ignore[arg-type]

    def check_source(self, source: str) -> str | None:
        if "{lang}" in source:
            return None  # checked per language when loaded
        return EvalTask.check_source(self, source)  # type: ignore[arg-type]
