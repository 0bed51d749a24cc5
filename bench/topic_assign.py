"""Topic assignment's kNN search: row-wise top-k by ``torch.topk`` (benchbuilder.cluster.top_k,
the default) against NumPy's ``argpartition`` (top_k_numpy, the reference), in one run.

`VoteAssigner.assign` puts every prompt outside the fit sample through `exact_cosine_knn`
against the 50k-row fit space (PCA to 64 dimensions, unit rows). At 1M prompts that is ~700k
queries in blocks of 2048. The queries and fit space here are ShareGPT-derived prompts (the
1M bench's corpus) embedded with the distilled model2vec table that `backend: auto` uses at that
size, PCA'd to 64 dimensions as the topic model does. Reported: seconds per 2048-query block for each
selector, the ratio, and the share of queries whose 10 neighbours are identical.

    python bench/topic_assign.py [--queries 20000] [--fit 50000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=20_000)
    ap.add_argument("--fit", type=int, default=50_000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--dims", type=int, default=64)
    a = ap.parse_args()
    from sklearn.decomposition import PCA

    from benchbuilder.cluster import _unit, exact_cosine_knn, top_k, top_k_numpy
    from benchbuilder.embed import Model2VecEmbedder
    from curate_speed import ROOT, load_prompts

    emb = Model2VecEmbedder(ROOT / ".cache" / "benchbuilder" / "models")
    x = emb.postprocess(emb.embed(load_prompts(a.fit + a.queries)))
    x = _unit(PCA(a.dims, random_state=0).fit_transform(x))
    fit, queries = x[: a.fit], x[a.fit :]
    out = {}
    for name, select in (("argpartition (reference)", top_k_numpy), ("torch.topk", top_k)):
        t = time.perf_counter()
        idx, dist = exact_cosine_knn(fit, a.k, queries=queries, select=select)
        out[name] = (time.perf_counter() - t, idx, dist)
    blocks = -(-len(queries) // 2048)
    (ref_s, ref_idx, ref_d), (new_s, new_idx, new_d) = out.values()
    for name, (sec, _, _) in out.items():
        print(f"{name:26s} {sec:7.2f} s for {len(queries):,} queries x {a.fit:,} fit rows ({sec / blocks:.3f} s per block)")
    same_list = np.mean(np.all(ref_idx == new_idx, axis=1))
    same_sims = np.mean(np.all(np.sort(ref_d, axis=1) == np.sort(new_d, axis=1), axis=1))
    print(f"speed-up {ref_s / new_s:.1f}x; the same {a.k} neighbours in the same order for {same_list:.2%} of queries; "
          f"the same {a.k} similarities (bit for bit) for {same_sims:.2%}: elsewhere they differ only in which of the fit rows "
          f"with exactly equal similarity they keep (the corpus' word-dropout copies embed alike)")


if __name__ == "__main__":
    main()
