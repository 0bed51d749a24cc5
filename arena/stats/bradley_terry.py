"""Bradley–Terry maximum likelihood: the one solver for plain and style-controlled ratings.

Battle ``k`` pits item ``i[k]`` against item ``j[k]``; ``y[k]`` in [0, 1] is the score of ``i``
(tie 0.5) with weight ``w[k]``, ``z[k]`` holds optional covariates (style features of ``i``'s
answer relative to ``j``'s) and ``offset[k]`` an optional known logit shift. The model is

    logit P(i beats j) = theta_i - theta_j + gamma . z + offset

with ``theta[anchor] = 0``. Plain Bradley–Terry is this model with no covariate (``z`` has zero
columns); style control adds them; anchored style control freezes ``gamma`` into ``offset``.

We maximise the weighted log-likelihood *exactly*: damped Newton (Armijo backtracking) to a
gradient norm <= ``tol``, on all bootstrap replicates at once. Replicates are prompt-count weight
vectors (:mod:`arena.stats.bootstrap`), so every replicate shares one design; the Hessian is
assembled blockwise with sparse/BLAS products (theta–theta via the battle pairs, theta–gamma via
the sparse item incidence, gamma–gamma via z⊗z), so one Newton iteration for 100 replicates
costs a few matrix products instead of 100 separate fits. The bootstrap starts every replicate
from the full-data MLE (its first step needs no exp per replicate), Newton directions come from
batched Cholesky, and a self-concordance bound certifies most full steps without evaluating the
likelihood, so a replicate costs about three fused passes over its battles. Hand-written because
arena-hard's torch LBFGS (fixed 50 iterations, lr 0.1, no line search) stops before convergence,
and scipy/sklearn/choix would refit every replicate from scratch (choix also has no covariates,
weights or ties); ``tests/test_ratings.py`` cross-checks the fits against choix.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np
from scipy import sparse


@dataclass
class BTFit:
    """Fitted parameters for ``R`` weight vectors: ``theta (R, n_items)`` with the anchor at 0,
    ``gamma (R, S)``, the final gradient norms and Newton iterations used."""

    theta: np.ndarray
    gamma: np.ndarray
    grad_norm: np.ndarray
    n_iter: int


class _Design:
    """Shared sparse pieces of the Bradley–Terry design for one set of battles."""

    def __init__(self, n_items: int, i: np.ndarray, j: np.ndarray, z: np.ndarray, anchor: int, offset: np.ndarray | None = None):
        n = len(i)
        self.n_items, self.anchor, self.z = n_items, anchor, z
        self.offset = None if offset is None else np.ascontiguousarray(offset, dtype=float)
        self.free = np.flatnonzero(np.arange(n_items) != anchor)
        pos = np.full(n_items, -1)
        pos[self.free] = np.arange(len(self.free))
        fi, fj = pos[i], pos[j]
        m = len(self.free)
        # Incidence of free items: +1 for i, -1 for j (the anchor's column is dropped).
        rows = np.concatenate([np.flatnonzero(fi >= 0), np.flatnonzero(fj >= 0)])
        cols = np.concatenate([fi[fi >= 0], fj[fj >= 0]])
        vals = np.concatenate([np.ones((fi >= 0).sum()), -np.ones((fj >= 0).sum())])
        self.inc = sparse.csr_matrix((vals, (rows, cols)), shape=(n, m))
        s = z.shape[1]
        # Transposed map from curvature weights to the sparse Hessian cells, so one sparse product
        # per Newton step gives them for all replicates: theta-theta cell (a, b) gets h x_a x_b
        # (a battle touches at most the 2 x 2 cells of i and j), theta-gamma cell (k, a) gets
        # h x_a z_k (no (battles x replicates x covariates) array).
        h_rows, h_cols, h_vals = [], [], []
        for fa, sa in ((fi, 1.0), (fj, -1.0)):
            for fb, sb in ((fi, 1.0), (fj, -1.0)):
                ok = (fa >= 0) & (fb >= 0)
                h_rows.append(fa[ok] * m + fb[ok])
                h_cols.append(np.flatnonzero(ok))
                h_vals.append(np.full(int(ok.sum()), sa * sb))
        for k in range(s):
            h_rows.append(m * m + k * m + cols)
            h_cols.append(rows)
            h_vals.append(vals * z[rows, k])
        self.hess_t = sparse.csr_matrix(
            (np.concatenate(h_vals), (np.concatenate(h_rows), np.concatenate(h_cols))), shape=(m * m + s * m, n)
        )
        self.zz_t = np.ascontiguousarray((z[:, :, None] * z[:, None, :]).reshape(n, s * s).T)
        self.z_t = np.ascontiguousarray(z.T)
        # Largest |z_k| over battles: bounds how far a step can move any battle's logit.
        self.zmax = np.abs(z).max(axis=0) if n else np.zeros(s)
        self.m, self.s = m, s

    def eta(self, theta_free: np.ndarray, gamma: np.ndarray) -> np.ndarray:
        """Linear predictor, shape (n, R)."""
        out = self.z @ gamma.T
        out += self.inc @ theta_free.T
        if self.offset is not None:
            out += self.offset[:, None]
        return out

    def max_logit_change(self, d_theta: np.ndarray, d_gamma: np.ndarray) -> np.ndarray:
        """Upper bound, per replicate, on max_k |change of eta_k| for a parameter step: the range
        of the item steps (anchor at 0) plus sum_k max|z_k| |d_gamma_k|; O(R K), no pass over battles."""
        hi = np.maximum(d_theta.max(axis=1, initial=0.0), 0.0)
        lo = np.minimum(d_theta.min(axis=1, initial=0.0), 0.0)
        return hi - lo + np.abs(d_gamma) @ self.zmax

    @staticmethod
    def nll(eta: np.ndarray, wy: np.ndarray, w: np.ndarray) -> np.ndarray:
        """Weighted NLL per replicate, sum w * (log(1 + e^eta) - y * eta), in the stable form
        log1p(e^-|eta|) + max(eta, 0). ``eta`` may be one shared column (n, 1)."""
        t = np.abs(eta)
        np.negative(t, out=t)
        np.exp(t, out=t)
        np.log1p(t, out=t)
        t += np.maximum(eta, 0.0)
        if eta.shape[1] == 1:
            return t[:, 0] @ w - eta[:, 0] @ wy
        return np.einsum("nr,nr->r", w, t) - np.einsum("nr,nr->r", wy, eta)

    def gradient(self, theta_free: np.ndarray, gamma: np.ndarray, w: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Gradient (R, K) of the NLL at per-replicate parameters, and the curvature weights
        w p (1 - p) (n, R) from which :meth:`hessian` builds the Hessian.

        One fused pass over blocks of battles: logits, P(i wins) = 1 / (1 + e^-eta), residual
        weights w (p - y) and curvature weights, in place. The (battles x replicates)
        arrays are the whole cost, and a block of them stays in cache across these steps, where
        whole-array numpy expressions would stream each temporary through memory (measured 1.6x
        faster). ``theta_free``/``gamma`` may have one row shared by all replicates (a common
        start); the logits are then computed once. e^-eta overflows to inf for eta < -709,
        giving p = 0, the right limit."""
        n, R = w.shape
        tT, gT = np.ascontiguousarray(theta_free.T), np.ascontiguousarray(gamma.T)
        g_theta, g_gamma = np.zeros((self.m, R)), np.zeros((self.s, R))
        h = np.empty((n, R))
        block = max(512, (1 << 18) // max(R, 1))
        for a in range(0, n, block):
            b = min(a + block, n)
            inc = self.inc[a:b]
            p = self.z[a:b] @ gT
            p += inc @ tT
            if self.offset is not None:
                p += self.offset[a:b, None]
            np.negative(p, out=p)
            with np.errstate(over="ignore"):
                np.exp(p, out=p)
            p += 1.0
            np.reciprocal(p, out=p)
            wb, hb = w[a:b], h[a:b]
            if p.shape[1] != R:  # shared start: one column of probabilities for all replicates
                p = np.repeat(p, R, axis=1)
            r = np.subtract(p, y[a:b, None])
            r *= wb  # w (p - y)
            np.multiply(p, wb, out=hb)
            p *= hb
            hb -= p  # w p (1 - p)
            g_theta += inc.T @ r
            g_gamma += self.z_t[:, a:b] @ r
        return np.concatenate([g_theta.T, g_gamma.T], axis=1), h

    def hessian(self, h: np.ndarray) -> np.ndarray:
        """Hessian (R, K, K) from the curvature weights h (n, R), blockwise."""
        m, s, R = self.m, self.s, h.shape[1]
        sp = (self.hess_t @ h).T  # (R, m*m + s*m): theta-theta cells, then theta-gamma
        H = np.empty((R, m + s, m + s))
        H[:, :m, :m] = sp[:, : m * m].reshape(R, m, m)
        tg = sp[:, m * m :].reshape(R, s, m)
        H[:, m:, :m] = tg
        H[:, :m, m:] = tg.transpose(0, 2, 1)
        H[:, m:, m:] = (self.zz_t @ h).T.reshape(R, s, s)
        return H


def fit_bradley_terry(
    n_items: int,
    i: np.ndarray,
    j: np.ndarray,
    y: np.ndarray,
    weights: np.ndarray,
    z: np.ndarray | None = None,
    *,
    offset: np.ndarray | None = None,
    anchor: int = 0,
    tol: float = 1e-6,
    max_iter: int = 100,
    init: tuple[np.ndarray, np.ndarray] | None = None,
) -> BTFit:
    """Exact weighted MLE of Bradley–Terry (with optional covariates ``z`` (n, S) and a known
    logit ``offset`` (n,)) by damped Newton.

    ``weights`` is ``(n,)`` or ``(R, n)`` (one row per bootstrap replicate); all replicates are
    solved together. Converged when every replicate's gradient norm (of the summed negative
    log-likelihood) is <= ``tol``; raises ``RuntimeError`` otherwise. An undefeated item has an
    infinite MLE: its strength grows until the gradient falls below ``tol`` (win probability
    within ~tol of 1). ``init`` = (theta (n_items,), gamma (S,)) warm-starts every replicate;
    from that shared start the first Newton step needs no exp/log pass per replicate.

    Step acceptance: the logistic loss l(u) = log(1 + e^u) has |l'''| <= l'' (Bach 2010,
    self-concordance for logistic regression), so a step d that moves no battle's logit by more
    than nu satisfies f(x + d) <= f(x) + g'd + d'Hd (e^nu - 1 - nu) / nu^2. When that bound
    already meets the Armijo condition the full step is taken without evaluating the likelihood
    (the usual case near the optimum); otherwise the likelihood is evaluated and the step halved
    until Armijo holds. Newton directions come from a batched Cholesky factorisation, with a
    pseudo-inverse for replicates whose Hessian is (nearly) singular.
    """
    i = np.asarray(i, int)
    z = np.zeros((len(i), 0)) if z is None else np.asarray(z, float).reshape(len(i), -1)
    with _single_threaded_blas():
        design = _Design(n_items, i, np.asarray(j, int), z, anchor, offset)
        w = np.ascontiguousarray(np.atleast_2d(np.asarray(weights, float)).T)  # (n, R)
        return _fit(design, np.asarray(y, float), w, tol=tol, max_iter=max_iter, init=init)


def _newton_step(H: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Batched Newton direction -H^-1 g: Cholesky where H is safely positive definite, else
    :func:`_pinv_solve` for the replicates that are not.

    H is first scaled to unit diagonal (Jacobi; the exact Newton direction is unchanged): an
    item that wins (or loses) nearly every game has curvature ~e^-|theta|, which unscaled looks
    like a flat direction, so the pseudo-inverse would drop its step and its strength would stall
    short of the gradient tolerance instead of growing towards its infinite MLE."""
    sc = 1.0 / np.sqrt(np.einsum("rkk->rk", H))  # the caller pins empty diagonals to 1
    H = H * sc[:, :, None] * sc[:, None, :]
    g = g * sc
    step = np.empty_like(g)
    try:
        L = np.linalg.cholesky(H)
        dl = np.einsum("rkk->rk", L)
        # (min/max diag L)^2 tracks the conditioning; near-flat directions take the pinv path.
        ok = (dl.min(axis=1) / dl.max(axis=1)) ** 2 > 1e-9
    except np.linalg.LinAlgError:  # some replicate is not positive definite
        ok = np.zeros(len(H), bool)
    if ok.any():
        step[ok] = -np.linalg.solve(H[ok], g[ok][..., None])[..., 0]
    if not ok.all():
        step[~ok] = -_pinv_solve(H[~ok], g[~ok])
    return step * sc


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


_ARMIJO = 1e-4


def _certified_decrease(slope: np.ndarray, curv: np.ndarray, nu: np.ndarray) -> np.ndarray:
    """Whether the full step provably meets Armijo: slope + curv (e^nu - 1 - nu) / nu^2 <=
    c * slope (the self-concordance bound of :func:`fit_bradley_terry`)."""
    small = nu < 1e-6
    nu_safe = np.where(small, 1.0, np.minimum(nu, 700.0))
    psi = np.where(small, 0.5, (np.expm1(nu_safe) - nu_safe) / nu_safe**2)
    return (nu < 700.0) & (slope + curv * psi <= _ARMIJO * slope)


def _fit(d: _Design, y: np.ndarray, w: np.ndarray, *, tol: float, max_iter: int, init) -> BTFit:
    """:func:`fit_bradley_terry` on a built design; ``w`` is (n, R), battles x replicates."""
    R, m, anchor = w.shape[1], d.m, d.anchor
    x = np.zeros((R, m + d.s))  # per replicate: free thetas, then gammas
    if init is not None:
        x[:, :m] = np.asarray(init[0], float)[d.free] - np.asarray(init[0], float)[anchor]
        x[:, m:] = np.asarray(init[1], float)
    # Every replicate starts at the same point, so the logits are one shared column at first.
    g, h = d.gradient(x[:1, :m], x[:1, m:], w, y)
    f = np.full(R, np.nan)  # likelihood values, known only where a step needed the check
    gnorm = np.full(R, np.inf)
    active = np.arange(R)  # replicates not converged yet
    wa = w
    it = 0
    for it in range(1, max_iter + 1):
        gnorm[active] = np.linalg.norm(g, axis=1)
        still = gnorm[active] > tol
        if not still.any():
            it -= 1
            break
        if not still.all():
            active, g, h = active[still], g[still], h[:, still]
            wa = w[:, active]
        H = d.hessian(h)  # only for replicates that take another step
        # Items absent from a replicate have an empty Hessian row; pin them (their gradient is 0).
        Hs = H.copy()
        diag = np.einsum("rkk->rk", Hs)
        diag += (diag <= 0) * 1.0
        step = _newton_step(Hs, g)
        slope = np.einsum("rk,rk->r", g, step)
        curv = np.einsum("rk,rkl,rl->r", step, H, step)
        certified = _certified_decrease(slope, curv, d.max_logit_change(step[:, :m], step[:, m:]))
        x0 = x[active]
        new_x = x0 + step
        check = np.flatnonzero(~certified)
        if check.size:
            wc = wa[:, check]
            wyc = wc * y[:, None]
            f0 = f[active[check]]
            unknown = np.isnan(f0)
            if unknown.any():
                u = check[unknown]
                f0[unknown] = d.nll(d.eta(x0[u, :m], x0[u, m:]), wyc[:, unknown], wc[:, unknown])
            alpha = np.ones(check.size)
            f_new = d.nll(d.eta(new_x[check, :m], new_x[check, m:]), wyc, wc)
            for _ in range(40):  # Armijo backtracking, per replicate
                bad = ~(f_new <= f0 + _ARMIJO * alpha * slope[check] + 1e-12 * np.abs(f0))
                if not bad.any():
                    break
                alpha[bad] *= 0.5
                cb = check[bad]
                new_x[cb] = x0[cb] + alpha[bad, None] * step[cb]
                f_new[bad] = d.nll(d.eta(new_x[cb, :m], new_x[cb, m:]), wyc[:, bad], wc[:, bad])
            f[active[check]] = f_new
        f[active[certified]] = np.nan
        x[active] = new_x
        g, h = d.gradient(new_x[:, :m], new_x[:, m:], wa, y)
    else:
        gnorm[active] = np.linalg.norm(g, axis=1)
    if (gnorm > tol).any():
        raise RuntimeError(f"Bradley–Terry did not converge: max gradient norm {gnorm.max():.3g} > {tol} after {it} Newton steps")
    theta = np.zeros((R, d.n_items))
    theta[:, d.free] = x[:, :m]
    return BTFit(theta=theta, gamma=x[:, m:].copy(), grad_norm=gnorm, n_iter=it)


