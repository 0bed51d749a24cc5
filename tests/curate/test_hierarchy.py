"""The topic hierarchy: broad categories over topic centroids, MMR keywords, and the category
level through the topic model into topics.json and question.jsonl."""

from __future__ import annotations

import json

import numpy as np

from benchbuilder.cluster import HDBSCANParams, KeywordLabeller, TopicModel, UMAPParams, load_categories, save_topic_model
from benchbuilder.hierarchy import FILLER_WORDS, category_range, group_topics, mmr, pooled_term_scores


def _planted(n_groups: int, per_group: int, dim: int = 32, spread: float = 0.08, seed: int = 0):
    rng = np.random.default_rng(seed)
    axes = np.linalg.qr(rng.normal(size=(dim, dim)))[0][:n_groups]  # orthogonal group directions
    cents, truth = [], []
    for g in range(n_groups):
        for _ in range(per_group):
            cents.append(axes[g] + spread * rng.normal(size=dim))
            truth.append(g)
    return np.array(cents), np.array(truth)


def test_group_topics_recovers_planted_categories():
    cents, truth = _planted(11, 4)
    sizes = np.random.default_rng(1).integers(5, 200, size=len(truth))
    cats = group_topics(range(len(truth)), cents, sizes, lo=8, hi=25)
    assert cats.k == 11  # silhouette picks the planted count among 8..22
    got = np.array([cats.of_topic[t] for t in range(len(truth))])
    # same partition up to renaming
    assert len({(a, b) for a, b in zip(truth, got)}) == 11
    # numbered by total size, largest first
    totals = [sizes[got == c].sum() for c in range(cats.k)]
    assert totals == sorted(totals, reverse=True)
    # deterministic
    again = group_topics(range(len(truth)), cents, sizes, lo=8, hi=25)
    assert again.of_topic == cats.of_topic


def test_category_range_edges():
    assert list(category_range(1387, 8, 25)) == list(range(8, 26))
    assert list(category_range(20, 8, 25)) == [8, 9, 10]
    assert list(category_range(9, 8, 25)) == [4]  # at least two topics per category
    assert len(category_range(3, 8, 25)) == 0
    cats = group_topics([5, 7, 9], np.eye(3), [1, 1, 1])
    assert cats.k == 1 and set(cats.of_topic.values()) == {0}


def test_mmr_relevance_diversity_inflections_and_zero_vectors():
    target = np.array([1.0, 0.0, 0.0])
    words = ["file", "files", "folder", "unknown", "zip"]
    cand = np.array([[1.0, 0.04, 0], [1.0, 0.05, 0], [0.9, 0.4, 0], [0.0, 0.0, 0.0], [0.7, 0.0, 0.7]])
    order = mmr(target, cand, 4, 0.15, words)
    assert [words[i] for i in order] == ["file", "folder", "zip"]  # "files" is an inflection; the zero vector never
    # without words, near-duplicates are only discouraged
    assert mmr(target, cand, 2, 0.0)[:2] == [0, 1]
    assert mmr(target, np.zeros((0, 3)), 3) == []
    # short words too: "api / dynamodb / apis" was a category label on the ShareGPT prompts
    words = ["api", "apis", "dynamodb"]
    cand = np.array([[1.0, 0.04, 0], [1.0, 0.05, 0], [0.8, 0.6, 0]])
    assert [words[i] for i in mmr(target, cand, 3, 0.15, words)] == ["api", "dynamodb"]


def test_pooled_term_scores_weights_by_size():
    rows = np.array([[2.0, 2.0, 0.0], [0.0, 1.0, 3.0]])
    s = pooled_term_scores(rows, [10, 1])
    np.testing.assert_allclose(s, [5.0, 5.25, 0.75])


def _docs():
    groups = {
        "python": "python function list dictionary loop script pandas dataframe numpy code",
        "cooking": "recipe garlic onion bake oven pasta sauce dinner meal ingredients",
        "travel": "trip itinerary flight hotel visit city beach museum vacation tour",
        "finance": "stock invest portfolio bond interest dividend tax budget savings loan",
        "health": "symptom doctor fever headache diet exercise sleep vitamin blood pressure",
        "music": "guitar chord song melody piano drum lyrics band album rhythm",
        "law": "contract clause liability lawsuit court judge tenant lease attorney statute",
        "space": "planet orbit rocket nasa galaxy telescope star moon astronaut mars",
        "garden": "tomato soil compost seed prune lawn flower water shade fertilizer",
    }
    rng = np.random.default_rng(0)
    docs, lab = [], []
    for g, (name, words) in enumerate(groups.items()):
        w = words.split()
        for _ in range(60):
            # conversational filler everywhere, which must never reach a label
            docs.append("um uh thats " + " ".join(rng.choice(w, size=8)))
            lab.append(g)
    return docs, np.array(lab)


def test_topic_model_writes_the_category_level(tmp_path):
    docs, lab = _docs()
    cents, _ = _planted(9, 1, dim=24, spread=0.0)
    x = cents[lab] + 0.05 * np.random.default_rng(3).normal(size=(len(lab), 24))

    def embed_words(words):  # a word's vector: its group's direction (unknown words zero)
        out = np.zeros((len(words), 24))
        for i, w in enumerate(words):
            hits = [g for g, d in enumerate(docs) if w in d.split()]
            if hits and w not in FILLER_WORDS:
                out[i] = cents[np.bincount(lab[hits]).argmax()]
        return out

    tm = TopicModel(umap=UMAPParams(n_neighbors=10, n_components=5), hdbscan=HDBSCANParams(min_cluster_size=20), labeller=KeywordLabeller(),
                    embed_words=embed_words, categories=(2, 4), seed=0).fit(docs, x)
    assert not any(w in FILLER_WORDS for kws in tm.keywords_.values() for w in kws)
    ids = [f"p{i}" for i in range(len(docs))]
    save_topic_model(tmp_path / "clusters.jsonl", ids, tm)
    meta = json.loads((tmp_path / "topics.json").read_text())
    h = meta["hierarchy"]
    cats = {k: v for k, v in h["categories"].items() if k != "-1"}
    assert 2 <= len(cats) <= 4
    assert sum(c["prompts"] for c in h["categories"].values()) == len(docs)
    assert sorted(t for c in cats.values() for t in c["topics"]) == sorted(tm.keywords_)
    of = load_categories(tmp_path / "clusters.jsonl")
    assert set(of.values()) <= {c["label"] for c in h["categories"].values()}


def test_llm_names_the_categories_through_the_shared_client(fake_server, tmp_path):
    """With ``labeller: llm`` each category gets its name from the category template (topics
    listed, largest first); a reply without the answer line falls back to the keywords."""
    import pandas as pd

    from benchbuilder.config import BuildConfig
    from benchbuilder.pipeline import Pipeline

    srv = fake_server({"rules": [
        {"match": "one broad category", "replies": ["Topic: Everyday Questions", "no answer line here"]},
        {"match": "one topic cluster", "reply": "Topic: Some Topic"},
    ]})
    ep = {"base_url": srv.url, "max_retries": 0, "max_concurrency": 1}
    cfg = BuildConfig(output=str(tmp_path / "run"), input={"paths": ["unused.jsonl"]}, embedding={"backend": "model2vec"},
                      clustering={"labeller": "llm", "label_endpoint": "lab", "categories": [2, 4]}, endpoints={"lab": {"model": "l", **ep}})
    p = Pipeline(cfg)
    docs, lab = _docs()
    cents, _ = _planted(9, 1, dim=24, spread=0.0)
    x = cents[lab] + 0.05 * np.random.default_rng(3).normal(size=(len(lab), 24))
    tm = p.topic_model()
    tm.umap, tm.hdbscan, tm.embed_words = UMAPParams(n_neighbors=10, n_components=5), HDBSCANParams(min_cluster_size=20), None
    tm.fit(docs, x)
    names = list(tm.category_labels_.values())
    assert 2 <= len(names) <= 4
    assert "Everyday Questions" in names  # the LLM's name
    fallback = [c for c, n in tm.category_labels_.items() if n != "Everyday Questions" and not n.startswith("Everyday Questions")]
    assert fallback and all(tm.category_labels_[c].startswith(" / ".join(tm.category_keywords_[c][:3])) for c in fallback)
    p.write_usage()
    usage = pd.read_csv(p.out / "usage.csv").set_index("stage")
    assert usage.loc["category_label", "calls"] == len(names)
