"""Topic clustering on synthetic topics with known membership."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import adjusted_mutual_info_score

from benchbuilder.cluster import (
    HDBSCANParams, TopicModel, UMAPParams, distinct_labels, exact_cosine_knn, load_assignments, save_assignments, top_k, top_k_numpy,
)

WORDS = {
    0: "python pandas dataframe column merge",
    1: "recipe chocolate cake oven flour",
    2: "poem sonnet rhyme verse stanza",
    3: "kubernetes docker container pod deploy",
    4: "mortgage loan interest bank rate",
    5: "football league goal match season",
}


def synthetic(n_per: int = 60, dim: int = 96, seed: int = 0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(len(WORDS), dim))
    x, y, docs = [], [], []
    for t, words in WORDS.items():
        w = words.split()
        for i in range(n_per):
            x.append(centers[t] + 0.35 * rng.normal(size=dim))
            y.append(t)
            docs.append(f"question {i} about {' '.join(rng.permutation(w)[:4])} and more {w[i % len(w)]}")
    return docs, np.asarray(x, dtype=np.float32), np.asarray(y)


def test_exact_knn_matches_bruteforce():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(300, 16)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    idx, dist = exact_cosine_knn(x, 5, block=64)
    full = np.argsort(-(x @ x.T), axis=1)[:, :5]
    assert (idx == full).mean() > 0.99
    np.testing.assert_allclose(dist[:, 0], 0.0, atol=1e-5)


def test_top_k_selectors_agree():
    # torch.topk (the default) and argpartition pick the same neighbours in the same order; with
    # exactly equal similarities (duplicated rows) they may keep different copies, never other values.
    rng = np.random.default_rng(2)
    sim = rng.normal(size=(500, 3000)).astype(np.float32)
    assert np.array_equal(top_k(sim, 10), top_k_numpy(sim, 10))
    x = rng.normal(size=(400, 8)).astype(np.float32)
    x = np.repeat(x / np.linalg.norm(x, axis=1, keepdims=True), 3, axis=0)  # every row three times
    a, da = exact_cosine_knn(x, 6, queries=x[:50], select=top_k)
    b, db = exact_cosine_knn(x, 6, queries=x[:50], select=top_k_numpy)
    assert np.array_equal(np.sort(da, axis=1), np.sort(db, axis=1))
    assert np.array_equal(np.sort(a // 3, axis=1), np.sort(b // 3, axis=1))  # the same originals, perhaps other copies


def test_topic_model_recovers_topics_and_sample_path_agrees(tmp_path):
    docs, x, y = synthetic()
    params = dict(umap=UMAPParams(n_neighbors=10, pca_dims=32), hdbscan=HDBSCANParams(min_cluster_size=15, min_samples=5, cluster_selection_method="eom"), seed=3)
    tm = TopicModel(**params).fit(docs, x)
    st = tm.stats()
    assert st.n_topics == 6 and st.outlier_share_after == 0.0 and st.labels_distinct
    assert adjusted_mutual_info_score(y, tm.topics_) > 0.95
    # each topic's keywords come from its own vocabulary
    for t, kws in tm.keywords_.items():
        true = np.bincount(y[tm.topics_ == t]).argmax()
        assert set(kws[:3]) <= set(WORDS[true].split()) | {"question", "more"}
    # fitting on a sample and assigning the rest by nearest neighbours gives the same partition
    ts = TopicModel(**params, fit_sample=200).fit(docs, x)
    assert adjusted_mutual_info_score(y, ts.topics_) > 0.9
    save_assignments(tmp_path / "clusters.jsonl", [f"id{i}" for i in range(len(docs))], tm.topics_, tm.labels_, tm.keywords_, st)
    assign, labels = load_assignments(tmp_path / "clusters.jsonl")
    assert assign["id7"] == tm.topics_[7] and labels == tm.labels_


def test_distinct_labels_disambiguates():
    out = distinct_labels({0: "Python", 1: "python", 2: "Python"}, {0: ["pandas"], 1: ["django", "web"], 2: ["python"]})
    assert out[0] == "Python" and out[1] == "python (django)" and out[2] == "Python #2"
    assert len({v.lower() for v in out.values()}) == 3


def test_llm_labeller_through_shared_client(fake_server, tmp_path):
    from arena.llm import Endpoint, LLMClient, ResponseCache
    from benchbuilder.cluster import LLMLabeller

    srv = fake_server({"rules": [
        {"match": "Keywords: python", "reply": "Topic: Python Data Wrangling"},
        {"match": "Keywords: recipe", "reply": "Topic: Python Data Wrangling"},  # a clash: made distinct
        {"match": "Keywords: poem", "reply": "I cannot name this."},  # unparsable: keyword fallback
    ]})
    client = LLMClient({"lab": Endpoint(name="lab", model="fake", base_url=srv.url)}, ResponseCache(tmp_path / "c.sqlite"))
    kw = {0: ["python", "pandas"], 1: ["recipe", "cake"], 2: ["poem", "verse"]}
    ex = {0: ["merge two dataframes"], 1: ["bake a cake"], 2: ["a sonnet please"]}
    raw = LLMLabeller(client, "lab").label(kw, ex)
    assert raw == {0: "Python Data Wrangling", 1: "Python Data Wrangling", 2: "poem / verse"}
    assert distinct_labels(raw, kw)[1] == "Python Data Wrangling (recipe)"
    assert srv.stats()["ok"] == 3
