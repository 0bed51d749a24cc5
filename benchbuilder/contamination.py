"""The freshness and contamination gate: flag prompts whose embedding is close to a prompt of a
known public benchmark or of an earlier curated set.

References are prompt files (arena-hard ``question.jsonl``, MT-bench, AlpacaEval, or any file the
ingest stage reads); by default the four public sets in ``../shared/data/prompts/``. Flagged
prompts are dropped (reason ``contaminated``, with the nearest reference in ``drops.jsonl``) or
kept, as configured; ``contamination.jsonl`` lists every flag with its nearest match and
``contamination.json`` the counts.

The threshold is a cosine similarity of the *un-centred* embeddings of the configured backend.
LMArena uses 0.7 with ``text-embedding-3-small``; our embedders spread similarities differently,
so the default comes from ``bench/contamination_gate.py``: 50 arena-hard v0.1 prompts, lightly
perturbed, seeded into the 9,126 ShareGPT prompts, on a calibration half (ShareGPT prompts that equal a reference verbatim are set apart as true positives), the
threshold is the 99.6th percentile of clean prompts' nearest-reference cosine similarity; edited
copies are caught by the lexical leg (word-set Jaccard >= 0.6 with one of the 5 nearest
references). It is then checked on the other half with 50 fresh perturbations.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from arena.errors import InputError

DEFAULT_REFERENCES = (
    "../shared/data/prompts/arena_hard_v0.1.jsonl",
    "../shared/data/prompts/arena_hard_v2.0.jsonl",
    "../shared/data/prompts/mt_bench_80.jsonl",
    "../shared/data/prompts/alpaca_eval_805.jsonl",
)


# Calibrated by bench/contamination_gate.py (backend: cosine threshold); OpenAI's is LMArena's.
CALIBRATED_THRESHOLDS = {"minilm": 0.712, "model2vec": 0.917, "openai": 0.7}


def nearest_reference(x: np.ndarray, ref: np.ndarray, block: int = 4096, k: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """For each row of ``x``: the ``k`` highest cosine similarities to rows of ``ref`` (best
    first) and those rows' indices; ``k=1`` gives 1-D arrays. Rows are normalised here; a zero
    row (an empty or all-unknown-token text) matches nothing: similarity 0, index -1, never NaN."""
    x = np.asarray(x, dtype=np.float32)
    ref = np.asarray(ref, dtype=np.float32)
    n = len(x)
    kk = max(1, min(k, len(ref)))
    best = np.zeros((n, kk), dtype=np.float32)
    idx = np.full((n, kk), -1, dtype=np.int64)
    if n == 0 or len(ref) == 0:
        return (best[:, 0], idx[:, 0]) if k == 1 else (best, idx)
    xn = np.linalg.norm(x, axis=1)
    rn = np.linalg.norm(ref, axis=1)
    r = np.where(rn[:, None] > 0, ref / np.maximum(rn[:, None], 1e-12), 0.0).astype(np.float32)
    for s in range(0, n, block):
        q = x[s : s + block]
        qn = xn[s : s + block]
        q = np.where(qn[:, None] > 0, q / np.maximum(qn[:, None], 1e-12), 0.0).astype(np.float32)
        sims = q @ r.T
        j = np.argpartition(-sims, kk - 1, axis=1)[:, :kk] if kk < sims.shape[1] else np.tile(np.arange(sims.shape[1]), (len(q), 1))
        v = np.take_along_axis(sims, j, 1)
        o = np.argsort(-v, axis=1, kind="stable")
        j, v = np.take_along_axis(j, o, 1), np.take_along_axis(v, o, 1)
        ok = (qn[:, None] > 0) & (v > 0)
        best[s : s + block] = np.where(ok, v, 0.0)
        idx[s : s + block] = np.where(ok, j, -1)
    return (best[:, 0], idx[:, 0]) if k == 1 else (best, idx)


_WORD = re.compile(r"\w+", re.UNICODE)


def word_set(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


def set_jaccard(wa: frozenset[str], wb: frozenset[str]) -> float:
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0


def word_jaccard(a: str, b: str) -> float:
    """Jaccard similarity of the lower-cased word sets: blind to word order and robust to a few
    dropped words, which is how a copied prompt gets lightly edited."""
    return set_jaccard(word_set(a), word_set(b))


@dataclass
class Reference:
    source: str
    ref_id: str
    text: str


@dataclass
class Flag:
    source_id: str
    similarity: float
    reference: str
    reference_id: str
    reference_text: str
    prompt: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def reference_label(reference: str, reference_id: str) -> str:
    """``file:id`` for a flag's benchmark prompt; ids of files without an id field already are
    ``file:line``, so the file is not named twice."""
    return reference_id if reference_id.startswith(reference + ":") else f"{reference}:{reference_id}"


def load_references(paths: Sequence[str], *, defaults: bool, warn) -> list[Reference]:
    """Prompts of every reference file. A missing file the user named is an error; a missing
    default (the shared data folder is absent) is a warning, and the gate checks the rest."""
    from benchbuilder.ingest import DropLog, IngestOptions, read_prompts

    out: list[Reference] = []
    for p in paths:
        if not Path(p).exists():
            if defaults:
                warn(f"contamination gate: reference {p} not found, skipped")
                continue
            raise InputError("reference file not found", path=p, field="contamination.references")
        for r in read_prompts(p, IngestOptions(), DropLog()):
            out.append(Reference(Path(p).name, r.source_id, r.prompt))
    return out


def flag(ids: Sequence[str], texts: Sequence[str], x: np.ndarray, refs: Sequence[Reference], ref_x: np.ndarray, threshold: float,
         *, lexical: float | None = 0.6, min_words: int = 6, k: int = 5) -> list[Flag]:
    """Prompts whose nearest reference is at least ``threshold`` cosine-similar, or one of whose
    ``k`` nearest references shares at least ``lexical`` of its words (word-set Jaccard, texts of
    at least ``min_words`` words): the lexical leg catches edited copies whose embedding moved
    (number- or code-heavy prompts crowd together in embedding space, so a lower cosine
    threshold would flag unrelated ones instead)."""
    best, idx = nearest_reference(x, ref_x, k=k)
    out: list[Flag] = []
    # word sets made once per prompt and once per reference (not once per pair: at 1M prompts
    # the per-pair tokenising was three quarters of the gate's time)
    ref_words: dict[int, frozenset[str]] = {}
    for i in range(len(ids)):
        hit = 0 if idx[i, 0] >= 0 and best[i, 0] >= threshold else None
        if hit is None and lexical is not None and len(_WORD.findall(texts[i])) >= min_words:
            wa = word_set(texts[i])
            jac = [set_jaccard(wa, ref_words[j] if j in ref_words else ref_words.setdefault(j, word_set(refs[j].text))) if j >= 0 else 0.0 for j in idx[i]]
            m = int(np.argmax(jac))
            hit = m if jac[m] >= lexical else None
        if hit is not None:
            r = refs[idx[i, hit]]
            out.append(Flag(ids[i], round(float(best[i, hit]), 4), r.source, r.ref_id, " ".join(r.text.split())[:300], " ".join(texts[i].split())[:300]))
    return out
