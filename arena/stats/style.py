"""Style-controlled Bradley–Terry (arena-hard v2 / Chatbot Arena "style control").

The model is Bradley–Terry with style covariates ``z`` of the model's answer relative to the
opponent's, ``logit P(i beats j) = theta_i - theta_j + gamma . z``, fitted exactly by the one
Newton solver of :mod:`arena.stats.bradley_terry` (plain ratings use the same solver with no
covariate).

Style covariates (:func:`raw_style_features`), computed from answer metadata as in arena-hard's
``conv_metadata`` (:mod:`arena.stats.markdown_stats` fills it from the text when missing):

* ``length``: normalised length difference ``(L_i - L_j) / (L_i + L_j)`` (tokens);
* ``markdown``: for headers, lists and bold, the normalised difference of densities
  (count per token) ``(d_i - d_j) / (d_i + d_j)`` (0 when neither answer has any);
* ``emoji``: the same for the emoji density (emoji per token; emoji as defined in
  :func:`arena.stats.markdown_stats.emoji_count`), the feature LMArena added in 2025.

Each column is then standardised (:class:`StyleNormalisation`), so coefficients are per SD.

Anchored style control: the normalisation constants and the coefficients can be fitted once on a
reference set of models and frozen (:class:`StyleAnchor`, saved as JSON). With a frozen anchor
only the strengths are fitted, with ``gamma . z`` as a known offset; when every battle is against
the baseline (arena-hard's layout) the likelihood then factorises per model, so adding a model
never moves the others' controlled scores.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.special import expit

from arena.stats.bootstrap import bootstrap_prompts, percentile_interval
from arena.stats.bradley_terry import BTFit, _Design, _fit, _single_threaded_blas, fit_bradley_terry

MARKDOWN_ELEMENTS = ("header_count", "list_count", "bold_count")
# Per style group: (metadata count, covariate name); length is special (the token count itself).
_DENSITY_ELEMENTS = {
    "markdown": tuple((e, f"{e.removesuffix('_count')}_density") for e in MARKDOWN_ELEMENTS),
    "emoji": (("emoji_count", "emoji_density"),),
}
STYLE_GROUPS = {"length": ("length",), **{g: tuple(name for _, name in els) for g, els in _DENSITY_ELEMENTS.items()}}
DEFAULT_GROUPS = ("length", "markdown")

# Kept for callers of the former location of the solver.
StyleBTFit = BTFit


def fit_style_bt(n_items, i, j, z, y, weights, **kwargs) -> BTFit:
    """Style-controlled fit: :func:`arena.stats.bradley_terry.fit_bradley_terry` with covariates ``z``."""
    return fit_bradley_terry(n_items, i, j, y, weights, z, **kwargs)


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


def _check_groups(groups: Sequence[str]) -> None:
    unknown = set(groups) - set(STYLE_GROUPS)
    if unknown:
        raise ValueError(f"unknown style groups {sorted(unknown)}; choose from {sorted(STYLE_GROUPS)}")


def raw_style_features(model_meta: pd.DataFrame, opponent_meta: pd.DataFrame, groups: Sequence[str] = DEFAULT_GROUPS) -> pd.DataFrame:
    """Unstandardised style covariates of the model's answer relative to the opponent's.

    Both frames hold one row per battle with ``token_len`` and the counts the groups need
    (``header_count``, ``list_count``, ``bold_count`` for markdown, ``emoji_count`` for emoji;
    ints, or conv_metadata dicts summed over their values)."""
    _check_groups(groups)
    la = model_meta["token_len"].map(_count).to_numpy(float)
    lb = opponent_meta["token_len"].map(_count).to_numpy(float)
    cols: dict[str, np.ndarray] = {}
    if "length" in groups:
        cols["length"] = _norm_diff(la, lb)
    for group, elements in _DENSITY_ELEMENTS.items():
        if group not in groups:
            continue
        for element, name in elements:
            if element not in model_meta or element not in opponent_meta:
                raise ValueError(f"style metadata lacks '{element}' (needed by the {group} style control)")
            ca = model_meta[element].map(_count).to_numpy(float)
            cb = opponent_meta[element].map(_count).to_numpy(float)
            with np.errstate(invalid="ignore", divide="ignore"):
                da = ca / np.maximum(la, 1.0)
                db = cb / np.maximum(lb, 1.0)
            cols[name] = _norm_diff(da, db)
    raw = pd.DataFrame(cols)
    if raw.isna().any().any():
        raise ValueError("style metadata missing for some battles (token_len / markdown / emoji counts)")
    return raw


@dataclass(frozen=True)
class StyleNormalisation:
    """Per-covariate mean and SD used to standardise raw style features (SD 0 is taken as 1:
    a constant covariate stays 0 and its coefficient unidentified, not infinite)."""

    columns: tuple[str, ...]
    mean: tuple[float, ...]
    sd: tuple[float, ...]

    @classmethod
    def fit(cls, raw: pd.DataFrame) -> "StyleNormalisation":
        sd = raw.std(ddof=0).replace(0.0, 1.0)
        return cls(tuple(raw.columns), tuple(float(x) for x in raw.mean()), tuple(float(x) for x in sd))

    def apply(self, raw: pd.DataFrame) -> pd.DataFrame:
        if tuple(raw.columns) != self.columns:
            raise ValueError(f"style covariates {list(raw.columns)} do not match the normalisation's {list(self.columns)}")
        return (raw - np.asarray(self.mean)) / np.asarray(self.sd)


def style_features(model_meta: pd.DataFrame, opponent_meta: pd.DataFrame, groups: Sequence[str] = DEFAULT_GROUPS) -> pd.DataFrame:
    """Style covariates standardised over these battles (z-scores; see :class:`StyleNormalisation`)."""
    raw = raw_style_features(model_meta, opponent_meta, groups)
    return StyleNormalisation.fit(raw).apply(raw)


# --------------------------------------------------------------------------- anchors
ANCHOR_FORMAT = "arena-style-anchor/1"


@dataclass(frozen=True)
class StyleAnchor:
    """Frozen style control: covariate groups, normalisation and coefficients fitted on a
    reference set of models (``reference_models``, against ``baseline``)."""

    groups: tuple[str, ...]
    normalisation: StyleNormalisation
    coef: tuple[float, ...]
    baseline: str
    reference_models: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict:
        n = self.normalisation
        return {
            "format": ANCHOR_FORMAT,
            "groups": list(self.groups),
            "covariates": [
                {"name": c, "mean": m, "sd": s, "coef": g} for c, m, s, g in zip(n.columns, n.mean, n.sd, self.coef)
            ],
            "baseline": self.baseline,
            "reference_models": list(self.reference_models),
        }

    def save(self, path: Path) -> None:
        """Write atomically (a temporary file renamed over ``path``), so a kill leaves the old file."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=2) + "\n", encoding="utf-8")
        tmp.replace(path)


def load_style_anchor(path: Path) -> StyleAnchor:
    """Read and validate an anchor file (untrusted input: every field is checked, nothing is
    evaluated). Raises :class:`arena.errors.InputError` naming the file and field."""
    from arena.errors import InputError

    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg})", path=str(path), line=exc.lineno) from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", path=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read the style anchor ({exc.strerror or exc})", path=str(path)) from None
    if not isinstance(data, dict):
        raise InputError("a style anchor must be a JSON object", path=str(path))
    if data.get("format") != ANCHOR_FORMAT:
        raise InputError(f"expected '{ANCHOR_FORMAT}'", path=str(path), field="format")
    groups = data.get("groups")
    if not isinstance(groups, list) or not groups or not all(isinstance(g, str) and g in STYLE_GROUPS for g in groups) or len(set(groups)) != len(groups):
        raise InputError(f"must be a list of distinct style groups from {sorted(STYLE_GROUPS)}", path=str(path), field="groups")
    expected = [c for g in (g for g in STYLE_GROUPS if g in groups) for c in STYLE_GROUPS[g]]
    covs = data.get("covariates")
    if not isinstance(covs, list) or len(covs) != len(expected):
        raise InputError(f"must list the {len(expected)} covariates {expected}", path=str(path), field="covariates")
    mean, sd, coef = [], [], []
    for k, (cov, name) in enumerate(zip(covs, expected)):
        where = f"covariates[{k}]"
        if not isinstance(cov, dict) or cov.get("name") != name:
            raise InputError(f"expected the covariate '{name}'", path=str(path), field=f"{where}.name")
        for key, out in (("mean", mean), ("sd", sd), ("coef", coef)):
            v = cov.get(key)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise InputError("must be a finite number", path=str(path), field=f"{where}.{key}")
            out.append(float(v))
        if sd[-1] <= 0:
            raise InputError("must be positive", path=str(path), field=f"{where}.sd")
    baseline = data.get("baseline")
    if not isinstance(baseline, str) or not baseline:
        raise InputError("must be the baseline model's name", path=str(path), field="baseline")
    refs = data.get("reference_models", [])
    if not isinstance(refs, list) or not all(isinstance(m, str) for m in refs):
        raise InputError("must be a list of model names", path=str(path), field="reference_models")
    ordered = tuple(g for g in STYLE_GROUPS if g in groups)
    return StyleAnchor(ordered, StyleNormalisation(tuple(expected), tuple(mean), tuple(sd)), tuple(coef), baseline, tuple(refs))


# --------------------------------------------------------------------------- leaderboard
@dataclass
class StyleControlResult:
    """``table``: model, score (controlled win rate % vs baseline), lower, upper, rank columns;
    ``coefficients``: style covariate, coef, lower, upper (``frozen`` when taken from an anchor);
    ``replicates``: bootstrap win rates; ``coefficient_replicates``: bootstrap style coefficients
    (one row per round)."""

    table: pd.DataFrame
    coefficients: pd.DataFrame
    replicates: pd.DataFrame
    grad_norm: float
    coefficient_replicates: pd.DataFrame | None = None


def style_controlled_leaderboard(
    battles: pd.DataFrame,
    features: pd.DataFrame,
    baseline: str,
    *,
    n_bootstrap: int = 100,
    ci: float = 0.95,
    rng: np.random.Generator | None = None,
    tol: float = 1e-6,
    frozen_coef: Sequence[float] | None = None,
) -> StyleControlResult:
    """Style-controlled win rates against ``baseline`` with a prompt-level bootstrap.

    ``battles``: the battle table of :mod:`arena.stats.ratings` (``question_id, model, opponent,
    score, weight``); ``features``: one row per battle (same order), e.g. from
    :func:`style_features`. Unparsed games (weight 0) are ignored. ``frozen_coef``: style
    coefficients taken as known (an anchor's); only the strengths are fitted, to a gradient norm
    of 1e-10 so that a model's score does not depend on which other models were fitted with it.
    """
    from arena.stats.ratings import with_ranks

    rng = rng if rng is not None else np.random.default_rng(0)
    keep = battles["weight"].to_numpy(float) > 0
    z = features.to_numpy(float)[keep]
    w_raw = battles["weight"].to_numpy(float)[keep]
    score = battles["score"].to_numpy(float)[keep]
    # Integer codes once, then numpy only: string handling in pandas costs more than the fit.
    q_code, _ = pd.factorize(battles["question_id"].to_numpy(object)[keep], sort=True)
    pair_code, uniques = pd.factorize(np.concatenate([battles["model"].to_numpy(object)[keep], battles["opponent"].to_numpy(object)[keep]]), sort=True)
    names = pd.Index(np.asarray(uniques).astype(str))
    if baseline not in names:
        raise ValueError(f"baseline '{baseline}' is in no battle")
    anchor = names.get_loc(baseline)
    nb, k = len(w_raw), len(names)
    m_code, o_code = pair_code[:nb], pair_code[nb:]
    # Both games of a (prompt, model, opponent) share the covariates and the bootstrap weight,
    # and the likelihood is linear in y, so they merge exactly into one row with y the
    # weighted mean score and w the summed weight (half the rows to fit).
    _, first, grp = np.unique((q_code.astype(np.int64) * k + m_code) * k + o_code, return_index=True, return_inverse=True)
    w = np.bincount(grp, w_raw)
    y = np.bincount(grp, w_raw * score) / w
    spread = np.abs(z - z[first][grp]).max() if len(z) else 0.0
    if spread > 1e-12:
        raise ValueError("style covariates differ between games of the same prompt and pair")
    z = np.ascontiguousarray(z[first])
    boot = bootstrap_prompts(q_code[first], n_bootstrap, rng)
    offset = None
    if frozen_coef is not None:
        frozen = np.asarray(frozen_coef, float)
        if frozen.shape != (z.shape[1],):
            raise ValueError(f"{len(frozen)} frozen coefficients for {z.shape[1]} style covariates")
        offset, z, tol = z @ frozen, np.zeros((len(z), 0)), min(tol, 1e-10)
    with _single_threaded_blas():
        design = _Design(k, m_code[first], o_code[first], z, anchor, offset)  # shared by the point fit and the bootstrap
        point = _fit(design, y, w[:, None], tol=tol, max_iter=100, init=None)
        if n_bootstrap > 0:
            # Replicate weights, battles x replicates: prompt count times the battle's own weight.
            w_boot = np.ascontiguousarray(boot.row_weights(w).T)
            rep = _fit(design, y, w_boot, tol=tol, max_iter=100, init=(point.theta[0], point.gamma[0]))
        else:
            rep = BTFit(np.zeros((0, k)), np.zeros((0, z.shape[1])), np.zeros(0), 0)
    models = names.drop(baseline)
    cols = names.get_indexer(models)
    wr_point = 100 * expit(point.theta[0, cols])
    wr_boot = 100 * expit(rep.theta[:, cols])
    lower, upper = percentile_interval(wr_boot, ci)
    table = pd.DataFrame({"model": models, "score": wr_point, "lower": lower, "upper": upper})
    table = pd.concat([table, pd.DataFrame([{"model": baseline, "score": 50.0, "lower": 50.0, "upper": 50.0}])], ignore_index=True)
    replicates = pd.DataFrame(wr_boot, columns=list(models))
    table = with_ranks(table, replicates, baseline, ci)
    if frozen_coef is None:
        c_lo, c_hi = percentile_interval(rep.gamma, ci)
        coefs = pd.DataFrame({"covariate": list(features.columns), "coef": point.gamma[0], "lower": c_lo, "upper": c_hi})
        coef_reps = pd.DataFrame(rep.gamma, columns=list(features.columns))
    else:
        coefs = pd.DataFrame({"covariate": list(features.columns), "coef": frozen, "lower": np.nan, "upper": np.nan, "frozen": True})
        coef_reps = None
    return StyleControlResult(
        table=table,
        coefficients=coefs,
        replicates=replicates,
        grad_norm=float(max(point.grad_norm.max(), rep.grad_norm.max(initial=0.0))),
        coefficient_replicates=coef_reps,
    )


def style_control(
    battles: pd.DataFrame,
    model_meta: pd.DataFrame,
    opponent_meta: pd.DataFrame,
    baseline: str,
    *,
    groups: Sequence[str] = DEFAULT_GROUPS,
    anchor: StyleAnchor | None = None,
    n_bootstrap: int = 100,
    ci: float = 0.95,
    rng: np.random.Generator | None = None,
) -> tuple[StyleControlResult, StyleAnchor]:
    """Style-controlled leaderboard from answer metadata, anchored or not.

    Without ``anchor`` the normalisation and coefficients are fitted on these battles, and the
    anchor that freezes them is returned (to save and reuse). With ``anchor`` its groups,
    normalisation and coefficients are used as they are, and it is returned unchanged."""
    if anchor is not None:
        if anchor.baseline != baseline:
            raise ValueError(f"the style anchor was fitted against baseline '{anchor.baseline}', not '{baseline}'")
        raw = raw_style_features(model_meta, opponent_meta, anchor.groups)
        feats = anchor.normalisation.apply(raw)
        res = style_controlled_leaderboard(battles, feats, baseline, n_bootstrap=n_bootstrap, ci=ci, rng=rng, frozen_coef=anchor.coef)
        return res, anchor
    raw = raw_style_features(model_meta, opponent_meta, groups)
    norm = StyleNormalisation.fit(raw)
    res = style_controlled_leaderboard(battles, norm.apply(raw), baseline, n_bootstrap=n_bootstrap, ci=ci, rng=rng)
    models = tuple(m for m in res.table["model"] if m != baseline)
    fitted = StyleAnchor(tuple(g for g in STYLE_GROUPS if g in groups), norm, tuple(float(c) for c in res.coefficients["coef"]), baseline, models)
    return res, fitted
