"""Statistical validity: bootstrap CIs cover known win rates at the nominal rate, on games that
are correlated within a prompt as real judgments are.

Every game's logit carries a random effect of its prompt (SD 4, shared by both position-swapped
games and by every model), so the right resampling unit is the prompt. The prompt-level bootstrap
of the leaderboard must cover ~95%; resampling games one by one treats the two games of a prompt
as independent, understates the variance and must visibly under-cover. The full acceptance run
(400 arenas, one interval per run) is bench/audit_ci_coverage.py."""

from __future__ import annotations

import numpy as np
import pytest

from arena.audit.simulate import bootstrap_ci_coverage, marginal_win_rate

PROMPT_SD = 4.0


@pytest.fixture(scope="module")
def coverage():
    kw = dict(n_models=5, n_prompts=100, n_bootstrap=200, prompt_sd=PROMPT_SD)
    # The same seed gives the same simulated arenas to both methods.
    prompt = bootstrap_ci_coverage(np.random.default_rng(7), 200, resample="prompt", **kw)
    game = bootstrap_ci_coverage(np.random.default_rng(7), 200, resample="game", **kw)
    return prompt, game


def test_prompt_bootstrap_covers_and_game_bootstrap_does_not(coverage):
    prompt, game = coverage
    assert len(prompt) == len(game) == 1000
    # Same arenas, same point estimates: only the intervals differ.
    assert np.allclose(prompt["score"], game["score"]) and np.allclose(prompt["truth"], game["truth"])
    # A correct 95% method lands in [0.93, 0.97] for 1000 intervals (binomial band +-1.4 pp; the
    # intervals of one run share prompts and their effects, which widens it).
    assert 0.93 <= prompt["covered"].mean() <= 0.97
    # Resampling games independently misses the within-prompt correlation: with this prompt
    # effect the intervals are ~15% too narrow, nominal 95% becomes ~88%.
    assert game["covered"].mean() < 0.90
    assert (game["upper"] - game["lower"]).mean() < 0.92 * (prompt["upper"] - prompt["lower"]).mean()
    # Point estimates are unbiased for the marginal win rate.
    assert abs((prompt["score"] - prompt["truth"]).mean()) < 0.5


def test_truth_is_the_marginal_win_rate():
    # E_u[sigmoid(theta + u)] by quadrature vs Monte Carlo; it is not sigmoid(theta) once u varies.
    u = np.random.default_rng(0).normal(0, PROMPT_SD, 400_000)
    for theta in (-1.0, 0.3, 2.0):
        mc = np.mean(1 / (1 + np.exp(-(theta + u))))
        assert marginal_win_rate(np.array([theta]), PROMPT_SD)[0] == pytest.approx(mc, abs=3e-3)
    assert abs(marginal_win_rate(np.array([2.0]), PROMPT_SD)[0] - 1 / (1 + np.exp(-2.0))) > 0.1


def test_too_narrow_intervals_would_be_caught(coverage):
    # Sanity check of the check: shrinking every CI to a third of its width must fail coverage.
    res = coverage[0]
    mid = (res["lower"] + res["upper"]) / 2
    half = (res["upper"] - res["lower"]) / 6
    narrow = ((mid - half <= res["truth"]) & (res["truth"] <= mid + half)).mean()
    assert narrow < 0.6
