"""Run configuration for ``arena answers|judge|run`` (YAML, validated, errors name the field).

Paths are relative to the working directory, as in arena-hard-auto's configs. ``endpoints`` is
either a mapping (see :mod:`arena.llm.endpoints`) or the path of a YAML file holding one.
``local_model: smollm2`` starts the embedded model on loopback for the run; endpoints whose
``base_url`` is ``local`` then point at it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from arena.io.configfile import read_yaml, validation_error
from arena.errors import InputError
from arena.llm.endpoints import Endpoint, load_endpoints, parse_endpoints

LOCAL = "local"


class AnswerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    models: list[str]
    system_prompt: str | None = None  # a template name in judge_prompts/ or a file
    params: dict[str, Any] = Field(default_factory=dict)


class AdaptiveRepeats(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max: int = Field(ge=1, le=100)
    confidence: float = Field(default=0.9, gt=0.5, lt=1)


class JudgeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    endpoint: str
    baseline: str
    models: list[str] | None = None  # default: every answer model except the baseline
    system_prompt: str = "arena_hard_v0.1_system"
    template: str = "arena_hard_v0.1_pairwise"
    reask_prompt: str = "arena_hard_verdict_reask"  # asked when the verdict is missing or conflicting (arena/verdicts.py)
    reask: bool = True
    params: dict[str, Any] = Field(default_factory=dict)
    # Extra params for the re-ask turn only, e.g. a llama.cpp grammar that makes a small local
    # judge end with a label: {extra_body: {grammar: ...}}.
    reask_params: dict[str, Any] = Field(default_factory=dict)
    # Soft verdicts (arena/soft_verdicts.py): ask for token logprobs and score each game by the
    # judge's probability over the five labels; games whose reply has no logprobs keep their label.
    soft: bool = False
    top_logprobs: int = Field(default=20, ge=1, le=20)
    # Judge stability (arena/judge_repeats.py): each game asked `repeats` times (or adaptively,
    # until its leading label is decided at `confidence` or `max` repeats), then aggregated.
    repeats: int = Field(default=1, ge=1, le=100)
    aggregate: Literal["majority", "mean"] = "majority"
    repeats_adaptive: AdaptiveRepeats | None = None

    def repeat_plan(self):
        from arena.judge_repeats import RepeatPlan

        if self.repeats_adaptive is not None:
            a = self.repeats_adaptive
            return RepeatPlan(aggregate=self.aggregate, adaptive=True, max_repeats=a.max, confidence=a.confidence)
        return RepeatPlan(repeats=self.repeats, aggregate=self.aggregate)

    def judge_params(self) -> dict[str, Any]:
        """The judge's request params, with the logprob request when ``soft`` is on."""
        if not self.soft:
            return dict(self.params)
        from arena.soft_verdicts import soft_params

        return {**self.params, **soft_params(self.top_logprobs)}


class ShowConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    bootstrap: int = Field(default=100, ge=0)
    seed: int = 0
    ci: float = Field(default=0.95, gt=0, lt=1)
    strong_weight: float = Field(default=3.0, gt=0)


class RunConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = "arena"
    questions: Path
    output_dir: Path
    cache: Path | None = None
    endpoints: dict[str, Any] | str
    local_model: str | None = None
    answers: AnswerConfig | None = None
    judge: JudgeConfig | None = None
    show: ShowConfig = Field(default_factory=ShowConfig)
    backoff_base: float = Field(default=1.0, ge=0)
    backoff_max: float = Field(default=60.0, ge=0)

    source: str = "<config>"

    @property
    def cache_path(self) -> Path:
        return self.cache or self.output_dir / "cache.sqlite"

    @property
    def answer_dir(self) -> Path:
        return self.output_dir / "model_answer"

    def judgment_dir(self) -> Path:
        assert self.judge is not None
        return self.output_dir / "model_judgment" / self.judge.endpoint

    def load_endpoints(self, local_base_url: str | None = None) -> dict[str, Endpoint]:
        if isinstance(self.endpoints, str):
            eps = load_endpoints(self.endpoints)
        else:
            eps = parse_endpoints(self.endpoints, source=self.source)
        if any(ep.base_url == LOCAL for ep in eps.values()):
            if local_base_url is None:
                raise InputError("an endpoint uses base_url: local, which needs 'local_model: smollm2'", path=self.source, field="local_model")
            eps = {n: ep.model_copy(update={"base_url": local_base_url}) if ep.base_url == LOCAL else ep for n, ep in eps.items()}
        for section, names in (("answers.models", self.answers.models if self.answers else []),
                               ("judge.endpoint", [self.judge.endpoint] if self.judge else [])):
            for n in names:
                if n not in eps:
                    raise InputError(f"endpoint '{n}' is not declared under endpoints", path=self.source, field=section)
        return eps


def load_run_config(path: str | Path) -> RunConfig:
    raw = read_yaml(path)
    try:
        cfg = RunConfig(**raw, source=str(path))
    except ValidationError as exc:
        raise validation_error(exc, path, model=RunConfig) from None
    if isinstance(cfg.endpoints, dict):
        # checked at load (zero concurrency, negative timeouts, unknown keys), before anything runs
        parse_endpoints(cfg.endpoints, source=cfg.source)
    return cfg
