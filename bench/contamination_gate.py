"""Calibrate and check the contamination gate's threshold for an embedding backend.

50 arena-hard v0.1 prompts, each lightly perturbed (3 words dropped, 2 adjacent pairs swapped),
are seeded into the 9,126 ShareGPT prompts. The ShareGPT prompts are split in two halves. On the
calibration half, with one set of 50 perturbations (seed 1), the threshold is the 99.6th
percentile of the clean prompts' nearest-reference cosine similarity; edited copies are caught
by the gate's lexical leg (word-set Jaccard >= 0.6 with one of the 5 nearest references). On the other half, with 50 fresh perturbations of other arena-hard prompts
(seed 2), it reports how many copies are flagged (target >= 48) and the share of ShareGPT
prompts flagged (target <= 0.5%), and lists the flagged ShareGPT prompts with their matches.

    python bench/contamination_gate.py --backend model2vec
    python bench/contamination_gate.py --backend minilm
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PROMPTS = ROOT.parent / "shared" / "data" / "prompts"


def perturb(text: str, rng: np.random.Generator, drop: int = 3, swaps: int = 2) -> str:
    words = text.split()
    if len(words) > drop + 3:
        for i in sorted(rng.choice(len(words), size=drop, replace=False), reverse=True):
            del words[i]
    for _ in range(swaps):
        if len(words) > 2:
            i = int(rng.integers(0, len(words) - 1))
            words[i], words[i + 1] = words[i + 1], words[i]
    return " ".join(words)


def main() -> None:
    from benchbuilder.config import EmbeddingConfig
    from benchbuilder.contamination import CALIBRATED_THRESHOLDS, DEFAULT_REFERENCES, flag, load_references, nearest_reference, reference_label, word_jaccard
    from benchbuilder.embed import CachedEmbedder, EmbeddingCache
    from benchbuilder.pipeline import Pipeline
    from benchbuilder.config import BuildConfig

    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="model2vec", choices=["model2vec", "minilm"])
    ap.add_argument("--show", type=int, default=15)
    a = ap.parse_args()
    cache = str(ROOT / ".cache" / "benchbuilder" / "embeddings.sqlite")
    p = Pipeline(BuildConfig(input={"paths": ["-"]}, embedding=EmbeddingConfig(backend=a.backend, cache=cache, model_dir=str(ROOT / ".cache" / "benchbuilder" / "models"))))
    emb = p.embedder()
    refs = load_references([str(ROOT / r) for r in DEFAULT_REFERENCES], defaults=False, warn=print)
    ref_x = emb.embed([r.text for r in refs], postprocess=False)
    share = [json.loads(l) for l in gzip.open(PROMPTS / "sharegpt_en.jsonl.gz", "rt", encoding="utf-8")]
    rng = np.random.default_rng(0)
    order = rng.permutation(len(share))
    halves = [order[: len(order) // 2], order[len(order) // 2 :]]
    ah = [r for r in refs if r.source == "arena_hard_v0.1.jsonl"]
    pick = np.random.default_rng(3).permutation(len(ah))
    seeds = [[perturb(ah[i].text, np.random.default_rng(1000 + int(i))) for i in pick[:50]], [perturb(ah[i].text, np.random.default_rng(2000 + int(i))) for i in pick[50:100]]]
    originals = [[ah[i] for i in pick[:50]], [ah[i] for i in pick[50:100]]]
    x_share = emb.embed([s["prompt"] for s in share], postprocess=False)
    best_share, idx_share = nearest_reference(x_share, ref_x)
    copies = [emb.embed(s, postprocess=False) for s in seeds]
    sims = [nearest_reference(c, ref_x)[0] for c in copies]
    # ShareGPT (2023) holds some benchmark prompts verbatim (AlpacaEval drew from Vicuna and
    # Koala, whose prompts came from ShareGPT): those are true positives, not the clean
    # background, so they are counted apart and left out of the calibration.
    from benchbuilder.filters import normalize

    ref_norm = {normalize(r.text) for r in refs}
    verbatim = np.array([normalize(s["prompt"]) in ref_norm for s in share])
    halves = [h[~verbatim[h]] for h in halves]
    print(f"ShareGPT prompts equal to a reference prompt (after case/space normalisation): {int(verbatim.sum())}")
    # Edited copies are the lexical leg's job (word-set Jaccard >= 0.6 among the 5 nearest); the
    # cosine threshold is for paraphrases, and is set so that it alone flags 0.4% of clean
    # prompts on the calibration half, leaving room for the lexical leg within 0.5%.
    threshold = round(float(np.quantile(best_share[halves[0]], 0.996)), 3)
    cal_copy = int((sims[0] >= threshold).sum())
    print(f"backend {emb.name}: {len(refs)} reference prompts from {len(DEFAULT_REFERENCES)} files")
    print(f"calibration half: clean 99.6th percentile -> threshold {threshold}; perturbed copies (seed 1) at or above it by cosine alone: {cal_copy}/50")
    held = halves[1]
    for lexical in (None, 0.6):
        name = "embedding only" if lexical is None else f"embedding + word-set Jaccard >= {lexical}"
        fl_share = flag([str(i) for i in held], [share[i]["prompt"] for i in held], x_share[held], refs, ref_x, threshold, lexical=lexical)
        fl_copy = flag([str(k) for k in range(50)], seeds[1], copies[1], refs, ref_x, threshold, lexical=lexical)
        # a copy counts only when it is matched to its own original
        own = sum(1 for f in fl_copy if f.reference_id == originals[1][int(f.source_id)].ref_id)
        print(f"held-out half, {name}: perturbed copies flagged {own}/50 matched to their own original; "
              f"ShareGPT flagged {len(fl_share)}/{len(held)} = {len(fl_share) / len(held):.2%}")
    all_flags = flag([str(i) for i in range(len(share))], [s["prompt"] for s in share], x_share, refs, ref_x, threshold)
    all_flag = np.array(sorted(int(f.source_id) for f in all_flags), dtype=int)
    print(f"whole ShareGPT set: {len(all_flag)}/{len(share)} = {len(all_flag) / len(share):.2%} flagged, {int(verbatim[all_flag].sum())} of them verbatim; "
          f"non-verbatim flags {int((~verbatim[all_flag]).sum())} = {(~verbatim[all_flag]).sum() / (~verbatim).sum():.2%} of the non-verbatim prompts")
    print(f"calibrated default in benchbuilder.contamination for {a.backend}: {CALIBRATED_THRESHOLDS.get(a.backend)} (this run: {threshold})")
    # each flag with the reference that flagged it (the lexical leg may match one of the 5
    # nearest, not the nearest) and which leg fired; non-verbatim first, then verbatim
    by_id = {int(f.source_id): f for f in all_flags}
    ref_text = {(r.source, r.ref_id): r.text for r in refs}
    for title, ids in (("non-verbatim", all_flag[~verbatim[all_flag]]), ("verbatim", all_flag[verbatim[all_flag]])):
        print(f"{title} flags ({len(ids)}), highest cosine first, showing {min(len(ids), a.show)}:")
        for i in sorted(ids, key=lambda i: -by_id[int(i)].similarity)[: a.show]:
            f = by_id[int(i)]
            leg = "cosine" if f.similarity >= threshold else f"words {word_jaccard(share[i]['prompt'], ref_text[(f.reference, f.reference_id)]):.2f}"
            print(f"  {f.similarity:.3f} [{leg}] {share[i]['id']}: {' '.join(share[i]['prompt'].split())[:120]!r}\n"
                  f"         ~ {reference_label(f.reference, f.reference_id)}: {f.reference_text[:120]!r}")
    print(json.dumps({"backend": emb.name, "threshold": threshold, "copies_flagged": own, "sharegpt_flagged_share": len(fl_share) / len(held)}))


if __name__ == "__main__":
    main()
