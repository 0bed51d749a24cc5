"""Adaptive against uniform judging, replayed on AlpacaEval 2.0's 46,680 real verdicts.

Each model's 797 shared prompts are taken in one random order. Uniform judging judges every
model on the first k prompts, raising k in steps of `--batch` until no model is uncertain.
Adaptive judging stops each model on its own (arena/stats/adaptive.py). Both use the same
target: a simultaneous (Bonferroni) 95% CI half-width of at most the target, or a settled rank.
The target is given in win-rate points (`--ci-targets`, as `arena judge --target-ci`) or in Elo
points on the Bradley–Terry scale (`--elo-targets`, as `arena judge --target-elo`).

Reported over `--orders` random orders:
* verdicts used, and the adaptive/uniform ratio (mean and worst order);
* Spearman with the full-data ranking (mean and worst order);
* covered: the share of orders in which every model's full-data win rate lies inside the CI
  the run reports when judging stops;
* inside: the share of models whose stopping estimate lies inside the full-data 95% CI, and the
  share of orders in which every model does;
* flat: the same readings for judging every model on the same number of prompts as the
  adaptive run used on average.

For one model judged on a fraction f of the prompts, the chance that its estimate falls outside
the full-data 95% CI is about P(|Z| > 1.96·sqrt(f/(1 − f))), whatever the rule. That is convex
in f, so at a mean fraction f̄ no allocation expects fewer than 58·P(f̄) models outside: 0.95
at f̄ = 0.6 (the full-data CIs here are conservative, so fewer are seen). "Every model inside in
every order" therefore cannot hold at 60% of the calls under any stopping rule. The flat
allocation is the best case for that reading. Adaptive judging moves prompts to where the
ranking is uncertain, which is better for Spearman and slightly worse for "inside".
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from arena.stats.adaptive import (
    ELO_PER_LOGIT, mean_ci, paired_verdicts, simulate_adaptive, simulate_uniform, simultaneous_level,
)

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "alpaca_eval"


def replay(verdicts: dict, full: np.ndarray, full_half: np.ndarray, *, target: float, scale: str, level: float,
           orders: int, batch: int, min_prompts: int) -> dict:
    """One target replayed over `orders` random prompt orders; the readings of the docstring."""
    matrix = np.array(list(verdicts.values()))
    n_prompts = matrix.shape[1]
    rows = []
    for seed in range(orders):
        order = np.random.default_rng(seed).permutation(n_prompts)
        kw = dict(target_halfwidth=target, ci=level, batch=batch, min_prompts=min_prompts, scale=scale)
        u = simulate_uniform(verdicts, order, **kw)
        a = simulate_adaptive(verdicts, order, **kw)
        inside = np.abs(a.mean - full) <= full_half
        flat = matrix[:, order[: int(round(a.n_judged.mean()))]].mean(axis=1)
        flat_inside = np.abs(flat - full) <= full_half
        rows.append((u.calls, a.calls, a.calls / u.calls, spearmanr(a.mean, full)[0],
                     np.all(np.abs(a.mean - full) <= a.halfwidth), inside.mean(), inside.all(),
                     spearmanr(flat, full)[0], flat_inside.mean(), flat_inside.all()))
    r = np.array(rows, dtype=float)
    return dict(uniform=r[:, 0].mean(), adaptive=r[:, 1].mean(), ratio=r[:, 2].mean(), ratio_max=r[:, 2].max(),
                rho=r[:, 3].mean(), rho_min=r[:, 3].min(), covered=r[:, 4].mean(), inside=r[:, 5].mean(),
                all_inside=r[:, 6].mean(), flat_rho_min=r[:, 7].min(), flat_inside=r[:, 8].mean(), flat_all_inside=r[:, 9].mean())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--elo-targets", type=float, nargs="*", default=[120.0, 130.0])
    ap.add_argument("--ci-targets", type=float, nargs="*", default=[3.6, 4.0], help="win-rate points")
    ap.add_argument("--min-prompts", type=int, nargs="+", default=[50, 300])
    ap.add_argument("--orders", type=int, default=40)
    ap.add_argument("--batch", type=int, default=10)
    args = ap.parse_args()
    d = pd.read_csv(DATA / "ae2_gpt4turbo_preferences.csv.gz")
    verdicts, keys = paired_verdicts(d["model"], d["instruction_index"], d["preference"] - 1)
    level = simultaneous_level(0.95, len(verdicts))
    full = np.array([mean_ci(v, 0.95) for v in verdicts.values()])
    print(f"{len(verdicts)} models x {len(keys)} shared prompts = {len(verdicts) * len(keys)} verdicts; "
          f"per-model level {level:.5f}; {args.orders} random orders; batch {args.batch}")
    print("target     min  uniform adaptive ratio(mean/max)  spearman(mean/min) covered inside all-in | flat: rho-min inside all-in")
    targets = [(t, "bt", f"{t:g} Elo") for t in args.elo_targets] + [(t, "winrate", f"{t:g} pts") for t in args.ci_targets]
    for target, scale, label in targets:
        for min_prompts in args.min_prompts:
            t0 = time.perf_counter()
            r = replay(verdicts, full[:, 0], full[:, 1], target=target / (ELO_PER_LOGIT if scale == "bt" else 100), scale=scale,
                       level=level, orders=args.orders, batch=args.batch, min_prompts=min_prompts)
            print(f"{label:<10} {min_prompts:>3}  {r['uniform']:>7.0f} {r['adaptive']:>8.0f} {r['ratio']:.3f} / {r['ratio_max']:.3f}"
                  f"    {r['rho']:.4f} / {r['rho_min']:.4f}    {r['covered']:.2f}   {r['inside']:.3f}  {r['all_inside']:.2f}"
                  f"  |  {r['flat_rho_min']:.4f}  {r['flat_inside']:.3f}  {r['flat_all_inside']:.2f}"
                  f"   ({time.perf_counter() - t0:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
