"""Time `arena show`'s statistics against a re-implementation of arena-hard-auto v0.1's method.

Workload: 30 models x 500 prompts x 2 games against one baseline, 100 bootstrap rounds.
Reference (arena-hard-auto v0.1 ``show_result.py``): battle rows with strong verdicts repeated
``WEIGHT`` times, each round ``battles.sample(frac=1, replace=True)``, pivot tables, then an
sklearn ``LogisticRegression`` (no penalty, no intercept) refit; win rate against the baseline
from the fitted ratings. Ours: closed-form Bradley–Terry (weighted mean) and a prompt-level
bootstrap as one matrix product. Both run here, in this process, on the same battles.

Note the bootstraps differ on purpose (rows vs prompts), so only point estimates are compared;
the reference's LogisticRegression tolerance is tightened to 1e-10 (arena-hard uses 1e-6) so that
its optimiser error does not mask the comparison; both figures are printed.

Run: python bench/arena_show_stats.py [--models 30] [--prompts 500] [--rounds 100]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import pandas as pd

from arena.io.formats import Game, Judgment
from arena.stats.ratings import battles_from_judgments, leaderboard

LABELS = ["A>>B", "A>B", "A=B", "B>A", "B>>A"]


def simulate(n_models: int, n_prompts: int, rng: np.random.Generator) -> list[Judgment]:
    """Two-game judgments against one baseline, drawn from Bradley–Terry strengths."""
    strength = rng.normal(0, 1, n_models)
    out = []
    for m in range(n_models):
        p_win = 1 / (1 + np.exp(-strength[m]))
        # the model's view: strong loss, loss, tie, win, strong win
        cuts = np.array([0.25 * (1 - p_win), (1 - p_win) * 0.9, (1 - p_win) * 0.9 + 0.1, 1 - 0.25 * p_win])
        o1 = np.searchsorted(cuts, rng.random(n_prompts))
        o2 = np.searchsorted(cuts, rng.random(n_prompts))
        for q in range(n_prompts):
            # game 1: the baseline is A, so a model win is B>A; game 2: the model is A
            games = [Game(None, None, LABELS[4 - o1[q]]), Game(None, None, LABELS[o2[q]])]
            out.append(Judgment(f"q{q}", f"m{m:02d}", "judge", games, baseline="baseline"))
    return out


# ---------------------------------------------------------------- arena-hard-auto v0.1 reference
def reference_battles(b: pd.DataFrame, weight: int = 3) -> pd.DataFrame:
    """arena-hard v0.1 battle rows: model_a/model_b/winner, strong verdicts repeated."""
    out = []
    for r in b.itertuples(index=False):
        a, bb = ("baseline", r.model) if r.game == 1 else (r.model, "baseline")
        lab = r.label
        winner = "tie" if lab == "A=B" else ("model_a" if lab.startswith("A>") else "model_b")
        reps = weight if ">>" in lab else 1
        out.extend([(a, bb, winner)] * reps)
    return pd.DataFrame(out, columns=["model_a", "model_b", "winner"])


def reference_mle_elo(df: pd.DataFrame, tol: float, scale=400, base=10, init=1000) -> pd.Series:
    from sklearn.linear_model import LogisticRegression

    ptbl_a_win = pd.pivot_table(df[df["winner"] == "model_a"], index="model_a", columns="model_b", aggfunc="size", fill_value=0)
    if sum(df["winner"].isin(["tie", "tie (bothbad)"])) == 0:
        ptbl_tie = pd.DataFrame(0, index=ptbl_a_win.index, columns=ptbl_a_win.columns)
    else:
        ptbl_tie = pd.pivot_table(df[df["winner"].isin(["tie", "tie (bothbad)"])], index="model_a", columns="model_b", aggfunc="size", fill_value=0)
        ptbl_tie = ptbl_tie + ptbl_tie.T
    ptbl_b_win = pd.pivot_table(df[df["winner"] == "model_b"], index="model_a", columns="model_b", aggfunc="size", fill_value=0)
    ptbl_win = ptbl_a_win * 2 + ptbl_b_win.T * 2 + ptbl_tie
    models = pd.Series(np.arange(len(ptbl_win.index)), index=ptbl_win.index)
    p = len(models)
    X = np.zeros([p * (p - 1) * 2, p])
    Y = np.zeros(p * (p - 1) * 2)
    cur, sample_weights = 0, []
    for m_a in ptbl_win.index:
        for m_b in ptbl_win.columns:
            if m_a == m_b:
                continue
            if math.isnan(ptbl_win.loc[m_a, m_b]) or math.isnan(ptbl_win.loc[m_b, m_a]):
                continue
            X[cur, models[m_a]] = +math.log(base)
            X[cur, models[m_b]] = -math.log(base)
            Y[cur] = 1.0
            sample_weights.append(ptbl_win.loc[m_a, m_b])
            X[cur + 1, models[m_a]] = math.log(base)
            X[cur + 1, models[m_b]] = -math.log(base)
            Y[cur + 1] = 0.0
            sample_weights.append(ptbl_win.loc[m_b, m_a])
            cur += 2
    X, Y = X[:cur], Y[:cur]
    # penalty=None in arena-hard; C=inf is the same unpenalised fit without sklearn>=1.8's deprecation
    lr = LogisticRegression(fit_intercept=False, C=np.inf, tol=tol, max_iter=10_000)
    lr.fit(X, Y, sample_weight=sample_weights)
    return pd.Series(scale * lr.coef_[0] + init, index=models.index)


def reference_win_rates(elo: pd.Series, baseline="baseline") -> pd.Series:
    return 1 / (1 + 10 ** ((elo[baseline] - elo.drop(baseline)) / 400))


def reference_show(battles: pd.DataFrame, rounds: int, tol: float, seed: int = 0) -> tuple[pd.Series, pd.DataFrame]:
    np.random.seed(seed)  # arena-hard seeds numpy's global generator
    point = reference_win_rates(reference_mle_elo(battles, tol))
    reps = [reference_win_rates(reference_mle_elo(battles.sample(frac=1.0, replace=True), tol)) for _ in range(rounds)]
    return point, pd.DataFrame(reps)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", type=int, default=30)
    ap.add_argument("--prompts", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=100)
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    judgments = simulate(args.models, args.prompts, rng)
    battles = battles_from_judgments(judgments, "baseline")
    ref_rows = reference_battles(battles)
    print(f"{args.models} models x {args.prompts} prompts x 2 games = {len(battles)} games ({len(ref_rows)} arena-hard battle rows); {args.rounds} bootstrap rounds")

    t0 = time.perf_counter()
    ours = leaderboard(battles, "baseline", n_bootstrap=args.rounds, rng=np.random.default_rng(0))
    t_ours = time.perf_counter() - t0

    t0 = time.perf_counter()
    ref_point, _ = reference_show(ref_rows, args.rounds, tol=1e-10)
    t_ref = time.perf_counter() - t0

    ours_point = ours.table.set_index("model")["score"].drop("baseline") / 100
    diff = float(np.max(np.abs(ours_point.reindex(ref_point.index) - ref_point)))
    loose = reference_win_rates(reference_mle_elo(ref_rows, tol=1e-6))
    diff_loose = float(np.max(np.abs(ours_point.reindex(loose.index) - loose)))
    print(f"ours (closed form + prompt bootstrap): {t_ours:.3f} s")
    print(f"reference (arena-hard v0.1: row resample + LogisticRegression refit): {t_ref:.2f} s")
    print(f"max |point estimate difference| (win rate): {diff:.2e} (reference tol 1e-10); {diff_loose:.2e} with arena-hard's tol 1e-6")
    print(f"speedup: {t_ref / t_ours:.0f}")


if __name__ == "__main__":
    main()
