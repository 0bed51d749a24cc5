"""Adaptive against uniform judging, replayed on AlpacaEval 2.0's 46,680 real verdicts.

Each model's 797 shared prompts are taken in one random order. Uniform judging judges every
model on the first k prompts, raising k in steps of `--batch` until no model is uncertain;
adaptive judging stops each model on its own (arena/stats/adaptive.py). Both use the same
target: a simultaneous (Bonferroni) 95% CI half-width of at most `--target` or a settled rank.
Reported over `--orders` random orders: verdicts used, the ratio, Spearman with the full-data
ranking, and two readings of "stays within its full-data CI":

* covered: the full-data win rate lies inside the model's CI when judging stopped;
* inside:  the model's stopping estimate lies inside the full-data CI. For any model judged on
  n of N prompts this fails with probability P(|Z| > z·(N/n − 1)^(-1/2)) whatever the rule, so
  it only holds for every model when nearly all prompts are used (see the module docstring).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from arena.stats.adaptive import mean_ci, paired_verdicts, simulate_adaptive, simulate_uniform, simultaneous_level

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "alpaca_eval"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", type=float, nargs="+", default=[0.036, 0.04, 0.05])
    ap.add_argument("--orders", type=int, default=20)
    ap.add_argument("--batch", type=int, default=10)
    args = ap.parse_args()
    d = pd.read_csv(DATA / "ae2_gpt4turbo_preferences.csv.gz")
    verdicts, keys = paired_verdicts(d["model"], d["instruction_index"], d["preference"] - 1)
    ci = simultaneous_level(0.95, len(verdicts))
    full = np.array([mean_ci(v, 0.95) for v in verdicts.values()])
    print(f"{len(verdicts)} models x {len(keys)} shared prompts = {len(verdicts) * len(keys)} verdicts; "
          f"per-model level {ci:.5f}; {args.orders} random orders; batch {args.batch}")
    print("target  uniform  adaptive  ratio   spearman(mean/min)  covered  inside")
    for target in args.target:
        rows = []
        t0 = time.perf_counter()
        for seed in range(args.orders):
            order = np.random.default_rng(seed).permutation(len(keys))
            u = simulate_uniform(verdicts, order, target_halfwidth=target, ci=ci, batch=args.batch)
            a = simulate_adaptive(verdicts, order, target_halfwidth=target, ci=ci, batch=args.batch)
            rows.append((u.calls, a.calls, a.calls / u.calls, spearmanr(a.mean, full[:, 0])[0],
                         np.mean(np.abs(a.mean - full[:, 0]) <= a.halfwidth),
                         np.mean(np.abs(a.mean - full[:, 0]) <= full[:, 1])))
        r = np.array(rows)
        print(f"{target:<7} {r[:, 0].mean():>7.0f}  {r[:, 1].mean():>8.0f}  {r[:, 2].mean():.3f}   "
              f"{r[:, 3].mean():.3f} / {r[:, 3].min():.3f}       {r[:, 4].mean():.3f}    {r[:, 5].mean():.3f}"
              f"   ({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
