"""Statistical validity of the leaderboard CIs: simulated arenas with known win rates, games
correlated within a prompt (a random effect of SD ``--prompt-sd`` per prompt, shared by both
games and every model). The 95% prompt-bootstrap CI should cover the true (marginal) win rate in
93–97% of runs; a game-level bootstrap, run on the same arenas, under-covers.

    python bench/audit_ci_coverage.py [--runs 400] [--seed 2024] [--prompt-sd 4]

Reports coverage for the first model of every run (one interval per run, independent runs)
and pooled over all models, next to the binomial 95% band of a correct method.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from arena.audit.simulate import bootstrap_ci_coverage


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=400)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--models", type=int, default=5)
    ap.add_argument("--prompts", type=int, default=300)
    ap.add_argument("--bootstrap", type=int, default=200)
    ap.add_argument("--prompt-sd", type=float, default=4.0)
    args = ap.parse_args()
    print(f"{args.runs} runs x {args.models} models x {args.prompts} prompts x 2 games, {args.bootstrap} bootstrap rounds, prompt effect SD {args.prompt_sd}, seed {args.seed}")
    band = 1.96 * np.sqrt(0.95 * 0.05 / args.runs)
    verdict = {}
    for unit in ("prompt", "game"):
        t0 = time.perf_counter()
        res = bootstrap_ci_coverage(
            np.random.default_rng(args.seed), args.runs, n_models=args.models, n_prompts=args.prompts,
            n_bootstrap=args.bootstrap, prompt_sd=args.prompt_sd, resample=unit,
        )
        cov1 = res.groupby("run").first()["covered"].mean()
        verdict[unit] = cov1
        print(f"[{unit}-level bootstrap] coverage (one model per run): {cov1:.2%}  [target 93-97%; binomial band of a correct method 95% +- {band:.2%}]")
        print(f"[{unit}-level bootstrap] coverage (all {len(res)} intervals): {res['covered'].mean():.2%}; mean CI width {np.mean(res['upper'] - res['lower']):.2f} pp; {time.perf_counter() - t0:.1f}s")
    print(f"load average (1/5/15 min): {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    ok = 0.93 <= verdict["prompt"] <= 0.97 and verdict["game"] < 0.90
    print("PASS" if ok else "FAIL", "(prompt-level within 93-97%, game-level below 90%)")


if __name__ == "__main__":
    main()
