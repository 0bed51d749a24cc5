"""Statistical validity: bootstrap CIs cover known Bradley–Terry win rates at the nominal rate.

The full acceptance run (400 arenas, one interval per run, 93–97%) is bench/audit_ci_coverage.py;
this is the cheaper version for CI: 100 arenas, all 500 intervals pooled."""

from __future__ import annotations

import numpy as np

from arena.audit.simulate import bootstrap_ci_coverage


def test_bootstrap_ci_coverage_is_nominal():
    res = bootstrap_ci_coverage(np.random.default_rng(7), 100, n_models=5, n_prompts=200, n_bootstrap=200)
    assert len(res) == 500
    # A correct 95% method lands in [0.93, 0.97] with probability ~0.99 for 500 intervals
    # (the intervals of one run share a bootstrap, so the band is a little wider than binomial).
    assert 0.92 <= res["covered"].mean() <= 0.975
    # Point estimates are unbiased for the true win rate.
    assert abs((res["score"] - res["truth"]).mean()) < 0.5


def test_too_narrow_intervals_would_be_caught():
    # Sanity check of the check: shrinking every CI to a third of its width must fail coverage.
    res = bootstrap_ci_coverage(np.random.default_rng(8), 40, n_models=5, n_prompts=200, n_bootstrap=100)
    mid = (res["lower"] + res["upper"]) / 2
    half = (res["upper"] - res["lower"]) / 6
    narrow = ((mid - half <= res["truth"]) & (res["truth"] <= mid + half)).mean()
    assert narrow < 0.6
