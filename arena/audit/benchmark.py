"""Benchmark-quality metrics from the BenchBuilder paper (Li et al., 2024, section 3 and Table 4).

Every metric is a pure function over per-model arrays (score and confidence interval of the
benchmark, rating and confidence interval of a human-preference reference). Pairs are the
unordered pairs ``i < j`` of the models both sides share.

* separability with confidence: share of pairs whose benchmark CIs do not overlap;
* agreement with confidence interval, two variants (``paper`` and ``reference``);
* pair-rank Brier score with the normal approximation of the score difference;
* Spearman / Kendall rank correlation and strict pairwise agreement.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats

from arena.errors import InputError


def _pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(n, k=1)


def confident_order(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Per pair ``i < j``: +1 if i is confidently above j (``lower_i > upper_j``), -1 if below, 0 if the CIs overlap."""
    lower = np.asarray(lower, float)
    upper = np.asarray(upper, float)
    i, j = _pairs(len(lower))
    return np.where(lower[i] > upper[j], 1, np.where(upper[i] < lower[j], -1, 0))


def separability(lower: np.ndarray, upper: np.ndarray) -> float:
    """Share of model pairs whose confidence intervals do not overlap."""
    order = confident_order(lower, upper)
    return float(np.mean(order != 0)) if order.size else float("nan")


def agreement_paper(b_lower, b_upper, r_lower, r_upper) -> float:
    """Agreement with CI, ``paper`` variant: mean over all pairs of +1 (both sides confidently
    separate the pair in the same order), -1 (confidently, in opposite orders), 0 otherwise."""
    b = confident_order(b_lower, b_upper)
    r = confident_order(r_lower, r_upper)
    if b.size == 0:
        return float("nan")
    return float(np.mean(np.where((b != 0) & (r != 0), b * r, 0)))


def agreement_reference(b_lower, b_upper, r_lower, r_upper) -> float:
    """Agreement with CI, ``reference`` variant: only pairs the reference separates confidently
    count; each scores 1 for the same confident benchmark order, 0.5 when the benchmark CIs
    overlap and 0 for the opposite confident order."""
    b = confident_order(b_lower, b_upper)
    r = confident_order(r_lower, r_upper)
    keep = r != 0
    if not keep.any():
        return float("nan")
    points = np.where(b[keep] == 0, 0.5, np.where(b[keep] == r[keep], 1.0, 0.0))
    return float(points.mean())


def pair_rank_brier(mu: np.ndarray, var: np.ndarray, reference: np.ndarray) -> float:
    """Pair-rank Brier score: for each pair, P(a < b) = Phi(-(mu_a - mu_b) / sqrt(var_a + var_b))
    is scored against the reference outcome 1[ref_a < ref_b]. Pairs tied in the reference are
    left out; a pair with zero variance on both sides gets P = 0, 0.5 or 1."""
    mu = np.asarray(mu, float)
    var = np.asarray(var, float)
    ref = np.asarray(reference, float)
    i, j = _pairs(len(mu))
    keep = ref[i] != ref[j]
    i, j = i[keep], j[keep]
    if i.size == 0:
        return float("nan")
    diff = mu[i] - mu[j]
    sd = np.sqrt(var[i] + var[j])
    with np.errstate(divide="ignore", invalid="ignore"):
        p_below = np.where(sd > 0, stats.norm.cdf(-diff / np.where(sd > 0, sd, 1.0)), 0.5 * (1 - np.sign(diff)))
    y = (ref[i] < ref[j]).astype(float)
    return float(np.mean((p_below - y) ** 2))


def strict_pairwise_agreement(score: np.ndarray, reference: np.ndarray) -> float:
    """Share of all pairs ordered the same way, strictly, by the benchmark point scores and the
    reference ratings (a tie on either side counts as disagreement)."""
    s = np.asarray(score, float)
    r = np.asarray(reference, float)
    i, j = _pairs(len(s))
    if i.size == 0:
        return float("nan")
    ds, dr = np.sign(s[i] - s[j]), np.sign(r[i] - r[j])
    return float(np.mean((ds != 0) & (ds == dr)))


def normal_sd_from_ci(lower: np.ndarray, upper: np.ndarray, ci: float) -> np.ndarray:
    """Standard deviation of a normal whose central ``ci`` interval is ``[lower, upper]``."""
    z = stats.norm.ppf(0.5 + ci / 2)
    return (np.asarray(upper, float) - np.asarray(lower, float)) / (2 * z)


@dataclass
class BenchmarkAudit:
    """Result of :func:`audit_benchmark`; ``to_dict`` is what ``--output`` writes."""

    n_models: int
    n_pairs: int
    separability: float
    agreement_paper: float
    agreement_reference: float
    brier: float
    spearman: float
    kendall: float
    strict_pairwise_agreement: float
    models: list[str] = field(default_factory=list)
    unmatched_benchmark: list[str] = field(default_factory=list)
    unmatched_reference: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)

    METRICS = (
        "separability",
        "agreement_paper",
        "agreement_reference",
        "brier",
        "spearman",
        "kendall",
        "strict_pairwise_agreement",
    )


def benchmark_moments(scores, ci: float) -> "tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]":
    """Point score, CI and variance per model from a scores frame (``model, score, lower, upper``
    and optionally ``results``). With bootstrap replicates the CI is their central ``ci``
    percentile interval and the variance theirs; otherwise the given CI, read as normal."""
    score = scores["score"].to_numpy(float, copy=True)
    lower = scores["lower"].to_numpy(float, copy=True)
    upper = scores["upper"].to_numpy(float, copy=True)
    var = normal_sd_from_ci(lower, upper, ci) ** 2
    if "results" in scores.columns:
        for k, res in enumerate(scores["results"].tolist()):
            if isinstance(res, (list, tuple, np.ndarray)) and len(res) > 1:
                arr = np.asarray(res, float)
                lower[k], upper[k] = np.percentile(arr, [50 * (1 - ci), 50 * (1 + ci)])
                var[k] = arr.var(ddof=1)
    return score, lower, upper, var


def audit_benchmark(scores, reference, names: dict[str, str | None] | None = None, ci: float = 0.95) -> BenchmarkAudit:
    """All benchmark-quality metrics for the models that ``scores`` and ``reference`` share.

    ``scores``: frame with ``model, score, lower, upper`` (+ optional ``results``);
    ``reference``: frame with ``model, rating, lower, upper``; ``names`` maps benchmark model
    names to reference names (unmapped names are used as they are; a name mapped to ``None``
    is left unmatched).
    """
    names = names or {}
    scores = scores.copy()
    scores["ref_name"] = [names.get(m, m) for m in scores["model"]]
    ref = reference.drop_duplicates("model").set_index("model")
    matched = scores[scores["ref_name"].isin(ref.index)].reset_index(drop=True)
    dup = matched["ref_name"].duplicated(keep=False)
    if dup.any():
        clash = matched.loc[dup, ["model", "ref_name"]].values.tolist()
        raise InputError(f"several benchmark models map to one reference model: {clash}", field="names")
    unmatched_b = sorted(set(scores["model"]) - set(matched["model"]))
    unmatched_r = sorted(set(ref.index) - set(matched["ref_name"]))
    score, lower, upper, var = benchmark_moments(matched, ci)
    r = ref.loc[matched["ref_name"]]
    rating, r_lo, r_hi = (r[c].to_numpy(float) for c in ("rating", "lower", "upper"))
    n = len(matched)
    if n >= 2:
        spearman = float(stats.spearmanr(score, rating).statistic)
        kendall = float(stats.kendalltau(score, rating).statistic)
    else:
        spearman = kendall = float("nan")
    return BenchmarkAudit(
        n_models=n,
        n_pairs=n * (n - 1) // 2,
        separability=separability(lower, upper),
        agreement_paper=agreement_paper(lower, upper, r_lo, r_hi),
        agreement_reference=agreement_reference(lower, upper, r_lo, r_hi),
        brier=pair_rank_brier(score, var, rating),
        spearman=spearman,
        kendall=kendall,
        strict_pairwise_agreement=strict_pairwise_agreement(score, rating),
        models=matched["model"].tolist(),
        unmatched_benchmark=unmatched_b,
        unmatched_reference=unmatched_r,
    )
