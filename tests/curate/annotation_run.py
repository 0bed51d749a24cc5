"""A curation run folder as the annotate stage finds it: prompts and topic assignments, no annotations yet."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from benchbuilder.cluster import save_assignments


def write_annotation_run(out: Path, n: int, n_topics: int) -> None:
    """n prompts q0..q{n-1} in `out`, spread round-robin over n_topics topics."""
    out.mkdir()
    ids = [f"q{i}" for i in range(n)]
    with open(out / "prompts.jsonl", "w") as f:
        f.writelines(json.dumps({"source_id": sid, "prompt": f"Question {i}: explain topic {i % 7} in depth", "source": "mem", "line": i + 1, "n_turns": 1}) + "\n" for i, sid in enumerate(ids))
    topics = range(n_topics)
    save_assignments(out / "clusters.jsonl", ids, np.array([i % n_topics for i in range(n)]), {t: f"topic {t}" for t in topics}, {t: [] for t in topics})
