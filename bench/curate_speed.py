"""Embedding + topic clustering speed and quality: BenchBuilder's fast path vs the reference
(BERTopic with sentence-transformers all-MiniLM-L6-v2, its defaults), in one run.

Every path runs in a fresh subprocess, so imports, model loading and numba JIT compilation are
counted, and its peak RSS is its own. Prints seconds, ratio, topics, largest topic share,
outlier share before reduction, and adjusted mutual information (AMI) between partitions.

Scale: ``--sizes 10000 50000`` times the fast path on larger corpora built from the ShareGPT
prompts (copies get random 15% word dropout so no two texts are identical) and projects
200k linearly from the 10k->50k slope (conservative: beyond ``fit_sample`` only embedding and
nearest-neighbour assignment grow with n). ``--sizes ... 200000`` measures it outright.

    python bench/curate_speed.py                      # 9,126 ShareGPT prompts, both paths
    python bench/curate_speed.py --sizes 10000 50000  # plus the scaling runs
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHAREGPT = ROOT.parent / "shared" / "data" / "prompts" / "sharegpt_en.jsonl.gz"


def load_prompts(n: int | None, seed: int = 0) -> list[str]:
    base = [json.loads(l)["prompt"] for l in gzip.open(SHAREGPT, "rt", encoding="utf-8")]
    if n is None or n <= len(base):
        return base[:n] if n else base
    rng = np.random.default_rng(seed)
    out = list(base)
    while len(out) < n:
        words = base[len(out) % len(base)].split()
        keep = rng.random(len(words)) > 0.15
        out.append(" ".join(w for w, k in zip(words, keep) if k) or words[0])
    return out


# ----------------------------------------------------------------------------- child runs
def child_fast(prompts_path: str, out_path: str, fit_sample: int) -> None:
    t0 = time.perf_counter()
    from benchbuilder.cluster import TopicModel
    from benchbuilder.embed import Model2VecEmbedder

    texts = json.loads(Path(prompts_path).read_text())
    emb = Model2VecEmbedder(ROOT / ".cache" / "benchbuilder" / "models")
    emb.load_or_distill()  # distilled once beforehand; loading is timed
    t1 = time.perf_counter()
    x = emb.postprocess(emb.embed(texts))
    t2 = time.perf_counter()
    tm = TopicModel(fit_sample=fit_sample).fit(texts, x)
    t3 = time.perf_counter()
    _dump(out_path, tm, {"load_s": t1 - t0, "embed_s": t2 - t1, "cluster_s": t3 - t2, "total_s": t3 - t0})


def child_minilm_ours(prompts_path: str, out_path: str, fit_sample: int) -> None:
    """Our clustering on cached MiniLM embeddings (quality comparison, not timed)."""
    from benchbuilder.cluster import TopicModel
    from benchbuilder.embed import CachedEmbedder, EmbeddingCache, SentenceTransformerEmbedder

    texts = json.loads(Path(prompts_path).read_text())
    x = CachedEmbedder(SentenceTransformerEmbedder(), EmbeddingCache(ROOT / ".cache" / "benchbuilder" / "embeddings.sqlite")).embed(texts)
    t0 = time.perf_counter()
    tm = TopicModel(fit_sample=fit_sample).fit(texts, x)
    _dump(out_path, tm, {"cluster_s": time.perf_counter() - t0})


def child_reference(prompts_path: str, out_path: str, _fit_sample: int) -> None:
    """BERTopic as its docs show it: BERTopic(embedding_model=MiniLM).fit_transform(docs)."""
    t0 = time.perf_counter()
    os.environ["HF_HUB_OFFLINE"] = "1"
    from bertopic import BERTopic
    from sentence_transformers import SentenceTransformer

    from benchbuilder.embed import CachedEmbedder, EmbeddingCache, packaged_minilm_path, SentenceTransformerEmbedder

    texts = json.loads(Path(prompts_path).read_text())
    st = SentenceTransformer(str(packaged_minilm_path()), device="cpu")
    t1 = time.perf_counter()
    x = st.encode(texts, batch_size=64, show_progress_bar=False, normalize_embeddings=True)
    t2 = time.perf_counter()
    model = BERTopic(embedding_model=st)
    topics, _ = model.fit_transform(texts, x)
    t3 = time.perf_counter()
    # Keep the embeddings for the quality comparison (same text-hash cache the pipeline uses).
    from benchbuilder.embed import text_hash

    cache = EmbeddingCache(ROOT / ".cache" / "benchbuilder" / "embeddings.sqlite")
    cache.put_many(SentenceTransformerEmbedder().name, [text_hash(t) for t in texts], x)
    topics = np.asarray(topics)
    sizes = np.bincount(topics[topics >= 0]) if (topics >= 0).any() else np.array([0])
    res = {
        "topics": topics.tolist(), "n_topics": int((sizes > 0).sum()), "outlier_share_before": float((topics < 0).mean()),
        "largest_share": float(sizes.max() / len(topics)), "load_s": t1 - t0, "embed_s": t2 - t1, "cluster_s": t3 - t2, "total_s": t3 - t0,
        "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
    }
    Path(out_path).write_text(json.dumps(res))


def _dump(out_path: str, tm, timing: dict) -> None:
    st = tm.stats()
    res = {"topics": tm.topics_.tolist(), "n_topics": st.n_topics, "outlier_share_before": st.outlier_share_before, "largest_share": st.largest_share,
           "labels_distinct": st.labels_distinct, "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, **timing}
    Path(out_path).write_text(json.dumps(res))


CHILDREN = {"fast": child_fast, "reference": child_reference, "minilm_ours": child_minilm_ours}


def run_child(kind: str, texts: list[str], fit_sample: int, tmp: Path) -> dict:
    pp, op = tmp / f"{kind}_{len(texts)}_in.json", tmp / f"{kind}_{len(texts)}_out.json"
    pp.write_text(json.dumps(texts))
    t0 = time.perf_counter()
    subprocess.run([sys.executable, __file__, "--child", kind, str(pp), str(op), str(fit_sample)], check=True, cwd=ROOT)
    res = json.loads(op.read_text())
    res["wall_s"] = time.perf_counter() - t0
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, default=None, help="prompts for the head-to-head (default: all 9,126)")
    ap.add_argument("--sizes", type=int, nargs="*", default=[], help="extra fast-path sizes for the scaling projection")
    ap.add_argument("--fit-sample", type=int, default=50_000)
    ap.add_argument("--skip-reference", action="store_true")
    args = ap.parse_args()
    if args.child:
        kind, pp, op, fs = args.child
        CHILDREN[kind](pp, op, int(fs))
        return
    from sklearn.metrics import adjusted_mutual_info_score as ami

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        texts = load_prompts(args.n)
        print(f"prompts: {len(texts)}; load average: {os.getloadavg()}", flush=True)
        fast = run_child("fast", texts, args.fit_sample, tmp)
        print(f"fast path (model2vec + exact-kNN UMAP + leaf HDBSCAN): {fast['wall_s']:.1f} s wall "
              f"(embed {fast['embed_s']:.1f}, cluster {fast['cluster_s']:.1f}), {fast['n_topics']} topics, largest {fast['largest_share']:.2%}, "
              f"outliers before reduction {fast['outlier_share_before']:.1%}, peak RSS {fast['peak_rss_gb']:.2f} GB", flush=True)
        if not args.skip_reference:
            ref = run_child("reference", texts, args.fit_sample, tmp)
            print(f"reference (BERTopic + sentence-transformers MiniLM, defaults): {ref['wall_s']:.1f} s wall "
                  f"(embed {ref['embed_s']:.1f}, cluster {ref['cluster_s']:.1f}), {ref['n_topics']} topics, largest {ref['largest_share']:.2%}, "
                  f"outliers {ref['outlier_share_before']:.1%}, peak RSS {ref['peak_rss_gb']:.2f} GB", flush=True)
            print(f"speed ratio reference/fast: {ref['wall_s'] / fast['wall_s']:.1f}x", flush=True)
            ours = run_child("minilm_ours", texts, args.fit_sample, tmp)
            print(f"MiniLM embeddings + our clustering: {ours['n_topics']} topics, largest {ours['largest_share']:.2%}, "
                  f"outliers before reduction {ours['outlier_share_before']:.1%}", flush=True)
            f, r, o = (np.asarray(z["topics"]) for z in (fast, ref, ours))
            print(f"AMI fast vs MiniLM (same clustering): {ami(f, o):.3f}", flush=True)
            print(f"AMI fast vs reference BERTopic: {ami(f, r):.3f}; on prompts both cluster (non-outlier in reference): {ami(f[r >= 0], r[r >= 0]):.3f}", flush=True)
            print(f"AMI MiniLM-ours vs reference BERTopic (same embeddings, different clustering): {ami(o, r):.3f}", flush=True)
        times = {}
        for n in args.sizes:
            res = run_child("fast", load_prompts(n), args.fit_sample, tmp)
            times[n] = res["wall_s"]
            print(f"fast path n={n}: {res['wall_s']:.1f} s wall (embed {res['embed_s']:.1f}, cluster {res['cluster_s']:.1f}), "
                  f"{res['n_topics']} topics, largest {res['largest_share']:.2%}, peak RSS {res['peak_rss_gb']:.2f} GB", flush=True)
        if len(times) >= 2 and 200_000 not in times:
            (a, ta), (b, tb) = sorted(times.items())[-2:]
            proj = tb + (tb - ta) / (b - a) * (200_000 - b)
            print(f"projected 200k (linear from {a}->{b}): {proj:.0f} s = {proj / 60:.1f} min", flush=True)


if __name__ == "__main__":
    main()
