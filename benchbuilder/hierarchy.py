"""Two levels of topics, as LMArena's Arena Explorer shows them: broad categories over the
BERTopic topics, and keyword labels chosen by meaning rather than by frequency alone.

Everything here is a pure function over arrays: the topic model passes centroids, sizes,
candidate words and their embeddings in, and gets assignments and words back.

* **Categories** cluster the topic centroids with size-weighted k-means on unit vectors
  (spherical k-means, so Euclidean distance orders like cosine), for every ``k`` in the
  configured range, and keep the ``k`` with the best cosine silhouette. Weighting by size keeps a
  crowd of tiny topics from claiming a category of their own.
* **Keywords** are KeyBERT-style: the top c-TF-IDF words are the candidates, and maximal
  marginal relevance (MMR) over their embeddings picks words near the topic's centroid and
  unlike each other. Frequency alone put conversational filler ("um / uh / thats") and
  near-synonyms ("python / code / script") into labels.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

# Conversational filler and apostrophe-less contractions: scikit-learn's English stop list has
# "that" but not "thats", and none of the fillers that transcribed speech is full of.
FILLER_WORDS = frozenset(
    """um umm uh uhh uhm hmm mm ah oh eh er erm yeah yep yup nope ok okay alright hey hi hello
    thanks thank thx pls plz lol haha gonna wanna gotta kinda sorta like just really actually
    basically literally thats dont doesnt didnt isnt arent wasnt werent cant couldnt wouldnt
    shouldnt wont im ive id ill youre youve youd youll hes shes theyre theyve weve were lets
    whats theres heres wheres hows whos""".split()
)


def unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def _stem(word: str) -> str:
    """Crude English stem: "-ings/-ing/-es" off when 4 letters remain, a plural "-s" when 3 do
    ("apis" -> "api", "apps" -> "app"; "-ss" is no plural)."""
    w = word.lower()
    for suf in ("ings", "ing", "es", "s"):
        if len(w) >= len(suf) + (3 if suf == "s" else 4) and w.endswith(suf) and not w.endswith("ss"):
            return w[: -len(suf)]
    return w


def _variant(a: str, b: str) -> bool:
    """Same stem, or a shared prefix of at least 4 letters covering 70% of the shorter word
    ("file" / "fileformat", "time20230113" / "time20230114")."""
    if a == b:
        return True
    k = len(os.path.commonprefix([a, b]))
    return k >= 4 and k >= 0.7 * min(len(a), len(b))


def mmr(target: np.ndarray, cand: np.ndarray, n: int, diversity: float = 0.15, words: Sequence[str] | None = None) -> list[int]:
    """Indices of ``n`` candidates by maximal marginal relevance (Carbonell & Goldstein 1998, as
    KeyBERT uses it): each step takes the candidate maximising ``(1 - diversity) * sim(target)
    - diversity * max sim(already chosen)``. Zero vectors (unknown words) are never chosen
    while another candidate is left; with ``words``, inflections of a chosen word ("file",
    "files") are skipped, which the similarity term alone only discourages."""
    if len(cand) == 0 or n <= 0:
        return []
    c = unit(cand)
    rel = c @ unit(target)
    known = np.linalg.norm(cand, axis=1) > 0
    rel = np.where(known, rel, -np.inf)
    stems = [_stem(w) for w in words] if words is not None else None
    chosen = [int(np.argmax(rel))]
    pair = c @ c.T
    blocked = np.zeros(len(cand), dtype=bool)
    while len(chosen) < min(n, len(cand)):
        if stems is not None:
            last = stems[chosen[-1]]
            blocked |= np.array([_variant(s, last) for s in stems])
        score = (1 - diversity) * rel - diversity * pair[:, chosen].max(axis=1)
        score[chosen] = -np.inf
        score[blocked] = -np.inf
        nxt = int(np.argmax(score))
        if not np.isfinite(score[nxt]):
            break
        chosen.append(nxt)
    return chosen


def category_range(n_topics: int, lo: int, hi: int) -> range:
    """The category counts to try: ``lo..hi``, but at most half the topics (a category holds two
    topics on average or more) and at least two categories."""
    top = min(hi, n_topics // 2)
    return range(max(2, min(lo, top)), top + 1)


@dataclass
class Categories:
    """``of_topic[t]``: the category of topic ``t``; ``centroids``: one unit vector per category;
    ``silhouette``: per tried ``k``."""

    of_topic: dict[int, int]
    centroids: np.ndarray
    silhouette: dict[int, float] = field(default_factory=dict)

    @property
    def k(self) -> int:
        return len(self.centroids)

    def members(self) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {c: [] for c in range(self.k)}
        for t, c in sorted(self.of_topic.items()):
            out[c].append(t)
        return out


def group_topics(topic_ids: Sequence[int], centroids: np.ndarray, sizes: Sequence[int], *, lo: int = 8, hi: int = 25, seed: int = 0) -> Categories:
    """Cluster topic centroids into broad categories (see the module docstring). Categories are
    numbered by total size, largest first, so ids are stable for a given input."""
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    ids = [int(t) for t in topic_ids]
    x = unit(centroids)
    w = np.asarray(sizes, dtype=np.float64)
    ks = category_range(len(ids), lo, hi)
    if len(ks) == 0:  # one or three topics or fewer: one category holds them all
        return Categories({t: 0 for t in ids}, unit((x * w[:, None]).sum(axis=0, keepdims=True)) if len(ids) else np.zeros((0, x.shape[1])))
    best, scores = None, {}
    for k in ks:
        lab = KMeans(n_clusters=k, n_init=4, random_state=seed).fit(x, sample_weight=w).labels_
        scores[k] = float(silhouette_score(x, lab, metric="cosine")) if len(set(lab)) > 1 else -1.0
        if best is None or scores[k] > scores[best[0]]:
            best = (k, lab)
    _, lab = best
    total = np.bincount(lab, weights=w)
    # renumber: largest category first (ties by smallest member topic id, deterministic)
    order = sorted(set(lab.tolist()), key=lambda c: (-total[c], min(i for i, l in zip(ids, lab) if l == c)))
    new = {c: i for i, c in enumerate(order)}
    of_topic = {t: new[int(l)] for t, l in zip(ids, lab)}
    cents = np.vstack([unit((x[lab == c] * w[lab == c, None]).sum(axis=0)) for c in order])
    return Categories(of_topic, cents, scores)


def pooled_term_scores(rows, weights: Sequence[float]) -> np.ndarray:
    """A category's term scores from its topics' c-TF-IDF rows (dense or scipy sparse): each row
    scaled to unit sum and weighted by topic size (a big topic speaks for more prompts)."""
    import scipy.sparse as sp

    m = sp.csr_matrix(rows, dtype=np.float64)
    s = np.asarray(m.sum(axis=1)).ravel()
    w = np.asarray(weights, dtype=np.float64) / np.maximum(s, 1e-12)
    return np.asarray(m.T @ w).ravel()
