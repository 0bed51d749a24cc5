"""Statistical validity of the leaderboard CIs: 400 simulated arenas with known Bradley–Terry
strengths; the 95% prompt-bootstrap CI should cover the true win rate in 93–97% of runs.

    python bench/audit_ci_coverage.py [--runs 400] [--seed 2024]

Reports coverage for the first model of every run (one interval per run, independent runs)
and pooled over all models, next to the binomial 95% band of a correct method.
"""

from __future__ import annotations

import argparse
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
    args = ap.parse_args()
    t0 = time.perf_counter()
    res = bootstrap_ci_coverage(np.random.default_rng(args.seed), args.runs, n_models=args.models, n_prompts=args.prompts, n_bootstrap=args.bootstrap)
    first = res.groupby("run").first()
    cov1, covall = first["covered"].mean(), res["covered"].mean()
    band = 1.96 * np.sqrt(0.95 * 0.05 / args.runs)
    print(f"{args.runs} runs x {args.models} models x {args.prompts} prompts x 2 games, {args.bootstrap} bootstrap rounds, seed {args.seed}")
    print(f"coverage (one model per run): {cov1:.2%}  [target 93-97%; binomial band of a correct method 95% +- {band:.2%}]")
    print(f"coverage (all {len(res)} intervals): {covall:.2%}")
    print(f"mean CI width {np.mean(res['upper'] - res['lower']):.2f} pp; elapsed {time.perf_counter() - t0:.1f}s")
    print("PASS" if 0.93 <= cov1 <= 0.97 else "FAIL")


if __name__ == "__main__":
    main()
