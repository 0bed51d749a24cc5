"""The prompt-level bootstrap: one resampling scheme for ratings, style control and judge audits.

A replicate draws ``P`` prompts with replacement from the ``P`` prompts judged; every game of a
drawn prompt (both position-swapped games, every model's games, every judge's) enters with the
prompt's draw count as its weight. Games of one prompt are correlated (a hard prompt is hard for
every model and in both positions), so resampling games one by one would understate the
variance; ``tests/audit/test_ci_coverage.py`` shows the difference on correlated simulations.

Replicates are returned as draw counts, not index lists: every estimator here is a weighted fit,
so a replicate is the original data with weights ``counts[r, prompt_of_row] * weight`` and the
design is shared by all replicates (one matrix product for closed forms, one batched Newton
solve for Bradley–Terry).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Bootstrap:
    """Draw counts of each resampling unit (prompt) per replicate.

    ``counts`` (R, P): how often unit ``p`` is drawn in replicate ``r`` (each row sums to P);
    ``unit_of_row`` (n,): the unit of every row of the data; ``units``: unit labels, sorted."""

    counts: np.ndarray
    unit_of_row: np.ndarray
    units: pd.Index

    @property
    def n_rounds(self) -> int:
        return self.counts.shape[0]

    def row_weights(self, weight: np.ndarray | None = None) -> np.ndarray:
        """Per replicate and row, the row's weight: ``counts[r, unit_of_row] * weight``, (R, n)."""
        w = self.counts[:, self.unit_of_row]
        return w if weight is None else w * np.asarray(weight, float)

    def indices(self, r: int) -> np.ndarray:
        """Row indices of replicate ``r`` as an explicit resample (each row repeated as often as
        its unit was drawn), for estimators that take a data set rather than weights."""
        return np.repeat(np.arange(len(self.unit_of_row)), self.counts[r, self.unit_of_row].astype(int))


def draw_counts(n_units: int, n_rounds: int, rng: np.random.Generator) -> np.ndarray:
    """Multinomial draw counts (n_rounds, n_units) of ``n_units`` units resampled with replacement."""
    if n_rounds <= 0 or n_units == 0:
        return np.zeros((max(n_rounds, 0), n_units))
    return rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=n_rounds).astype(np.float64)


def bootstrap_prompts(prompt_ids, n_rounds: int, rng: np.random.Generator) -> Bootstrap:
    """Prompt-level bootstrap of rows labelled by ``prompt_ids`` (one label per row)."""
    codes, units = pd.factorize(np.asarray(prompt_ids, dtype=object), sort=True)
    return Bootstrap(counts=draw_counts(len(units), n_rounds, rng), unit_of_row=codes, units=pd.Index(units))


def bootstrap_rows(n_rows: int, n_rounds: int, rng: np.random.Generator) -> Bootstrap:
    """Row-level (game-level) bootstrap: every row its own unit. Wrong for arena data, whose games
    are correlated within a prompt; kept to show that (``arena.audit.simulate``)."""
    return Bootstrap(counts=draw_counts(n_rows, n_rounds, rng), unit_of_row=np.arange(n_rows), units=pd.RangeIndex(n_rows))


def percentile_interval(replicates: np.ndarray, ci: float) -> tuple[np.ndarray, np.ndarray]:
    """Central ``ci`` percentile interval of each column of ``replicates`` (R, K), ignoring NaN
    (a replicate in which an item has no game); NaN where there is no replicate."""
    if not 0 < ci < 1:
        raise ValueError("ci must be in (0, 1)")
    reps = np.asarray(replicates, float)
    if reps.shape[0] == 0:
        nan = np.full(reps.shape[1:], np.nan)
        return nan, nan.copy()
    a = (1.0 - ci) / 2.0
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column has no interval
        quantile = np.nanquantile if np.isnan(reps).any() else np.quantile  # nanquantile loops per column
        return quantile(reps, a, axis=0), quantile(reps, 1 - a, axis=0)
