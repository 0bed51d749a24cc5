"""Judge audits over pairwise judgments (arena-hard two-game layout).

Inputs are the battle table of :func:`arena.stats.ratings.battles_from_judgments` (one row per game:
``judge, question_id, model, opponent, category, game, label, status, score, weight``, where
``score`` is the *model's* score with the position swap already undone). Every function is a
pure function returning a pandas frame.

* verdict distribution and unparsed rate;
* position consistency (game 1 vs game 2 once the swap is undone) and first-position preference;
* length bias: judged win rate against the normalised length difference, slope with CI from a
  Bradley–Terry fit with a length covariate (:mod:`arena.stats.style`) and a prompt-level bootstrap;
* self-preference for judge/model pairs of one family;
* run-to-run variance of repeated runs (paper Table 8);
* inter-judge agreement: Cohen's kappa per pair, Fleiss' kappa and Krippendorff's alpha overall;
* agreement with human labels.
"""

from __future__ import annotations

import itertools
import re
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from arena.io.formats import VERDICT_LABELS

MIRROR = {"A>>B": "B>>A", "A>B": "B>A", "A=B": "A=B", "B>A": "A>B", "B>>A": "A>>B"}
# Labels as seen from the model's side (game 1 has the model as B, so its labels read as is
# after mapping B -> model). "M" = model, "O" = opponent.
_MODEL_VIEW_G1 = {"A>>B": "O>>M", "A>B": "O>M", "A=B": "M=O", "B>A": "M>O", "B>>A": "M>>O"}
MODEL_VIEW_LABELS = ("M>>O", "M>O", "M=O", "O>M", "O>>M")


def model_view_label(label: str | None, game: int) -> str | None:
    """A verdict as seen from the model's side, undoing the position swap of game 2."""
    if label is None or (isinstance(label, float) and np.isnan(label)):
        return None
    return _MODEL_VIEW_G1[label if game % 2 == 1 else MIRROR[label]]


def _groups(battles: pd.DataFrame, by: Sequence[str]) -> list[str]:
    return [c for c in by if c in battles.columns]


# --------------------------------------------------------------------------- distributions
def verdict_distribution(battles: pd.DataFrame, by: Sequence[str] = ("judge", "category")) -> pd.DataFrame:
    """Share of each raw verdict label (positional, as the judge wrote it) and the unparsed
    rate, per group; ``n_games`` counts every game, unparsed ones included."""
    by = _groups(battles, by)
    df = battles.assign(_label=battles["label"].where(battles["label"].notna(), "unparsed"))
    df[by] = df[by].fillna("(none)")
    counts = df.groupby(by + ["_label"]).size().unstack("_label", fill_value=0)
    for lab in (*VERDICT_LABELS, "unparsed"):
        if lab not in counts.columns:
            counts[lab] = 0
    counts = counts[[*VERDICT_LABELS, "unparsed"]]
    n = counts.sum(axis=1)
    out = counts.div(n, axis=0)
    out.columns = [f"share_{c}" for c in out.columns]
    out.insert(0, "n_games", n)
    return out.rename(columns={"share_unparsed": "unparsed_rate"}).reset_index()


def _paired_games(battles: pd.DataFrame) -> pd.DataFrame:
    """One row per (judge, question, model, opponent) with both games' labels."""
    keys = [c for c in ("judge", "question_id", "model", "opponent", "category") if c in battles.columns]
    df = battles[keys + ["game", "label"]].copy()
    if "category" in df.columns:
        df["category"] = df["category"].fillna("(none)")
    wide = df.pivot_table(index=keys, columns="game", values="label", aggfunc="first")
    wide = wide.reindex(columns=[1, 2]).reset_index()
    return wide.rename(columns={1: "g1", 2: "g2"})


def position_consistency(battles: pd.DataFrame, by: Sequence[str] = ("judge", "category")) -> pd.DataFrame:
    """How often game 1 and game 2 agree once the swap is undone.

    ``consistency``: identical verdict after mirroring game 2 (``A>B`` in game 1 matches
    ``B>A`` in game 2); ``direction_consistency``: same winner or both ties, ignoring strength;
    ``first_position_win``: share of decided games (either game) won by assistant A — 0.5 for
    a judge without position bias, since each side holds A once; ``n_pairs`` counts prompts
    with both games parsed.
    """
    if "category" in battles.columns:
        battles = battles.assign(category=battles["category"].fillna("(none)"))
    wide = _paired_games(battles)
    by = [c for c in by if c in wide.columns]
    both = wide.dropna(subset=["g1", "g2"]).copy()
    both["same"] = both["g1"] == both["g2"].map(MIRROR)
    sign = {"A>>B": 1, "A>B": 1, "A=B": 0, "B>A": -1, "B>>A": -1}
    both["same_dir"] = both["g1"].map(sign) == -both["g2"].map(sign)
    cons = both.groupby(by).agg(n_pairs=("same", "size"), consistency=("same", "mean"), direction_consistency=("same_dir", "mean"))
    # Only games of complete pairs: there each side holds position A once, so an unbiased
    # judge gives A half of the decided games (single-game records say nothing about position).
    games = pd.concat([both[by + ["g1"]].rename(columns={"g1": "label"}), both[by + ["g2"]].rename(columns={"g2": "label"})])
    decided = games[games["label"] != "A=B"]
    first = decided.assign(a_won=decided["label"].str.startswith("A>")).groupby(by)["a_won"].agg(["mean", "size"])
    first.columns = ["first_position_win", "n_decided"]
    return cons.join(first, how="left").reset_index()


# --------------------------------------------------------------------------- length bias
def length_bias(
    battles: pd.DataFrame,
    model_len: np.ndarray,
    opponent_len: np.ndarray,
    *,
    by: Sequence[str] = ("judge",),
    n_bootstrap: int = 200,
    ci: float = 0.95,
    rng: np.random.Generator | None = None,
    n_bins: int = 5,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Win rate against the normalised length difference ``(L_model - L_opp) / (L_model + L_opp)``.

    Returns (slopes, bins). ``slopes``: per group, the logit slope of the length difference in a
    Bradley–Terry model with one strength per model (so model quality is not read as length
    preference), with a prompt-level bootstrap CI. ``bins``: the raw weighted win rate of the
    model per quantile bin of the length difference.
    """
    from arena.stats.bootstrap import bootstrap_prompts, percentile_interval
    from arena.stats.style import fit_style_bt

    rng = rng if rng is not None else np.random.default_rng(0)
    la, lb = np.asarray(model_len, float), np.asarray(opponent_len, float)
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = np.where(la + lb > 0, (la - lb) / (la + lb), 0.0)
    df = battles.assign(len_diff=diff)
    ok = (df["weight"] > 0) & np.isfinite(la) & np.isfinite(lb)
    df = df[ok]
    by = _groups(df, by)
    slopes, bins = [], []
    for key, g in df.groupby(by, dropna=False) if by else [((), df)]:
        key = key if isinstance(key, tuple) else (key,)
        names = pd.Index(sorted(set(g["model"]) | set(g["opponent"])))
        anchor = names.get_loc(g["opponent"].iloc[0])
        i, j = names.get_indexer(g["model"]), names.get_indexer(g["opponent"])
        z = g["len_diff"].to_numpy()[:, None]
        y, w = g["score"].to_numpy(float), g["weight"].to_numpy(float)
        row = dict(zip(by, key))
        try:
            point = fit_style_bt(len(names), i, j, z, y, w, anchor=anchor)
            resample = bootstrap_prompts(g["question_id"].to_numpy(), n_bootstrap, rng)
            boot = fit_style_bt(len(names), i, j, z, y, resample.row_weights(w), anchor=anchor, init=(point.theta[0], point.gamma[0]))
            lo, hi = percentile_interval(boot.gamma[:, :1], ci)
            row.update(slope=point.gamma[0, 0], lower=lo[0], upper=hi[0])
        except (RuntimeError, np.linalg.LinAlgError):
            row.update(slope=np.nan, lower=np.nan, upper=np.nan)
        row.update(n_games=len(g), mean_len_diff=float(np.average(g["len_diff"], weights=w)))
        slopes.append(row)
        q = pd.qcut(g["len_diff"], q=min(n_bins, g["len_diff"].nunique()), duplicates="drop")
        tab = g.assign(ws=w * y, bin=q).groupby("bin", observed=True).agg(ws=("ws", "sum"), w=("weight", "sum"), n=("ws", "size"))
        for b, r in tab.iterrows():
            bins.append({**dict(zip(by, key)), "len_diff_bin": str(b), "win_rate": r["ws"] / r["w"], "n_games": int(r["n"])})
    return pd.DataFrame(slopes), pd.DataFrame(bins)


# --------------------------------------------------------------------------- self-preference
def family_of(name: str, families: Mapping[str, Sequence[str]]) -> str | None:
    """The family whose regex patterns match ``name`` (case-insensitive), else None."""
    for fam, patterns in families.items():
        if any(re.search(p, name, flags=re.IGNORECASE) for p in patterns):
            return fam
    return None


DEFAULT_FAMILIES: dict[str, list[str]] = {
    "openai": [r"^gpt-", r"^gpt4", r"^o[134]-", r"chatgpt"],
    "anthropic": [r"^claude"],
    "google": [r"^gemini", r"^gemma", r"^bard", r"^palm"],
    "meta": [r"llama"],
    "mistral": [r"mistral", r"mixtral"],
    "qwen": [r"qwen"],
}


def self_preference(battles: pd.DataFrame, families: Mapping[str, Sequence[str]] = DEFAULT_FAMILIES) -> pd.DataFrame:
    """For each (judge, model) pair of one family: the model's weighted win rate under that
    judge, under the other judges on the same prompts, and the difference (self-preference).
    ``other_win_rate`` is NaN when no other judge judged the model."""
    df = battles[battles["weight"] > 0].assign(ws=lambda d: d["weight"] * d["score"])
    rows = []
    for (judge, model), g in df.groupby(["judge", "model"]):
        fam = family_of(str(judge), families)
        if fam is None or fam != family_of(str(model), families):
            continue
        own = g["ws"].sum() / g["weight"].sum()
        others = df[(df["model"] == model) & (df["judge"] != judge) & df["question_id"].isin(g["question_id"])]
        other = others["ws"].sum() / others["weight"].sum() if len(others) else np.nan
        rows.append({"judge": judge, "model": model, "family": fam, "win_rate": own, "other_win_rate": other, "self_preference": own - other, "n_games": len(g)})
    return pd.DataFrame(rows, columns=["judge", "model", "family", "win_rate", "other_win_rate", "self_preference", "n_games"])


# --------------------------------------------------------------------------- repeated runs
def run_variance(runs: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Run-to-run variability of repeated judging runs (BenchBuilder paper, Table 8).

    ``runs``: run name -> battle table. Per model: the weighted win rate (%) in each run, their
    standard deviation across runs, and the share of games whose verdict is identical in every
    run (games matched on question, model, opponent, game)."""
    rates, labels = {}, []
    for name, b in runs.items():
        ok = b[b["weight"] > 0]
        rates[name] = 100 * (ok["weight"] * ok["score"]).groupby(ok["model"]).sum() / ok.groupby("model")["weight"].sum()
        labels.append(b.set_index(["question_id", "model", "opponent", "game"])["label"].rename(name))
    wr = pd.DataFrame(rates)
    out = wr.copy()
    out["sd"] = wr.std(axis=1, ddof=1)
    joined = pd.concat(labels, axis=1, join="inner")
    same = joined.nunique(axis=1, dropna=False).eq(1) & joined.notna().all(axis=1)
    out["verdict_agreement"] = same.groupby(level="model").mean()
    return out.reset_index(names="model")


# --------------------------------------------------------------------------- inter-judge agreement
def _label_matrix(battles: pd.DataFrame, collapse: bool) -> pd.DataFrame:
    """Items (question, model, opponent, game) x judges, label codes 0..4 (or 0..2 collapsed), NaN if missing."""
    codes = {lab: k for k, lab in enumerate(VERDICT_LABELS)}
    if collapse:
        codes = {"A>>B": 0, "A>B": 0, "A=B": 1, "B>A": 2, "B>>A": 2}
    df = battles.assign(code=battles["label"].map(codes))
    return df.pivot_table(index=["question_id", "model", "opponent", "game"], columns="judge", values="code", aggfunc="first")


def cohen_kappa(a: np.ndarray, b: np.ndarray, n_categories: int) -> float:
    """Cohen's kappa (unweighted) of two raters on the same items."""
    a, b = np.asarray(a, int), np.asarray(b, int)
    if a.size == 0:
        return float("nan")
    conf = np.zeros((n_categories, n_categories))
    np.add.at(conf, (a, b), 1)
    conf /= conf.sum()
    po = np.trace(conf)
    pe = conf.sum(1) @ conf.sum(0)
    return float((po - pe) / (1 - pe)) if pe < 1 else float("nan")


def fleiss_kappa(ratings: np.ndarray, n_categories: int) -> float:
    """Fleiss' kappa for items rated by the same number of raters (rows with no NaN)."""
    r = np.asarray(ratings, float)
    r = r[~np.isnan(r).any(axis=1)].astype(int)
    if len(r) == 0 or r.shape[1] < 2:
        return float("nan")
    n = r.shape[1]
    counts = np.stack([(r == c).sum(1) for c in range(n_categories)], axis=1)
    p_i = ((counts * (counts - 1)).sum(1)) / (n * (n - 1))
    p_j = counts.sum(0) / counts.sum()
    pe = (p_j**2).sum()
    return float((p_i.mean() - pe) / (1 - pe)) if pe < 1 else float("nan")


def judge_agreement(battles: pd.DataFrame, collapse: bool = False) -> tuple[pd.DataFrame, dict[str, float]]:
    """Cohen's kappa per judge pair on shared games, plus Fleiss' kappa (games every judge
    rated) and Krippendorff's alpha (nominal, missing allowed) overall."""
    import krippendorff

    k = 3 if collapse else 5
    mat = _label_matrix(battles, collapse)
    pairs = []
    for j1, j2 in itertools.combinations(mat.columns, 2):
        both = mat[[j1, j2]].dropna()
        pairs.append({"judge_1": j1, "judge_2": j2, "n_games": len(both), "cohen_kappa": cohen_kappa(both[j1], both[j2], k), "raw_agreement": float((both[j1] == both[j2]).mean()) if len(both) else np.nan})
    overall = {"fleiss_kappa": fleiss_kappa(mat.to_numpy(), k), "n_games_all_judges": int(mat.notna().all(axis=1).sum())}
    data = mat.to_numpy().T
    multi = (~np.isnan(data)).sum(0) >= 2
    if data.shape[0] >= 2 and multi.sum() >= 1 and len(np.unique(data[:, multi][~np.isnan(data[:, multi])])) > 1:
        overall["krippendorff_alpha"] = float(krippendorff.alpha(reliability_data=data[:, multi], level_of_measurement="nominal"))
    else:
        overall["krippendorff_alpha"] = float("nan")
    return pd.DataFrame(pairs, columns=["judge_1", "judge_2", "n_games", "cohen_kappa", "raw_agreement"]), overall


def human_agreement(battles: pd.DataFrame, human: pd.DataFrame) -> pd.DataFrame:
    """Agreement of each judge's per-prompt verdict with human labels.

    ``human``: ``question_id, model, winner`` with winner in {model, opponent, tie}. A judge's
    verdict on a prompt is the mean of the model's scores over its games (>0.5 model, <0.5
    opponent, 0.5 tie). Reports agreement with ties and on the prompts humans decided.
    """
    ok = battles[battles["weight"] > 0]
    per = ok.groupby(["judge", "question_id", "model"])["score"].mean().reset_index()
    per["judge_winner"] = np.select([per["score"] > 0.5, per["score"] < 0.5], ["model", "opponent"], "tie")
    hum = human.assign(question_id=human["question_id"].astype(str))[["question_id", "model", "winner"]]
    m = per.merge(hum, on=["question_id", "model"])
    rows = []
    for judge, g in m.groupby("judge"):
        decided = g[g["winner"] != "tie"]
        rows.append({"judge": judge, "n": len(g), "agreement": float((g["judge_winner"] == g["winner"]).mean()), "agreement_decided": float((decided["judge_winner"] == decided["winner"]).mean()) if len(decided) else np.nan})
    return pd.DataFrame(rows, columns=["judge", "n", "agreement", "agreement_decided"])
