"""Random-subset baseline for benchmark audits (BenchBuilder paper, Table 4).

A benchmark's prompts are compared with random prompt subsets of the same size drawn from the
same pool of judged prompts: each subset is scored with the usual leaderboard and prompt-level
bootstrap, then audited against the same human reference.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from arena.errors import InputError


def load_pool_battles(paths: Sequence[Path], baseline: str | None = None) -> tuple[pd.DataFrame, str]:
    """Battles from judgment dirs/files or AlpacaEval annotation files (``.csv``/``.json``,
    optionally gzipped); soft AlpacaEval preferences keep their exact value."""
    from arena.io.alpaca_eval import read_annotations, soft_battles, to_judgments
    from arena.io.formats import read_judgments

    judgments = []
    for p in paths:
        p = Path(p)
        name = p.name.removesuffix(".gz")
        if p.is_file() and (name.endswith(".csv") or name.endswith(".json")):
            judgments.extend(to_judgments(read_annotations(p), baseline))
        else:
            judgments.extend(read_judgments(p))
    named = {j.baseline for j in judgments if j.baseline}
    if baseline is None:
        if len(named) != 1:
            raise InputError(f"cannot tell the baseline (found {sorted(named) or 'none'}); pass --baseline", field="baseline")
        baseline = named.pop()
    return soft_battles(judgments, baseline), baseline


def random_subset_scores(battles: pd.DataFrame, baseline: str, subset_size: int, rng: np.random.Generator, rounds: int = 100, ci: float = 0.95) -> pd.DataFrame:
    """Leaderboard (scores frame with bootstrap ``results``) of one random prompt subset."""
    from arena.audit.io import scores_from_leaderboard
    from arena.stats.ratings import leaderboard

    prompts = battles["question_id"].unique()
    if not 0 < subset_size <= len(prompts):
        raise InputError(f"subset size {subset_size} outside 1..{len(prompts)} (prompts in the pool)", field="subset-size")
    chosen = set(rng.choice(prompts, size=subset_size, replace=False).tolist())
    sub = battles[battles["question_id"].isin(chosen)]
    lb = leaderboard(sub, baseline, n_bootstrap=rounds, ci=ci, rng=rng)
    return scores_from_leaderboard(lb.table, lb.replicates)


def random_subset_audits(
    pool: Sequence[Path],
    reference: pd.DataFrame,
    names: Mapping[str, str | None],
    *,
    k: int,
    subset_size: int | None,
    rounds: int = 100,
    ci: float = 0.95,
    seed: int = 0,
    baseline: str | None = None,
) -> pd.DataFrame:
    """Benchmark-quality metrics of ``k`` random prompt subsets (one row per subset)."""
    from arena.audit.benchmark import audit_benchmark

    if not subset_size:
        raise InputError("--random-baseline needs --subset-size (the benchmark's number of prompts)", field="subset-size")
    battles, baseline = load_pool_battles(pool, baseline)
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(k):
        scores = random_subset_scores(battles, baseline, subset_size, rng, rounds, ci)
        rows.append({"subset": i, **audit_benchmark(scores, reference, dict(names), ci=ci).to_dict()})
    return pd.DataFrame(rows)
