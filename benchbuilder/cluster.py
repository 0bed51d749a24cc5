"""Topic clustering: BERTopic over precomputed embeddings (UMAP reduction, HDBSCAN clustering,
c-TF-IDF keywords), outlier reduction, and distinct topic labels.

:class:`TopicModel` follows scikit-learn: parameters and collaborators in ``__init__``
(``reducer``, ``clusterer``, ``labeller``, ``vectorizer``), learning in ``fit``, learned state
with a trailing underscore. For large corpora ``fit_sample`` fits BERTopic on a random sample
and assigns every other prompt by a similarity-weighted vote of its nearest fitted prompts,
which keeps 200k prompts within minutes and a few GB.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

from arena.io.jsonl import read_jsonl, write_json, write_jsonl

import numpy as np
import pandas as pd

OUTLIER = -1


def top_k_numpy(sim: np.ndarray, k: int) -> np.ndarray:
    """Column indices of each row's ``k`` largest entries, largest first: ``argpartition`` plus a
    stable sort of the k. The reference for :func:`top_k`, and its fallback without torch."""
    part = np.argpartition(-sim, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(sim, part, 1), axis=1, kind="stable")
    return np.take_along_axis(part, order, 1)


def top_k_selector() -> Callable[[np.ndarray, int], np.ndarray]:
    """The row-wise top-k: ``torch.topk`` when torch is installed (it comes with
    sentence-transformers), else :func:`top_k_numpy`. NumPy's ``argpartition`` is a
    single-threaded introselect over all 50k columns. It was most of the local engine's
    assignment time at 1M prompts: ~10x slower than ``torch.topk`` on a 2048 x 50k block, 5.4x for
    the whole search with its matrix products (``bench/topic_assign.py``). Among exactly equal
    similarities the two may keep different members; every engine uses this one choice. Resolved
    once per search, not per block: a failed import is not cached and would search again."""
    try:
        import torch
    except ImportError:
        return top_k_numpy
    return lambda sim, k: torch.topk(torch.from_numpy(np.ascontiguousarray(sim)), k, dim=1, largest=True, sorted=True).indices.numpy()


def top_k(sim: np.ndarray, k: int) -> np.ndarray:
    """As :func:`top_k_numpy`, by :func:`top_k_selector`'s choice."""
    return top_k_selector()(sim, k)


def exact_cosine_knn(x: np.ndarray, k: int, *, queries: np.ndarray | None = None, block: int = 2048, exclude_self: bool = False,
                     select: Callable[[np.ndarray, int], np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact k nearest neighbours by cosine distance (rows of ``x`` L2-normalised), blockwise
    matrix products (BLAS) plus a row-wise top-k (``select``, default :func:`top_k_selector`'s);
    memory O(block * n).

    Hand-written because pynndescent's approximate search spends ~30 s per fresh process in
    numba compilation, more than exact search costs for the sizes we fit on (<= 50k rows).
    """
    q = x if queries is None else queries
    n = len(q)
    kk = min(k + (1 if exclude_self else 0), len(x))
    idx = np.empty((n, kk), dtype=np.int64)
    dist = np.empty((n, kk), dtype=np.float32)
    select = select or top_k_selector()
    for s in range(0, n, block):
        sim = q[s : s + block] @ x.T
        top = select(sim, kk)
        idx[s : s + block] = top
        dist[s : s + block] = 1.0 - np.take_along_axis(sim, top, 1)
    return idx, np.maximum(dist, 0.0)


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)).astype(np.float32)


class ExactKNNUMAP:
    """Reducer: PCA to ``pca_dims`` -> exact cosine kNN graph -> UMAP layout on that graph
    (``precomputed_knn``), ``n_epochs`` optimisation epochs.

    Same UMAP objective as BERTopic's default reducer; the kNN graph is exact instead of
    approximate, and the layout runs 200 epochs instead of the 500 UMAP picks below 10k points.
    ``project(x)`` maps rows into the space the kNN graph was built in (used to assign prompts
    not in the fitted sample).
    """

    def __init__(self, n_neighbors: int = 15, n_components: int = 5, min_dist: float = 0.0, pca_dims: int | None = 64, n_epochs: int = 200, seed: int = 0):
        self.n_neighbors = n_neighbors
        self.n_components = n_components
        self.min_dist = min_dist
        self.pca_dims = pca_dims
        self.n_epochs = n_epochs
        self.seed = seed

    def project(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float32)
        if self.pca_ is not None:
            x = self.pca_.transform(x)
        return _unit(x)

    def fit_transform(self, x: np.ndarray, y: Any = None) -> np.ndarray:
        from sklearn.decomposition import PCA
        from umap import UMAP

        x = np.asarray(x, dtype=np.float32)
        self.pca_ = None
        if self.pca_dims and x.shape[1] > self.pca_dims and len(x) > self.pca_dims:
            self.pca_ = PCA(self.pca_dims, random_state=self.seed).fit(x)
        self.fit_space_ = self.project(x)
        idx, dist = exact_cosine_knn(self.fit_space_, self.n_neighbors)
        self.umap_ = UMAP(
            n_neighbors=self.n_neighbors, n_components=self.n_components, min_dist=self.min_dist, metric="cosine",
            n_epochs=self.n_epochs, random_state=self.seed, precomputed_knn=(idx, dist, None), low_memory=True,
        )
        self.embedding_ = self.umap_.fit_transform(self.fit_space_)
        return self.embedding_


@dataclass
class UMAPParams:
    """Reducer settings. ``kind: exact_knn`` (default, :class:`ExactKNNUMAP`) or ``umap``
    (umap-learn as BERTopic uses it, approximate kNN, supports ``transform``)."""

    kind: str = "exact_knn"
    n_neighbors: int = 15
    n_components: int = 5
    min_dist: float = 0.0
    metric: str = "cosine"
    pca_dims: int | None = 64
    n_epochs: int | None = 200

    def build(self, seed: int):
        if self.kind == "exact_knn":
            return ExactKNNUMAP(self.n_neighbors, self.n_components, self.min_dist, self.pca_dims, self.n_epochs or 200, seed)
        if self.kind != "umap":
            raise ValueError(f"unknown reducer kind '{self.kind}' (exact_knn | umap)")
        from umap import UMAP

        # A fixed random_state makes UMAP single-threaded; reproducibility is worth more here.
        return UMAP(n_neighbors=self.n_neighbors, n_components=self.n_components, min_dist=self.min_dist, metric=self.metric, n_epochs=self.n_epochs, low_memory=True, random_state=seed)


@dataclass
class HDBSCANParams:
    """HDBSCAN settings. Defaults (``leaf`` selection, ``min_samples=5``) were tuned on the
    9,126 ShareGPT prompts: ``eom`` collapsed static-embedding runs into one cluster holding
    99% of prompts, ``leaf`` gave ~100 topics with none above 3% (see bench/curate_speed.py)."""

    min_cluster_size: int = 15
    min_samples: int | None = 5
    cluster_selection_method: str = "leaf"
    cluster_selection_epsilon: float = 0.0
    max_cluster_size: int = 0

    def build(self):
        from hdbscan import HDBSCAN

        return HDBSCAN(
            min_cluster_size=self.min_cluster_size, min_samples=self.min_samples, metric="euclidean",
            cluster_selection_method=self.cluster_selection_method, cluster_selection_epsilon=self.cluster_selection_epsilon,
            max_cluster_size=self.max_cluster_size, prediction_data=False, core_dist_n_jobs=1,
        )


class Labeller(Protocol):
    """Names topics; ``label(keywords, examples) -> {topic: label}`` (labels need not be distinct;
    :func:`distinct_labels` makes them so)."""

    def label(self, keywords: dict[int, list[str]], examples: dict[int, list[str]]) -> dict[int, str]: ...


@dataclass
class KeywordLabeller:
    """Offline labels: the top ``n_words`` c-TF-IDF keywords of each topic."""

    n_words: int = 4

    def label(self, keywords: dict[int, list[str]], examples: dict[int, list[str]]) -> dict[int, str]:
        return {t: " / ".join(kw[: self.n_words]) for t, kw in keywords.items()}


@dataclass
class LLMLabeller:
    """Topic names from an LLM (template ``benchbuilder_cluster_label``) through the shared
    client; a failed or unparsable reply falls back to the keyword label."""

    client: Any
    endpoint: str
    template: str = "benchbuilder_cluster_label"
    n_examples: int = 5
    example_chars: int = 300
    stage: str = "cluster_label"

    def label(self, keywords: dict[int, list[str]], examples: dict[int, list[str]]) -> dict[int, str]:
        import asyncio
        import re

        from arena.llm import ChatRequest
        from arena.prompts import load_template

        tpl = load_template(self.template)
        topics = sorted(keywords)
        reqs = [
            ChatRequest(
                endpoint=self.endpoint,
                messages=[{"role": "user", "content": tpl.format(
                    keywords=", ".join(keywords[t][:10]),
                    examples="\n".join(f"- {' '.join(e.split())[: self.example_chars]}" for e in examples.get(t, [])[: self.n_examples]),
                )}],
                template_version=tpl.version, stage=self.stage, meta={"topic": t},
            )
            for t in topics
        ]

        async def run():
            try:
                return await self.client.chat_many(reqs)
            finally:
                await self.client.aclose()

        fallback = KeywordLabeller().label(keywords, examples)
        out = {}
        for t, res in zip(topics, asyncio.run(run())):
            m = re.search(r"topic\s*:\s*(.+)", res.text or "", re.I) if res.ok else None
            name = m.group(1).strip().strip("\"'*.").strip() if m else ""
            out[t] = name[:80] if name else fallback[t]
        return out


def distinct_labels(labels: dict[int, str], keywords: dict[int, list[str]]) -> dict[int, str]:
    """Make labels pairwise distinct (case-insensitive): a repeated label gets the first of its
    topic's keywords not already in it, then the topic id as a last resort."""
    out: dict[int, str] = {}
    used: set[str] = set()
    for t in sorted(labels):
        lab = labels[t].strip() or f"topic {t}"
        if lab.lower() in used:
            for kw in keywords.get(t, []):
                cand = f"{lab} ({kw})"
                if kw.lower() not in lab.lower() and cand.lower() not in used:
                    lab = cand
                    break
            else:
                lab = f"{lab} #{t}"
        used.add(lab.lower())
        out[t] = lab
    return out


@dataclass
class ClusterStats:
    n_prompts: int
    n_topics: int
    outlier_share_before: float
    outlier_share_after: float
    largest_share: float
    labels_distinct: bool
    seconds_reduce_cluster: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class VoteAssigner:
    """Topics for prompts outside the fitted sample: a similarity-weighted vote of their ``k``
    nearest fitted prompts (exact cosine kNN in the reducer's input space); a prompt whose
    neighbours are all outliers stays an outlier. Plain arrays and the fitted PCA only, so it
    pickles to Ray workers and gives each row the same topic in any block split."""

    space: np.ndarray
    fit_topics: np.ndarray
    k: int = 10
    pca: Any = None

    @classmethod
    def from_reducer(cls, reducer: Any, x_fit: np.ndarray, fit_topics: np.ndarray, k: int) -> "VoteAssigner":
        if hasattr(reducer, "fit_space_"):
            return cls(reducer.fit_space_, fit_topics, k, reducer.pca_)
        return cls(_unit(np.asarray(x_fit, dtype=np.float32)), fit_topics, k)

    def assign(self, x: np.ndarray) -> np.ndarray:
        if len(x) == 0:
            return np.zeros(0, dtype=int)
        q = np.asarray(x, dtype=np.float32)
        if self.pca is not None:
            q = self.pca.transform(q)
        q = _unit(q)
        nb, dist = exact_cosine_knn(self.space, self.k, queries=q)
        labels = self.fit_topics[nb] + 1  # shift so outliers are bin 0
        w = (1.0 - dist).clip(min=1e-6)
        votes = np.zeros((len(q), int(self.fit_topics.max()) + 2), dtype=np.float32)
        np.add.at(votes, (np.repeat(np.arange(len(q)), nb.shape[1]), labels.ravel()), w.ravel())
        votes[:, 0] = 0.0
        best = votes.argmax(axis=1)
        return np.where(votes[np.arange(len(q)), best] > 0, best - 1, OUTLIER)


@dataclass
class TopicModel:
    """BERTopic (UMAP -> HDBSCAN -> c-TF-IDF) on given embeddings, plus outlier reduction.

    ``outlier_strategy``: ``"embeddings"`` assigns each outlier to the topic whose centroid is
    most cosine-similar (BERTopic's ``reduce_outliers``), ``"none"`` keeps them as topic -1.
    ``fit_sample``: fit on this many randomly drawn prompts, ``transform`` the rest.
    """

    umap: UMAPParams = field(default_factory=UMAPParams)
    hdbscan: HDBSCANParams = field(default_factory=HDBSCANParams)
    outlier_strategy: str = "embeddings"
    outlier_threshold: float = 0.0
    fit_sample: int | None = None
    top_n_words: int = 10
    labeller: Labeller | None = None
    seed: int = 0
    n_examples: int = 5
    assign_k: int = 10
    # KeyBERT-style keywords: the top ``n_candidates`` c-TF-IDF words reordered by MMR over
    # their embeddings (``embed_words``, the run's own embedder); without it, c-TF-IDF order
    n_candidates: int = 30
    mmr_diversity: float = 0.15
    embed_words: Callable[[list[str]], np.ndarray] | None = None
    # broad categories over the topics (benchbuilder/hierarchy.py); None: no second level
    categories: tuple[int, int] | None = (8, 25)
    category_labeller: Labeller | None = None

    def _bertopic(self):
        from bertopic import BERTopic
        from bertopic.vectorizers import ClassTfidfTransformer
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer

        from benchbuilder.hierarchy import FILLER_WORDS

        return BERTopic(
            umap_model=self.umap.build(self.seed),
            hdbscan_model=self.hdbscan.build(),
            # No min_df: c-TF-IDF counts over one document per *topic*, so min_df=2 would delete
            # exactly the words unique to a topic. Tokens of 26+ characters (paths, hashes,
            # identifiers glued together) are no words anyone would label a topic with.
            vectorizer_model=CountVectorizer(stop_words=sorted(ENGLISH_STOP_WORDS | FILLER_WORDS), max_features=50_000, token_pattern=r"(?u)\b[a-zA-Z][a-zA-Z0-9_+#-]{1,24}\b"),
            ctfidf_model=ClassTfidfTransformer(reduce_frequent_words=True),
            top_n_words=self.n_candidates,
            min_topic_size=self.hdbscan.min_cluster_size,
            calculate_probabilities=False,
        )

    def sample_index(self, n: int) -> np.ndarray | None:
        """The prompts BERTopic is fitted on (sorted), or ``None`` to fit on all ``n``."""
        if self.fit_sample and n > self.fit_sample:
            return np.sort(np.random.default_rng(self.seed).choice(n, size=self.fit_sample, replace=False))
        return None

    def fit_sample_model(self, docs: Sequence[str], embeddings: np.ndarray) -> tuple[Any, np.ndarray, "VoteAssigner"]:
        """Fit BERTopic on these prompts: ``(model, their topics, an assigner for the rest)``."""
        model = self._bertopic()
        topics, _ = model.fit_transform(list(docs), embeddings)
        topics = np.asarray(topics, dtype=int)
        return model, topics, VoteAssigner.from_reducer(model.umap_model, embeddings, topics, self.assign_k)

    def fit(self, docs: Sequence[str], embeddings: np.ndarray) -> "TopicModel":
        docs = list(docs)
        n = len(docs)
        if n != len(embeddings):
            raise ValueError(f"{n} documents but {len(embeddings)} embeddings")
        t0 = time.perf_counter()
        fit_rows, rest = self.plan(embeddings)
        model, fit_topics, assigner = self.fit_sample_model([docs[i] for i in fit_rows], embeddings[fit_rows])
        topics = np.full(n, OUTLIER, dtype=int)
        topics[fit_rows] = fit_topics
        for s in range(0, len(rest), 8192):
            topics[rest[s : s + 8192]] = assigner.assign(embeddings[rest[s : s + 8192]])
        return self.finish(model, docs, embeddings, topics, t0)

    def plan(self, embeddings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(rows BERTopic is fitted on, rows assigned afterwards)``. Rows with a zero vector (a
        text made only of tokens the embedder does not know) are in neither: they stay topic -1,
        "outliers", rather than being placed by a meaningless direction."""
        usable = np.flatnonzero(np.linalg.norm(embeddings, axis=1) > 0)
        idx = self.sample_index(len(usable))
        if idx is None:
            return usable, np.zeros(0, dtype=int)
        return usable[idx], np.setdiff1d(usable, usable[idx])

    def finish(self, model: Any, docs: list[str], embeddings: np.ndarray, topics: np.ndarray, t0: float) -> "TopicModel":
        """Outlier reduction, keywords over the final assignment, examples and labels (on every
        prompt; the Ray engine calls this on the driver after assigning blocks remotely)."""
        self.outlier_share_before_ = float(np.mean(topics == OUTLIER))
        if self.outlier_strategy != "none" and (topics == OUTLIER).any() and (topics != OUTLIER).any():
            topics = self._reduce_outliers(topics, embeddings)
        # c-TF-IDF keywords over the final assignment (BERTopic's update_topics).
        model.update_topics(docs, topics=topics.tolist(), top_n_words=self.n_candidates, vectorizer_model=model.vectorizer_model, ctfidf_model=model.ctfidf_model)
        self.model_ = model
        self.topics_ = topics
        ids = sorted(t for t in set(topics.tolist()) if t != OUTLIER)
        self.centroids_ = self._centroids(embeddings, topics, ids)
        cands = {t: [w for w, _ in (model.get_topic(t) or []) if w] for t in ids}
        self.keywords_ = self._rank_words(cands, self.centroids_, self.top_n_words)
        self.examples_ = self._examples(docs, embeddings, topics)
        labeller = self.labeller or KeywordLabeller()
        raw = labeller.label(self.keywords_, self.examples_)
        self.labels_ = distinct_labels({t: raw.get(t, "") or " / ".join(self.keywords_[t][:4]) for t in self.keywords_}, self.keywords_)
        if (topics == OUTLIER).any():
            self.labels_[OUTLIER] = "outliers"
        self._categorise(model, topics, ids)
        self.seconds_ = time.perf_counter() - t0
        return self

    def _centroids(self, x: np.ndarray, topics: np.ndarray, ids: list[int]) -> dict[int, np.ndarray]:
        xn = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
        return {t: xn[topics == t].mean(axis=0) for t in ids}

    def _rank_words(self, cands: dict[int, list[str]], targets: dict[int, np.ndarray], n: int) -> dict[int, list[str]]:
        """Each group's candidate words in MMR order against its centroid (first ``n``); in
        c-TF-IDF order without a word embedder."""
        if self.embed_words is None:
            return {t: c[:n] for t, c in cands.items()}
        from benchbuilder.hierarchy import mmr

        vocab = sorted({w for c in cands.values() for w in c})
        vecs = np.asarray(self.embed_words(vocab)) if vocab else np.zeros((0, 1))
        row = {w: i for i, w in enumerate(vocab)}
        return {t: [c[i] for i in mmr(targets[t], vecs[[row[w] for w in c]], n, self.mmr_diversity, c)] if c else [] for t, c in cands.items()}

    def _categorise(self, model: Any, topics: np.ndarray, ids: list[int]) -> None:
        """The second level: broad categories over the topics, their keywords (pooled c-TF-IDF
        of the member topics, reordered by MMR) and labels (the category labeller's, or the top
        three keywords)."""
        from benchbuilder.hierarchy import group_topics, pooled_term_scores

        self.category_of_: dict[int, int] = {}
        self.category_labels_: dict[int, str] = {}
        self.category_keywords_: dict[int, list[str]] = {}
        if self.categories is None or not ids:
            return
        sizes = Counter(int(t) for t in topics)
        cats = group_topics(ids, np.vstack([self.centroids_[t] for t in ids]), [sizes[t] for t in ids], lo=self.categories[0], hi=self.categories[1], seed=self.seed)
        # candidates: the member topics' own keywords (already distinctive), each scored by the
        # size-weighted c-TF-IDF mass it has across the members; pooled c-TF-IDF over all the
        # vocabulary favours words common to everything ("way / say / good")
        rows = {t: i for i, t in enumerate(sorted(set(topics.tolist())))}  # c_tf_idf_ rows: sorted topic ids, -1 first
        index = {w: i for i, w in enumerate(model.vectorizer_model.get_feature_names_out())}
        cands = {}
        for c, members in cats.members().items():
            score = pooled_term_scores(model.c_tf_idf_[[rows[t] for t in members]], [sizes[t] for t in members])
            words = sorted({w for t in members for w in self.keywords_[t] if w in index}, key=lambda w: (-score[index[w]], w))
            cands[c] = words[: self.n_candidates]
        self.category_of_ = dict(cats.of_topic)
        self.category_keywords_ = self._rank_words(cands, dict(enumerate(cats.centroids)), self.top_n_words)
        members = {c: sorted(m, key=lambda t: -sizes[t]) for c, m in cats.members().items()}
        raw = {}
        if self.category_labeller is not None:
            raw = self.category_labeller.label(self.category_keywords_, {c: [self.labels_[t] for t in m] for c, m in members.items()})
        self.category_labels_ = distinct_labels({c: raw.get(c, "") or " / ".join(self.category_keywords_[c][:3]) for c in members}, self.category_keywords_)
        self.category_silhouette_ = cats.silhouette

    def _reduce_outliers(self, topics: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Assign each outlier to the most cosine-similar topic centroid (BERTopic's
        ``reduce_outliers(strategy="embeddings")`` computed directly from the given embeddings,
        which avoids it re-embedding documents with an embedding model we do not pass)."""
        ids = np.array(sorted(t for t in set(topics.tolist()) if t != OUTLIER))
        xn = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
        cent = np.vstack([xn[topics == t].mean(axis=0) for t in ids])
        cent /= np.maximum(np.linalg.norm(cent, axis=1, keepdims=True), 1e-12)
        out = topics.copy()
        mask = (topics == OUTLIER) & (np.linalg.norm(x, axis=1) > 0)  # zero vectors stay outliers
        sims = xn[mask] @ cent.T
        best = sims.argmax(axis=1)
        ok = sims[np.arange(len(best)), best] >= self.outlier_threshold
        new = np.where(ok, ids[best], OUTLIER)
        out[mask] = new
        return out

    def _examples(self, docs: list[str], x: np.ndarray, topics: np.ndarray) -> dict[int, list[str]]:
        """The prompts nearest each topic's centroid (representative, deterministic)."""
        xn = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
        out: dict[int, list[str]] = {}
        for t in self.keywords_:
            idx = np.nonzero(topics == t)[0]
            c = self.centroids_[t]
            order = idx[np.argsort(-(xn[idx] @ c))]
            out[t] = [docs[i] for i in order[: self.n_examples]]
        return out

    def stats(self) -> ClusterStats:
        t = self.topics_
        counts = Counter(int(v) for v in t if v != OUTLIER)
        labs = [v for k, v in self.labels_.items() if k != OUTLIER]
        return ClusterStats(
            n_prompts=len(t), n_topics=len(counts), outlier_share_before=self.outlier_share_before_,
            outlier_share_after=float(np.mean(t == OUTLIER)), largest_share=max(counts.values()) / len(t) if counts else 0.0,
            labels_distinct=len(set(s.lower() for s in labs)) == len(labs), seconds_reduce_cluster=self.seconds_,
        )

    def hierarchy(self) -> dict[str, Any]:
        """The category level for ``topics.json``: ``category_of`` (topic -> category) and per
        category its label, keywords, prompt count and topics (largest first)."""
        if not getattr(self, "category_of_", None):
            return {}
        sizes = Counter(int(t) for t in self.topics_)
        cats: dict[str, Any] = {}
        for c, label in sorted(self.category_labels_.items()):
            members = sorted((t for t, k in self.category_of_.items() if k == c), key=lambda t: (-sizes[t], t))
            cats[str(c)] = {"label": label, "keywords": self.category_keywords_[c], "prompts": sum(sizes[t] for t in members), "topics": members}
        if OUTLIER in sizes:
            self.category_of_[OUTLIER] = -1
            cats["-1"] = {"label": "outliers", "keywords": [], "prompts": sizes[OUTLIER], "topics": [OUTLIER]}
        return {"category_of": {str(t): c for t, c in sorted(self.category_of_.items())}, "categories": cats,
                "silhouette": {str(k): round(v, 4) for k, v in getattr(self, "category_silhouette_", {}).items()}}

    def topic_table(self) -> pd.DataFrame:
        counts = Counter(int(v) for v in self.topics_)
        rows = [{"topic": t, "label": self.labels_.get(t, ""), "size": counts[t], "keywords": ", ".join(self.keywords_.get(t, [])[:8])} for t in sorted(counts)]
        return pd.DataFrame(rows).sort_values("size", ascending=False).reset_index(drop=True)


def save_assignments(path: str | Path, ids: Sequence[str], topics: np.ndarray, labels: dict[int, str], keywords: dict[int, list[str]], stats: ClusterStats | None = None, examples: dict[int, list[str]] | None = None, hierarchy: dict[str, Any] | None = None) -> None:
    """Persist ``clusters.jsonl`` (one line per prompt) and ``topics.json`` beside it (labels,
    keywords, stats, examples and, where there is one, the category level)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(path, ({"source_id": sid, "cluster": int(t), "label": labels.get(int(t), "")} for sid, t in zip(ids, topics)))
    meta = {"labels": {str(k): v for k, v in labels.items()}, "keywords": {str(k): v for k, v in keywords.items()}}
    if stats is not None:
        meta["stats"] = stats.to_dict()
    if examples is not None:  # representative prompts (nearest the topic centroid), shortened
        meta["examples"] = {str(k): [" ".join(e.split())[:300] for e in v] for k, v in examples.items()}
    if hierarchy:
        meta["hierarchy"] = hierarchy
    write_json(path.with_name("topics.json"), meta)


def save_topic_model(path: str | Path, ids: Sequence[str], tm: "TopicModel") -> ClusterStats:
    """:func:`save_assignments` for a fitted model (both engines end their cluster stage here)."""
    st = tm.stats()
    save_assignments(path, ids, tm.topics_, tm.labels_, tm.keywords_, st, tm.examples_, tm.hierarchy())
    return st


def load_categories(path: str | Path) -> dict[int, str]:
    """Topic id -> broad category label from ``topics.json`` beside ``clusters.jsonl`` (empty
    for a run without the category level; outliers map to ``outliers``)."""
    meta = json.loads(Path(path).with_name("topics.json").read_text(encoding="utf-8"))
    h = meta.get("hierarchy") or {}
    cats = h.get("categories", {})
    return {int(t): cats[str(c)]["label"] for t, c in h.get("category_of", {}).items()}


def load_assignments(path: str | Path) -> tuple[dict[str, int], dict[int, str]]:
    from arena.errors import InputError

    path = Path(path)
    assign: dict[str, int] = {}
    if not path.exists():
        raise InputError("cannot read: No such file or directory", path=str(path))
    for i, rec in read_jsonl(path):
        try:
            assign[str(rec["source_id"])] = int(rec["cluster"])
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"bad cluster record: {exc}", path=str(path), line=i) from None
    try:
        meta = json.loads(path.with_name("topics.json").read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=str(exc.filename or path)) from None
    return assign, {int(k): v for k, v in meta["labels"].items()}
