"""Prompt filters: language identification and exact / near-duplicate removal.

Each filter is a small object with ``apply(records, drops) -> kept records``; every removed
prompt is logged in the :class:`~benchbuilder.ingest.DropLog` with its reason and location.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np

from benchbuilder.ingest import DropLog, PromptRecord

MAJOR_LANGUAGES = (
    "en", "zh", "es", "fr", "de", "ru", "ja", "ko", "pt", "it", "nl", "pl", "tr", "ar", "fa", "he", "hi",
    "id", "vi", "th", "uk", "cs", "sv", "da", "no", "fi", "el", "hu", "ro", "bg", "ca",
)
_WS = re.compile(r"\s+")
_WORD = re.compile(r"\w+", re.UNICODE)
# Code, URLs and numbers carry no language signal and make langid guess wildly.
_CODEISH = re.compile(r"```.*?```|`[^`]*`|https?://\S+|[{}\[\]();<>=_#*/\\|0-9]+", re.S)


class Filter(Protocol):
    def apply(self, records: list[PromptRecord], drops: DropLog) -> list[PromptRecord]: ...


def normalize(text: str) -> str:
    return _WS.sub(" ", text.strip().lower())


@dataclass
class LanguageFilter:
    """Keep prompts whose language (py3langid, offline naive Bayes over byte n-grams, restricted
    to ``candidates``) is in ``keep``. Code and digits are stripped before classification;
    prompts with fewer than ``min_letters`` letters left (pure code, numbers) or a posterior
    below ``min_confidence`` are kept rather than guessed at."""

    keep: tuple[str, ...] = ("en",)
    candidates: tuple[str, ...] = MAJOR_LANGUAGES
    min_confidence: float = 0.9
    max_chars: int = 600
    min_letters: int = 20

    def __post_init__(self):
        from py3langid.langid import MODEL_FILE, LanguageIdentifier

        self._ident = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        # Restricting to languages users actually write in stops short English prompts being
        # read as Nigerian Pidgin, Latin or Ligurian (seen on ShareGPT: "How do I make pasta fagioli?").
        if self.candidates:
            self._ident.set_languages(list(dict.fromkeys([*self.candidates, *self.keep])))

    def language(self, text: str) -> str | None:
        t = _CODEISH.sub(" ", text[: self.max_chars])
        if sum(c.isalpha() for c in t) < self.min_letters:
            return None
        lang, prob = self._ident.classify(t)
        # Unsure calls keep the prompt: a wrongly kept prompt costs one annotation, a wrongly
        # dropped one is lost for good.
        return lang if prob >= self.min_confidence else None

    def apply(self, records: list[PromptRecord], drops: DropLog) -> list[PromptRecord]:
        out = []
        for r in records:
            lang = self.language(r.prompt)
            if lang is None or lang in self.keep:
                out.append(r)
            else:
                drops.add("language", r.source, r.line, r.source_id, lang)
        return out


@dataclass
class ExactDedup:
    """Drop prompts equal to an earlier one after lower-casing and collapsing whitespace."""

    def apply(self, records: list[PromptRecord], drops: DropLog) -> list[PromptRecord]:
        seen: dict[str, PromptRecord] = {}
        out = []
        for r in records:
            h = hashlib.sha256(normalize(r.prompt).encode("utf-8")).hexdigest()
            first = seen.get(h)
            if first is not None:
                drops.add("duplicate", r.source, r.line, r.source_id, f"same as {first.source_id}")
                continue
            seen[h] = r
            out.append(r)
        return out


def word_shingles(text: str, k: int) -> list[bytes]:
    words = _WORD.findall(text.lower())
    if len(words) <= k:
        return [" ".join(words).encode()] if words else []
    return [" ".join(words[i : i + k]).encode() for i in range(len(words) - k + 1)]


@dataclass
class MinHashDedup:
    """Near-duplicate removal: MinHash over word ``shingle``-grams with LSH (datasketch) at
    Jaccard ``threshold``; the first prompt of each near-duplicate group is kept.

    Candidates from LSH are confirmed with the MinHash Jaccard estimate so the band structure's
    false positives do not drop distinct prompts.
    """

    threshold: float = 0.8
    num_perm: int = 128
    shingle: int = 5
    max_chars: int = 20000
    seed: int = 1

    def apply(self, records: list[PromptRecord], drops: DropLog) -> list[PromptRecord]:
        from datasketch import MinHash, MinHashLSH

        lsh = MinHashLSH(threshold=self.threshold, num_perm=self.num_perm)
        kept_mh: dict[str, MinHash] = {}
        out = []
        for i, r in enumerate(records):
            sh = word_shingles(r.prompt[: self.max_chars], self.shingle)
            mh = MinHash(num_perm=self.num_perm, seed=self.seed)
            if sh:
                mh.update_batch(sh)
            dup_of = None
            for key in lsh.query(mh):
                if kept_mh[key].jaccard(mh) >= self.threshold:
                    dup_of = key
                    break
            if dup_of is not None:
                drops.add("near_duplicate", r.source, r.line, r.source_id, f"near {records[int(dup_of)].source_id}")
                continue
            key = str(i)
            lsh.insert(key, mh)
            kept_mh[key] = mh
            out.append(r)
        return out


def embedding_near_duplicates(x: np.ndarray, threshold: float = 0.95, block: int = 2048) -> np.ndarray:
    """Indices (into ``x``, rows L2-normalised) of rows whose cosine similarity to an earlier
    kept row is >= ``threshold``; blockwise so memory stays O(block * n)."""
    n = len(x)
    dup = np.zeros(n, dtype=bool)
    for start in range(0, n, block):
        sims = x[start : start + block] @ x.T
        for j in range(sims.shape[0]):
            i = start + j
            if dup[i]:
                continue
            later = np.nonzero(sims[j, i + 1 :] >= threshold)[0] + i + 1
            dup[later] = True
    return np.nonzero(dup)[0]


def run_filters(records: list[PromptRecord], filters: Sequence[Filter], drops: DropLog) -> list[PromptRecord]:
    for f in filters:
        records = f.apply(records, drops)
    return records
