"""Style-controlled Bradley–Terry (arena-hard v2 / Chatbot Arena "style control").

Battle ``k`` pits item ``i[k]`` against item ``j[k]``; ``y[k]`` in [0, 1] is the score of ``i``
(tie 0.5) with weight ``w[k]``, and ``z[k]`` holds style covariates of ``i``'s answer relative to
``j``'s. The model is

    logit P(i beats j) = theta_i - theta_j + gamma . z

with ``theta[anchor] = 0``. We maximise the weighted log-likelihood *exactly*: damped Newton
(Armijo backtracking) to a gradient norm <= ``tol`` (default 1e-6), on all bootstrap replicates
at once. Replicates are prompt-count weight vectors, so every replicate shares one design; the
Hessian is assembled blockwise with sparse/BLAS products (theta–theta via the battle pairs,
theta–gamma via the sparse item incidence, gamma–gamma via z⊗z), so one Newton iteration for
100 replicates costs a few matrix products instead of 100 separate fits. Hand-written because
arena-hard's torch LBFGS (fixed 50 iterations, lr 0.1, no line search) stops before
convergence, and scipy/sklearn would refit every replicate from scratch.

Style covariates (:func:`style_features`), computed from answer metadata as in arena-hard's
``conv_metadata``:

* ``length``: normalised length difference ``(L_i - L_j) / (L_i + L_j)`` (tokens);
* ``markdown``: for headers, lists and bold, the normalised difference of densities
  (count per token) ``(d_i - d_j) / (d_i + d_j)`` (0 when neither answer has any);

each column is then standardised (z-scored over the battles), so coefficients are per SD.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.special import expit

MARKDOWN_ELEMENTS = ("header_count", "list_count", "bold_count")
STYLE_GROUPS = {"length": ("length",), "markdown": tuple(f"{e.removesuffix('_count')}_density" for e in MARKDOWN_ELEMENTS)}


# --------------------------------------------------------------------------- features
def _count(value) -> float:
    """conv_metadata counts are ints or dicts (e.g. ``{"h1": 2, "h2": 0}``)."""
    if value is None:
        return np.nan
    if isinstance(value, Mapping):
        return float(sum(value.values()))
    return float(value)


def _norm_diff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    s = a + b
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(s > 0, (a - b) / np.where(s > 0, s, 1.0), 0.0)


def style_features(model_meta: pd.DataFrame, opponent_meta: pd.DataFrame, groups: Sequence[str] = ("length", "markdown")) -> pd.DataFrame:
    """Standardised style covariates of the model's answer relative to the opponent's.

    Both frames hold one row per battle with ``token_len``, ``header_count``, ``list_count``,
    ``bold_count`` (ints, or conv_metadata dicts summed over their values).
    """
    unknown = set(groups) - set(STYLE_GROUPS)
    if unknown:
        raise ValueError(f"unknown style groups {sorted(unknown)}; choose from {sorted(STYLE_GROUPS)}")
    la = model_meta["token_len"].map(_count).to_numpy(float)
    lb = opponent_meta["token_len"].map(_count).to_numpy(float)
    cols: dict[str, np.ndarray] = {}
    if "length" in groups:
        cols["length"] = _norm_diff(la, lb)
    if "markdown" in groups:
        for element, name in zip(MARKDOWN_ELEMENTS, STYLE_GROUPS["markdown"]):
            ca = model_meta[element].map(_count).to_numpy(float)
            cb = opponent_meta[element].map(_count).to_numpy(float)
            with np.errstate(invalid="ignore", divide="ignore"):
                da = ca / np.maximum(la, 1.0)
                db = cb / np.maximum(lb, 1.0)
            cols[name] = _norm_diff(da, db)
    raw = pd.DataFrame(cols)
    if raw.isna().any().any():
        raise ValueError("style metadata missing for some battles (token_len / markdown counts)")
    sd = raw.std(ddof=0).replace(0.0, 1.0)
    return (raw - raw.mean()) / sd


# --------------------------------------------------------------------------- exact fit
@dataclass
class StyleBTFit:
    """Fitted parameters for ``R`` weight vectors: ``theta (R, n_items)`` with the anchor at 0,
    ``gamma (R, S)``, the final gradient norms and Newton iterations used."""

    theta: np.ndarray
    gamma: np.ndarray
    grad_norm: np.ndarray
    n_iter: int


class _Design:
    """Shared sparse pieces of the style-BT design for one set of battles."""

    def __init__(self, n_items: int, i: np.ndarray, j: np.ndarray, z: np.ndarray, anchor: int):
        n = len(i)
        self.n_items, self.anchor, self.z = n_items, anchor, z
        self.i, self.j = i, j
        self.free = np.array([k for k in range(n_items) if k != anchor], dtype=int)
        pos = np.full(n_items, -1)
        pos[self.free] = np.arange(len(self.free))
        fi, fj = pos[i], pos[j]
        m = len(self.free)
        # Incidence of free items: +1 for i, -1 for j (the anchor's column is dropped).
        rows = np.concatenate([np.arange(n)[fi >= 0], np.arange(n)[fj >= 0]])
        cols = np.concatenate([fi[fi >= 0], fj[fj >= 0]])
        vals = np.concatenate([np.ones((fi >= 0).sum()), -np.ones((fj >= 0).sum())])
        self.inc = sparse.csr_matrix((vals, (rows, cols)), shape=(n, m))
        # theta-theta Hessian cells touched by each battle: (a, b) += h * x_a * x_b.
        xi = self.inc.tocoo()
        r_idx, c_idx, v = xi.row, xi.col, xi.data
        order = np.argsort(r_idx, kind="stable")
        r_idx, c_idx, v = r_idx[order], c_idx[order], v[order]
        # Pair every nonzero of a row with every nonzero of the same row (at most 2 per row).
        starts = np.searchsorted(r_idx, np.arange(n))
        ends = np.searchsorted(r_idx, np.arange(n), side="right")
        cells_r, cells_c, cells_v = [], [], []
        for a_off in range(2):
            for b_off in range(2):
                ia, ib = starts + a_off, starts + b_off
                ok = (ia < ends) & (ib < ends)
                cells_r.append(np.arange(n)[ok])
                cells_c.append(c_idx[ia[ok]] * m + c_idx[ib[ok]])
                cells_v.append(v[ia[ok]] * v[ib[ok]])
        self.tt = sparse.csr_matrix(
            (np.concatenate(cells_v), (np.concatenate(cells_r), np.concatenate(cells_c))), shape=(n, m * m)
        )
        s = z.shape[1]
        self.zz = (z[:, :, None] * z[:, None, :]).reshape(n, s * s)
        # Incidence scaled by each covariate, so the theta-gamma Hessian block is a sparse
        # product with the curvature weights (no (battles x replicates x covariates) array).
        self.inc_z = [sparse.diags(z[:, k]) @ self.inc for k in range(s)]
        self.m, self.s = m, s

    def eta(self, theta_free: np.ndarray, gamma: np.ndarray) -> np.ndarray:
        """Linear predictor, shape (n, R)."""
        return self.inc @ theta_free.T + self.z @ gamma.T

    def evaluate(self, eta: np.ndarray, wy: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Weighted NLL per replicate, sum w * (log(1 + e^eta) - y * eta), and P(i wins).

        ``wy`` = w * y. One exp per element serves both (stable form with e = exp(-|eta|));
        numpy primitives with in-place passes and fused multiply-sums, because scipy's
        log_expit/expit are several times slower on the (battles x replicates) arrays that
        dominate the cost."""
        e = np.abs(eta)
        np.negative(e, out=e)
        np.exp(e, out=e)
        t = np.log1p(e)
        f = np.einsum("nr,nr->r", w, t)
        np.maximum(eta, 0.0, out=t)
        f += np.einsum("nr,nr->r", w, t) - np.einsum("nr,nr->r", wy, eta)
        np.add(e, 1.0, out=t)
        e /= t  # sigmoid(-|eta|)
        np.subtract(1.0, e, out=t, where=eta >= 0)
        np.copyto(t, e, where=eta < 0)
        return f, t

    def grad_hess(self, p: np.ndarray, wy: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r = p * w
        h = p * r  # w p^2
        np.subtract(r, h, out=h)  # w p (1 - p)
        r -= wy  # d loss / d eta = w (p - y)
        m, s, R = self.m, self.s, p.shape[1]
        g = np.concatenate([(self.inc.T @ r).T, (self.z.T @ r).T], axis=1)  # (R, K)
        H = np.empty((R, m + s, m + s))
        H[:, :m, :m] = (self.tt.T @ h).T.reshape(R, m, m)
        tg = np.stack([(zi.T @ h).T for zi in self.inc_z], axis=2)  # (R, m, s)
        H[:, :m, m:] = tg
        H[:, m:, :m] = tg.transpose(0, 2, 1)
        H[:, m:, m:] = (self.zz.T @ h).T.reshape(R, s, s)
        return g, H


def fit_style_bt(
    n_items: int,
    i: np.ndarray,
    j: np.ndarray,
    z: np.ndarray,
    y: np.ndarray,
    weights: np.ndarray,
    *,
    anchor: int = 0,
    tol: float = 1e-6,
    max_iter: int = 100,
    init: tuple[np.ndarray, np.ndarray] | None = None,
) -> StyleBTFit:
    """Exact weighted MLE of style-controlled Bradley–Terry by damped Newton.

    ``weights`` is ``(n,)`` or ``(R, n)`` (one row per bootstrap replicate); all replicates are
    solved together. Converged when every replicate's gradient norm (of the summed negative
    log-likelihood) is <= ``tol``; raises ``RuntimeError`` otherwise. An undefeated item has an
    infinite MLE: its strength grows until the gradient falls below ``tol`` (win probability
    within ~tol of 1). ``init`` = (theta (n_items,), gamma (S,)) warm-starts every replicate.
    """
    with _single_threaded_blas():
        return _fit_style_bt(n_items, i, j, z, y, weights, anchor=anchor, tol=tol, max_iter=max_iter, init=init)


def _pinv_solve(H: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Batched H^+ g by symmetric eigendecomposition, dropping near-null directions.

    A bootstrap replicate can make a covariate constant or collinear with an item (e.g. every
    game with a header falls out); the likelihood is then flat along that direction, the
    gradient there is zero, and the minimum-norm Newton step is the right one, where a plain
    solve would fail or jump far along the flat direction."""
    lam, V = np.linalg.eigh(H)
    cut = 1e-10 * np.maximum(lam[:, -1:], 1e-300)
    inv = np.where(lam > cut, 1.0 / np.where(lam > cut, lam, 1.0), 0.0)
    c = (V.transpose(0, 2, 1) @ g[..., None])[..., 0] * inv
    return (V @ c[..., None])[..., 0]


def _single_threaded_blas():
    """The products here are thin (K <= ~100 columns); under load, multi-threaded BLAS spends
    more time synchronising than computing (measured 7x slower on a busy 2-core machine)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # optional: only a speed-up
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def _fit_style_bt(n_items, i, j, z, y, weights, *, anchor, tol, max_iter, init) -> StyleBTFit:
    i = np.asarray(i, int)
    j = np.asarray(j, int)
    z = np.asarray(z, float).reshape(len(i), -1)
    y = np.asarray(y, float)
    W = np.atleast_2d(np.asarray(weights, float))
    R = W.shape[0]
    d = _Design(n_items, i, j, z, anchor)
    w = np.ascontiguousarray(W.T)  # (n, R)
    wy = w * y[:, None]
    theta = np.zeros((R, d.m))
    gamma = np.zeros((R, d.s))
    if init is not None:
        theta[:] = np.asarray(init[0], float)[d.free] - np.asarray(init[0], float)[anchor]
        gamma[:] = np.asarray(init[1], float)
    eta = d.eta(theta, gamma)
    f, p = d.evaluate(eta, wy, w)
    gnorm = np.full(R, np.inf)
    it = 0
    # Only replicates that have not converged yet are carried through an iteration.
    active = np.arange(R)
    for it in range(1, max_iter + 1):
        full = active.size == R  # slices instead of fancy-index copies of (n, R) arrays
        g, H = d.grad_hess(p if full else p[:, active], wy if full else wy[:, active], w if full else w[:, active])
        gnorm[active] = np.linalg.norm(g, axis=1)
        still = gnorm[active] > tol
        active, g, H = active[still], g[still], H[still]
        full = active.size == R
        if active.size == 0:
            it -= 1
            break
        # Items absent from a replicate have an empty Hessian row; pin them (their gradient is 0).
        diag = np.einsum("rkk->rk", H)
        diag += (diag <= 0) * 1.0
        step = -_pinv_solve(H, g)
        slope = (g * step).sum(axis=1)
        alpha = np.ones(len(active))
        t0, g0, f0 = theta[active], gamma[active], f[active]
        wa, wya = (w, wy) if full else (w[:, active], wy[:, active])
        new_t, new_g = t0 + step[:, : d.m], g0 + step[:, d.m :]
        new_eta = d.eta(new_t, new_g)
        new_f, new_p = d.evaluate(new_eta, wya, wa)
        for _ in range(40):  # Armijo backtracking, per replicate
            bad = ~(new_f <= f0 + 1e-4 * alpha * slope + 1e-12 * np.abs(f0))
            if not bad.any():
                break
            alpha[bad] *= 0.5
            new_t[bad] = t0[bad] + alpha[bad, None] * step[bad, : d.m]
            new_g[bad] = g0[bad] + alpha[bad, None] * step[bad, d.m :]
            new_eta[:, bad] = d.eta(new_t[bad], new_g[bad])
            new_f[bad], new_p[:, bad] = d.evaluate(new_eta[:, bad], wya[:, bad], wa[:, bad])
        theta[active], gamma[active], f[active] = new_t, new_g, new_f
        if full:
            eta, p = new_eta, new_p
        else:
            eta[:, active], p[:, active] = new_eta, new_p
    else:
        g, _ = d.grad_hess(p, wy, w)
        gnorm = np.linalg.norm(g, axis=1)
    if (gnorm > tol).any():
        raise RuntimeError(f"style BT did not converge: max gradient norm {gnorm.max():.3g} > {tol} after {it} Newton steps")
    full = np.zeros((R, n_items))
    full[:, d.free] = theta
    return StyleBTFit(theta=full, gamma=gamma, grad_norm=gnorm, n_iter=it)


# --------------------------------------------------------------------------- leaderboard
@dataclass
class StyleControlResult:
    """``table``: model, score (controlled win rate % vs baseline), lower, upper;
    ``coefficients``: style covariate, coef, lower, upper; ``replicates``: bootstrap win rates."""

    table: pd.DataFrame
    coefficients: pd.DataFrame
    replicates: pd.DataFrame
    grad_norm: float


def style_controlled_leaderboard(
    battles: pd.DataFrame,
    features: pd.DataFrame,
    baseline: str,
    *,
    n_bootstrap: int = 100,
    ci: float = 0.95,
    rng: np.random.Generator | None = None,
    tol: float = 1e-6,
) -> StyleControlResult:
    """Style-controlled win rates against ``baseline`` with a prompt-level bootstrap.

    ``battles``: the battle table of :mod:`arena.ratings` (``question_id, model, opponent,
    score, weight``); ``features``: one row per battle (same order), e.g. from
    :func:`style_features`. Unparsed games (weight 0) are ignored.
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    keep = battles["weight"].to_numpy(float) > 0
    b = battles[keep].reset_index(drop=True)
    z = features.to_numpy(float)[keep]
    names = pd.Index(np.unique(np.concatenate([b["model"].to_numpy(object), b["opponent"].to_numpy(object)]).astype(str)))
    if baseline not in names:
        raise ValueError(f"baseline '{baseline}' is in no battle")
    anchor = names.get_loc(baseline)
    # Both games of a (prompt, model, opponent) share the covariates and the bootstrap weight,
    # and the likelihood is linear in y, so they merge exactly into one row with y the
    # weighted mean score and w the summed weight (half the rows to fit).
    key = pd.DataFrame({"q": b["question_id"].to_numpy(), "m": b["model"].to_numpy(), "o": b["opponent"].to_numpy()})
    grp = key.groupby(["q", "m", "o"], sort=False).ngroup().to_numpy()
    first = np.unique(grp, return_index=True)[1]
    w_raw = b["weight"].to_numpy(float)
    w = np.bincount(grp, w_raw)
    y = np.bincount(grp, w_raw * b["score"].to_numpy(float)) / w
    spread = np.abs(z - z[first][grp]).max() if len(z) else 0.0
    if spread > 1e-12:
        raise ValueError("style covariates differ between games of the same prompt and pair")
    z = z[first]
    qid = b["question_id"].to_numpy(object)[first]
    i = names.get_indexer(b["model"].to_numpy()[first])
    j = names.get_indexer(b["opponent"].to_numpy()[first])
    point = fit_style_bt(len(names), i, j, z, y, w, anchor=anchor, tol=tol)
    prompts = pd.Index(np.unique(qid.astype(str)))
    p_idx = prompts.get_indexer(qid)
    counts = rng.multinomial(len(prompts), np.full(len(prompts), 1.0 / len(prompts)), size=n_bootstrap).astype(float)
    boot = fit_style_bt(len(names), i, j, z, y, counts[:, p_idx] * w, anchor=anchor, tol=tol, init=(point.theta[0], point.gamma[0]))
    models = names.drop(baseline)
    cols = names.get_indexer(models)
    wr_point = 100 * expit(point.theta[0, cols])
    wr_boot = 100 * expit(boot.theta[:, cols])
    a = (1 - ci) / 2
    table = pd.DataFrame(
        {"model": models, "score": wr_point, "lower": np.quantile(wr_boot, a, axis=0), "upper": np.quantile(wr_boot, 1 - a, axis=0)}
    )
    table = pd.concat([table, pd.DataFrame([{"model": baseline, "score": 50.0, "lower": 50.0, "upper": 50.0}])], ignore_index=True)
    table = table.sort_values("score", ascending=False, kind="stable").reset_index(drop=True)
    coefs = pd.DataFrame(
        {
            "covariate": list(features.columns),
            "coef": point.gamma[0],
            "lower": np.quantile(boot.gamma, a, axis=0),
            "upper": np.quantile(boot.gamma, 1 - a, axis=0),
        }
    )
    return StyleControlResult(
        table=table,
        coefficients=coefs,
        replicates=pd.DataFrame(wr_boot, columns=list(models)),
        grad_norm=float(max(point.grad_norm.max(), boot.grad_norm.max())),
    )
