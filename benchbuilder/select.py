"""Even sampling across clusters and the arena-hard ``question.jsonl`` writer."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from arena.errors import InputError
from arena.io.jsonl import write_jsonl


@dataclass
class Candidate:
    source_id: str
    prompt: str
    cluster: int
    score: int | None = None
    criteria: Sequence[int] | None = None
    source: str | None = None


def sample_evenly(candidates: Sequence[Candidate], n: int, rng: np.random.Generator, *, prefer_high_score: bool = True) -> list[Candidate]:
    """Round-robin over clusters in random order, one prompt per cluster per round, until ``n``
    are drawn or every cluster is exhausted; within a cluster prompts are taken by descending
    score (random tie-break) or uniformly at random. Cluster counts thus differ by at most one
    wherever clusters are large enough (v0.1: 500 prompts = 2 x 250 clusters)."""
    by_cluster: dict[int, list[Candidate]] = defaultdict(list)
    for c in candidates:
        by_cluster[c.cluster].append(c)
    queues = {}
    for cl, items in by_cluster.items():
        order = rng.permutation(len(items))
        items = [items[i] for i in order]
        if prefer_high_score:
            items.sort(key=lambda c: -(c.score or 0))  # stable: keeps the random order among ties
        queues[cl] = items
    cluster_order = [sorted(queues)[i] for i in rng.permutation(len(queues))]
    out: list[Candidate] = []
    depth = 0
    while len(out) < n and any(len(q) > depth for q in queues.values()):
        for cl in cluster_order:
            if len(out) >= n:
                break
            if len(queues[cl]) > depth:
                out.append(queues[cl][depth])
        depth += 1
    return out


def question_id(source_id: str, prompt: str) -> str:
    """Stable id from the source id and text (32 hex, like arena-hard's uuid hex ids)."""
    return hashlib.sha256(f"{source_id}\x00{prompt}".encode("utf-8")).hexdigest()[:32]


def question_record(c: Candidate, labels: Mapping[int, str], category: str | None, categories: Mapping[int, str] | None = None) -> dict[str, Any]:
    """Arena-hard v0.1 question schema plus BenchBuilder fields. ``category`` is the fixed
    category when given, else the broad category of the prompt's topic (``categories``), as in
    arena-hard v2.0, where ``subcategory`` names the topic."""
    topic = labels.get(c.cluster, str(c.cluster))
    return {
        "question_id": question_id(c.source_id, c.prompt),
        "category": category or (categories or {}).get(c.cluster) or "benchbuilder",
        "subcategory": topic,
        "cluster": topic,
        "turns": [{"content": c.prompt}],
        "cluster_id": int(c.cluster),
        "score": c.score,
        "criteria": list(c.criteria) if c.criteria is not None else None,
        "source_id": c.source_id,
        "source": c.source,
    }


def write_questions(path: str | Path, selected: Sequence[Candidate], labels: Mapping[int, str], category: str | None = "benchbuilder", categories: Mapping[int, str] | None = None) -> Path:
    """Write the selected prompts atomically; an empty selection is an error, never an empty
    file over an earlier one."""
    path = Path(path)
    if not selected:
        raise InputError("no prompt was selected; the earlier question file was left as it was", path=str(path))
    write_jsonl(path, (question_record(c, labels, category, categories) for c in selected))
    return path
