"""Language id and deduplication filters: each drop is counted with its reason."""

from __future__ import annotations

import numpy as np

from benchbuilder.filters import ExactDedup, LanguageFilter, MinHashDedup, embedding_near_duplicates, run_filters
from benchbuilder.ingest import DropLog, PromptRecord


def recs(texts):
    return [PromptRecord(source_id=f"id{i}", prompt=t, source="mem", line=i + 1) for i, t in enumerate(texts)]


def test_language_filter_keeps_english_and_short_english():
    texts = [
        "How do I make pasta fagioli?",  # short English langid used to call Nigerian Pidgin
        "Write a Python function that merges two sorted lists without using sort().",
        "Necesito un nombre para mi equipo de robótica, dame diez ideas originales por favor.",
        "Schreibe eine kurze Geschichte über einen Hund, der das Meer zum ersten Mal sieht.",
        "def f(x):\n    return [i*2 for i in range(x)]",  # pure code: no language signal, kept
    ]
    d = DropLog()
    kept = LanguageFilter().apply(recs(texts), d)
    assert [r.source_id for r in kept] == ["id0", "id1", "id4"]
    assert d.counts() == {"language": 2}
    assert sorted(x.detail for x in d.drops) == ["de", "es"]


def test_exact_and_near_duplicates():
    base = "Explain the difference between a process and a thread in operating systems, with examples from Linux and Windows and a short summary table."
    texts = [base, "  explain the DIFFERENCE between a process and a thread in operating systems, with examples from linux and windows and a short summary table. ",
             base.replace("short summary table", "short summary table please"), "Write a haiku about autumn leaves falling on a quiet pond at dusk."]
    d = DropLog()
    kept = run_filters(recs(texts), [ExactDedup(), MinHashDedup(threshold=0.7)], d)
    assert [r.source_id for r in kept] == ["id0", "id3"]
    assert d.counts() == {"duplicate": 1, "near_duplicate": 1}
    assert "id0" in next(x.detail for x in d.drops if x.reason == "near_duplicate")


def test_embedding_near_duplicates():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 8))
    x[10] = x[3] + 1e-4
    x[40] = x[3] + 1e-4
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    assert embedding_near_duplicates(x, threshold=0.999, block=7).tolist() == [10, 40]


def test_minhash_signatures_match_datasketch_and_do_not_depend_on_the_batch():
    from datasketch import MinHash

    from benchbuilder.filters import MinHasher, word_shingles

    texts = ["the quick brown fox jumps over the lazy dog again and again", "a b", "one two three four five six seven", "!!! ???", ""]
    h = MinHasher()
    sig, has = h.signatures(texts)
    assert has.tolist() == [True, True, True, False, False]
    for i, t in enumerate(texts[:3]):
        m = MinHash(num_perm=128, seed=1, scheme="legacy")
        m.update_batch(word_shingles(t, 5))
        assert np.array_equal(m.hashvalues, sig[i])
    # any block split gives the same rows (what lets the Ray engine compute them per block)
    parts = [h.signatures(texts[:2])[0], h.signatures(texts[2:])[0]]
    assert np.array_equal(np.vstack(parts), sig)
    # small chunks of the shingle matrix give the same minimum
    assert np.array_equal(h.signatures(texts, chunk=3)[0], sig)


def test_texts_without_words_are_never_near_duplicates():
    d = DropLog()
    kept = MinHashDedup().apply(recs(["!!!", "???", "🙂🙂", "hello there my friend how are you today"]), d)
    assert len(kept) == 4 and not d.drops
