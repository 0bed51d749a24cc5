"""Do the embeddings recover the paper's own topic structure? And how fast are they?

arena-hard v0.1's 500 prompts come in pairs, two from each of the 250 clusters the paper's
pipeline made (the ``cluster`` field). For each prompt we count how often its partner is its
nearest neighbour (@1) or among its 10 nearest (@10) by cosine over the other 499 prompts.
Throughput is prompts/s on the 9,126 ShareGPT prompts (one process, this machine), with no
embedding cache, and the projected minutes to embed 1M prompts.

    python bench/embedding_quality.py
"""

from __future__ import annotations

import gzip
import json
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PROMPTS = ROOT.parent / "shared" / "data" / "prompts"


def partner_recall(x: np.ndarray, clusters: list[str]) -> tuple[float, float]:
    from benchbuilder.cluster import exact_cosine_knn

    members = defaultdict(list)
    for i, c in enumerate(clusters):
        members[c].append(i)
    idx, _ = exact_cosine_knn(x, 10, exclude_self=True)
    at1 = at10 = n = 0
    for i, c in enumerate(clusters):
        partner = [j for j in members[c] if j != i]
        if len(partner) != 1:
            continue
        nb = [j for j in idx[i] if j != i][:10]
        n += 1
        at1 += nb[0] == partner[0]
        at10 += partner[0] in nb
    return at1 / n, at10 / n


def main() -> None:
    from benchbuilder.embed import Model2VecEmbedder, SentenceTransformerEmbedder

    rows = [json.loads(l) for l in open(PROMPTS / "arena_hard_v0.1.jsonl", encoding="utf-8")]
    texts = [r["turns"][0]["content"] for r in rows]
    clusters = [r["cluster"] for r in rows]
    share = [json.loads(l)["prompt"] for l in gzip.open(PROMPTS / "sharegpt_en.jsonl.gz", "rt", encoding="utf-8")]
    cands = {
        "MiniLM (max 256 tokens)": lambda: SentenceTransformerEmbedder(max_seq_length=256),
        "MiniLM (max 128 tokens)": lambda: SentenceTransformerEmbedder(max_seq_length=128),
        "model2vec, centred (the static path)": lambda: Model2VecEmbedder(ROOT / ".cache" / "benchbuilder" / "models"),
    }
    print(f"{'embedding':40s} {'@1':>6s} {'@10':>6s} {'prompts/s':>10s} {'1M min':>7s}")
    for name, make in cands.items():
        emb = make()
        x = emb.embed(texts)
        if hasattr(emb, "postprocess"):
            x = emb.postprocess(x)
        r1, r10 = partner_recall(x, clusters)
        emb.embed(share[:64])  # load and warm up outside the timing
        t = time.perf_counter()
        emb.embed(share)
        rate = len(share) / (time.perf_counter() - t)
        print(f"{name:40s} {r1:6.1%} {r10:6.1%} {rate:10,.0f} {1e6 / rate / 60:7.1f}", flush=True)


if __name__ == "__main__":
    main()
