"""Embedding backends and the on-disk cache keyed by text hash."""

from __future__ import annotations

import numpy as np
import pytest

from benchbuilder.embed import CachedEmbedder, EmbeddingCache, Model2VecEmbedder, SentenceTransformerEmbedder, packaged_minilm_path


class CountingBackend:
    name = "count:v1"

    def __init__(self):
        self.seen: list[str] = []

    def embed(self, texts):
        self.seen.extend(texts)
        return np.array([[len(t), t.count("a"), 1.0] for t in texts], dtype=np.float32)


def test_cache_embeds_each_text_once(tmp_path):
    cache = EmbeddingCache(tmp_path / "emb.sqlite")
    be = CountingBackend()
    e = CachedEmbedder(be, cache, chunk_size=2)
    x1 = e.embed(["aa", "b", "aa", "ccc"])
    assert be.seen == ["aa", "b", "ccc"] and e.computed_ == 3
    assert x1.shape == (4, 3) and x1[0].tolist() == [2, 2, 1] and x1[2].tolist() == x1[0].tolist()
    cache.close()
    # a new process (new cache handle) reuses everything and only embeds the new text
    be2 = CountingBackend()
    e2 = CachedEmbedder(be2, EmbeddingCache(tmp_path / "emb.sqlite"))
    x2 = e2.embed(["ccc", "aa", "dddd"])
    assert be2.seen == ["dddd"] and e2.cache_hits_ == 2
    assert x2[0].tolist() == x1[3].tolist()
    # another backend name never sees this backend's vectors
    other = CountingBackend()
    other.name = "count:v2"
    CachedEmbedder(other, EmbeddingCache(tmp_path / "emb.sqlite")).embed(["aa"])
    assert other.seen == ["aa"]


def test_minilm_offline_semantics(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert (packaged_minilm_path() / "model.safetensors").is_file()
    e = SentenceTransformerEmbedder(max_seq_length=64)
    x = e.embed(["How do I sort a list in Python?", "Sorting a Python list: what is the best way?", "Recipe for a chocolate cake"])
    assert x.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-5)
    assert x[0] @ x[1] > x[0] @ x[2] + 0.3


def test_model2vec_loads_saved_model_without_distilling(tmp_path):
    """A previously distilled model on disk is loaded, never re-distilled (distillation takes
    minutes; tests build a tiny static model with the MiniLM tokenizer instead)."""
    from model2vec import StaticModel
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(packaged_minilm_path() / "tokenizer.json"))
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(tok.get_vocab_size(), 8)).astype(np.float32)
    StaticModel(vectors=vectors, tokenizer=tok, normalize=False).save_pretrained(str(tmp_path / "minilm_pca8"))
    e = Model2VecEmbedder(tmp_path, pca_dims=8, source=tmp_path / "does-not-exist")
    x = e.embed(["hello world", "hello world", "another text here"])
    assert x.shape == (3, 8)
    np.testing.assert_allclose(x[0], x[1])
    c = e.postprocess(x)
    np.testing.assert_allclose(np.linalg.norm(c, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(c, x)  # centring changed the vectors


def test_openai_embedder_through_shared_client(fake_server, tmp_path):
    from arena.llm import Endpoint, LLMClient
    from benchbuilder.embed import OpenAIEmbedder

    srv = fake_server({"embedding_dim": 12, "faults": {"500": 0.5}})
    client = LLMClient({"emb": Endpoint(name="emb", model="text-embedding-3-small", base_url=srv.url, max_retries=3)}, None, backoff_base=0.01)
    e = CachedEmbedder(OpenAIEmbedder(client, "emb", batch_size=3), EmbeddingCache(tmp_path / "e.sqlite"))
    texts = [f"text {i}" for i in range(7)]
    x = e.embed(texts)
    assert x.shape == (7, 12)
    st = srv.stats()
    assert st["ok"] == 3  # ceil(7/3) batches, each answered once despite injected 500s
    e.embed(texts)
    assert srv.stats()["ok"] == 3  # cached by text hash: no new calls
    assert client.ledger.to_frame()["calls"].sum() >= 3
