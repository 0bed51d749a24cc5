"""LLM annotation of the seven BenchBuilder qualities, in any number of stages.

Each stage has its own annotator endpoint and thresholds: prompts scoring below
``min_score`` are dropped, and so are whole clusters whose mean score is below
``min_cluster_mean``; the next stage annotates only what survived (Arena-Hard v0.1: GPT-3.5
with score >= 5 and cluster mean >= 3, then GPT-4-Turbo with cluster mean >= 6).

Durability: every result is appended to ``<stage>.jsonl`` as it arrives (``on_result``), the
shared client's content-addressed cache holds every paid answer, and a rerun only asks for
prompts missing from the file, so a killed run resumes without paying twice or writing a
record twice. Failures (API errors after retries) and malformed answers (no parsable
``Criteria Satisfied: [...]``) are recorded as such and re-asked with ``retry=True``.
"""

from __future__ import annotations

import asyncio
import re
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from arena.errors import InputError
from arena.io.jsonl import JsonlAppender, read_jsonl, write_jsonl
from arena.prompts import Template, load_template

CRITERIA = (
    "specificity",
    "domain_knowledge",
    "complexity",
    "problem_solving",
    "creativity",
    "technical_accuracy",
    "real_world",
)
N_CRITERIA = len(CRITERIA)
DEFAULT_TEMPLATE = "benchbuilder_annotate"

_CRITERIA_RE = re.compile(r"criteria[\s*_]*satisfied[\s*_]*[:：]?[\s*_`]*\[([^\[\]]*)\]", re.I)


def parse_criteria(text: str | None) -> list[int] | None:
    """The criteria listed in the *last* ``Criteria Satisfied: [..]`` of ``text``, sorted and
    de-duplicated; ``[]`` is a valid answer (score 0). ``None`` when no such list exists or it
    holds anything but integers 1..7 (a malformed answer, never silently scored)."""
    if not text:
        return None
    matches = _CRITERIA_RE.findall(text)
    if not matches:
        return None
    body = matches[-1].strip()
    if not body:
        return []
    items = [p.strip().strip("'\"") for p in body.split(",") if p.strip()]
    out: set[int] = set()
    for it in items:
        if not re.fullmatch(r"\d+", it):
            return None
        v = int(it)
        if not 1 <= v <= N_CRITERIA:
            return None
        out.add(v)
    return sorted(out)


@dataclass
class Annotation:
    """One prompt's annotation in one stage. ``status``: ok | malformed | failed."""

    source_id: str
    stage: str
    status: str
    criteria: list[int] | None = None
    score: int | None = None
    raw: str | None = None
    error: str | None = None
    repeat: int = 0
    cost: float = 0.0
    cached: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class AnnotationStage:
    name: str
    endpoint: str
    min_score: float = 0.0
    min_cluster_mean: float = 0.0
    template: str = DEFAULT_TEMPLATE
    params: dict[str, Any] = field(default_factory=dict)


def build_request(template: Template, stage: AnnotationStage, source_id: str, prompt: str, repeat: int = 0):
    from arena.llm import ChatRequest

    return ChatRequest(
        endpoint=stage.endpoint,
        messages=[{"role": "system", "content": template.format()}, {"role": "user", "content": prompt}],
        params=stage.params,
        template_version=template.version,
        stage=f"annotate:{stage.name}",
        repeat=repeat,
        meta={"source_id": source_id},
    )


def annotation_from_result(res: Any, stage: str) -> Annotation:
    sid = str(res.request.meta["source_id"])
    if not res.ok:
        return Annotation(sid, stage, "failed", error=res.error, repeat=res.request.repeat, cost=res.cost, cached=res.cached)
    crit = parse_criteria(res.text)
    if crit is None:
        return Annotation(sid, stage, "malformed", raw=res.text, repeat=res.request.repeat, cost=res.cost, cached=res.cached)
    return Annotation(sid, stage, "ok", criteria=crit, score=len(crit), raw=res.text, repeat=res.request.repeat, cost=res.cost, cached=res.cached)


def load_annotations(path: str | Path) -> dict[str, Annotation]:
    """Last record per prompt (the newest wins). Reading never changes the file: a torn final
    line (a kill mid-write) is left out here and cut off only by the next append; a corrupt
    line elsewhere is an :class:`InputError` naming file and line."""
    path = Path(path)
    if not path.exists():
        return {}
    out: dict[str, Annotation] = {}
    for i, rec in read_jsonl(path, torn_tail="skip"):
        sid = rec.get("source_id")
        if sid is not None and (isinstance(sid, bool) or not isinstance(sid, (str, int))):
            # a list or object id would become a different string key: refused, not coerced
            raise InputError(f"source_id must be a string or an integer, got {type(sid).__name__}", path=str(path), line=i, field="source_id")
        try:
            out[str(rec["source_id"])] = Annotation(**rec)
        except (KeyError, TypeError) as exc:
            raise InputError(f"corrupt annotation record: {exc}", path=str(path), line=i) from None
    return out


def _compact(path: Path, records: Mapping[str, Annotation]) -> None:
    """Rewrite the log with one line per prompt (atomically), after retries appended newer
    records for the same prompt."""
    write_jsonl(path, (a.to_dict() for a in records.values()))


@dataclass
class Annotator:
    """Runs one stage over ``{source_id: prompt}`` through the shared ``LLMClient``."""

    client: Any
    stage: AnnotationStage
    out_path: Path
    retry: bool = False

    def plan(self, prompts: Mapping[str, str]) -> tuple[list[Any], dict[str, Annotation]]:
        """Requests still needed, and the annotations already on disk."""
        template = load_template(self.stage.template)
        done = load_annotations(self.out_path)
        reqs = []
        for sid, text in prompts.items():
            prev = done.get(sid)
            if prev is None:
                reqs.append(build_request(template, self.stage, sid, text, 0))
            elif self.retry and prev.status == "malformed":
                # Same request would return the same cached text: ask a fresh sample.
                reqs.append(build_request(template, self.stage, sid, text, prev.repeat + 1))
            elif self.retry and prev.status == "failed":
                reqs.append(build_request(template, self.stage, sid, text, prev.repeat))
        return reqs, done

    async def arun(self, prompts: Mapping[str, str], progress: Callable[[Any], None] | None = None) -> dict[str, Annotation]:
        reqs, done = self.plan(prompts)
        self.requests_ = len(reqs)
        self.out_path.parent.mkdir(parents=True, exist_ok=True)
        if reqs:
            with JsonlAppender(self.out_path) as f:  # cuts a torn tail left by a kill

                def on_result(res: Any) -> None:
                    a = annotation_from_result(res, self.stage.name)
                    f.append(a.to_dict())
                    done[a.source_id] = a

                await self.client.chat_many(reqs, on_result=on_result, progress=progress)
            _compact(self.out_path, done)
        return {sid: done[sid] for sid in prompts if sid in done}

    def run(self, prompts: Mapping[str, str], progress: Callable[[Any], None] | None = None) -> dict[str, Annotation]:
        return asyncio.run(self.arun(prompts, progress))


def cluster_means(scores: Mapping[str, float], clusters: Mapping[str, int]) -> dict[int, float]:
    """Mean score per cluster over the prompts that have a score."""
    acc: dict[int, list[float]] = defaultdict(list)
    for sid, s in scores.items():
        if sid in clusters:
            acc[clusters[sid]].append(float(s))
    return {c: sum(v) / len(v) for c, v in acc.items()}


def apply_thresholds(annotations: Mapping[str, Annotation], clusters: Mapping[str, int], stage: AnnotationStage) -> tuple[list[str], dict[int, float], dict[str, int]]:
    """Survivors of a stage: status ok, score >= ``min_score``, in a cluster whose mean score
    (over all its annotated prompts in this stage) is >= ``min_cluster_mean``.
    Returns (kept ids, cluster means, drop counts by reason)."""
    ok = {sid: a.score for sid, a in annotations.items() if a.status == "ok"}
    means = cluster_means(ok, clusters)
    kept, drops = [], defaultdict(int)
    for sid, a in annotations.items():
        if a.status != "ok":
            drops[f"{a.status}"] += 1
        elif a.score < stage.min_score:
            drops["low_score"] += 1
        elif means.get(clusters.get(sid, -1), 0.0) < stage.min_cluster_mean:
            drops["low_cluster_mean"] += 1
        else:
            kept.append(sid)
    return kept, means, dict(drops)


# ----------------------------------------------------------------------------- validation
def majority_vote(votes: Sequence[Sequence[int]]) -> set[int]:
    """Criteria listed by more than half of the annotators (a tie is not a majority)."""
    n = len(votes)
    counts = defaultdict(int)
    for v in votes:
        for c in set(v):
            counts[c] += 1
    return {c for c, k in counts.items() if k * 2 > n}


def annotator_accuracy(target: Mapping[str, Sequence[int]], others: Sequence[Mapping[str, Sequence[int]]]) -> dict[str, Any]:
    """Agreement of one annotator with the majority vote of ``others`` (the paper: GPT-4-Turbo
    vs a GPT-4o / Claude-3-Opus / Gemini-1.5-Pro majority, 85.6%).

    Over prompts that every annotator labelled: accuracy per criterion (binary agreement),
    overall accuracy (all prompt x criterion decisions) and exact match of the whole set.
    """
    common = [sid for sid in target if all(sid in o for o in others)]
    if not common or not others:
        raise ValueError("no prompt was annotated by the target and every other annotator")
    per = {name: 0 for name in CRITERIA}
    exact = 0
    for sid in common:
        maj = majority_vote([o[sid] for o in others])
        mine = set(target[sid])
        exact += mine == maj
        for i, name in enumerate(CRITERIA, 1):
            per[name] += (i in mine) == (i in maj)
    n = len(common)
    return {
        "n_prompts": n,
        "n_others": len(others),
        "per_criterion": {k: v / n for k, v in per.items()},
        "overall": sum(per.values()) / (n * N_CRITERIA),
        "exact_match": exact / n,
    }


def ok_criteria(annotations: Iterable[Annotation]) -> dict[str, list[int]]:
    return {a.source_id: list(a.criteria or []) for a in annotations if a.status == "ok"}
