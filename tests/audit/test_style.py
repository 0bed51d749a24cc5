"""Style-controlled Bradley–Terry: exact fit, recovery of known coefficients, agreement with scipy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.special import expit, log_expit

from arena.audit.simulate import simulate_arena
from arena.stats.style import fit_style_bt, style_controlled_leaderboard, style_features


def test_style_features_by_hand():
    a = pd.DataFrame({"token_len": [300, 100], "header_count": [{"h1": 1, "h2": 2}, 0], "list_count": [{"ordered": 3}, 0], "bold_count": [0, 0]})
    b = pd.DataFrame({"token_len": [100, 100], "header_count": [0, 0], "list_count": [{"ordered": 1}, 0], "bold_count": [0, 0]})
    raw_len = np.array([(300 - 100) / 400, 0.0])
    # list density 3/300 = 0.01 vs 1/100 = 0.01 -> 0; header 3/300 vs 0 -> 1; bold none -> 0.
    f = style_features(a, b)
    assert list(f.columns) == ["length", "header_density", "list_density", "bold_density"]
    expected_len = (raw_len - raw_len.mean()) / raw_len.std()
    assert f["length"].to_numpy() == pytest.approx(expected_len)
    assert f["header_density"].to_numpy() == pytest.approx([1.0, -1.0])  # raw [1, 0], standardised
    assert (f["list_density"] == 0).all() and (f["bold_density"] == 0).all()
    with pytest.raises(ValueError):
        style_features(a, b, ["colour"])


def _scipy_fit(n_items, i, j, z, y, w, anchor=0):
    """Independent reference: scipy L-BFGS-B on the same weighted likelihood, tight tolerances."""
    free = [k for k in range(n_items) if k != anchor]
    s = z.shape[1]

    def unpack(x):
        th = np.zeros(n_items)
        th[free] = x[: len(free)]
        return th, x[len(free) :]

    def fun(x):
        th, g = unpack(x)
        e = th[i] - th[j] + z @ g
        r = w * (expit(e) - y)
        gt = np.bincount(i, r, n_items) - np.bincount(j, r, n_items)
        return -(w * (y * log_expit(e) + (1 - y) * log_expit(-e))).sum(), np.concatenate([gt[free], z.T @ r])

    res = minimize(fun, np.zeros(len(free) + s), jac=True, method="L-BFGS-B", options={"gtol": 1e-11, "ftol": 0.0, "maxiter": 20000, "maxcor": 50})
    return unpack(res.x)


def test_exact_fit_matches_scipy_and_batches_match_single_fits():
    rng = np.random.default_rng(3)
    n_items, n = 8, 4000
    i = rng.integers(0, n_items, n)
    j = (i + rng.integers(1, n_items, n)) % n_items  # general pairs, not only vs the anchor
    z = rng.normal(size=(n, 3))
    theta = rng.normal(size=n_items)
    y = (rng.random(n) < expit(theta[i] - theta[j] + z @ [0.5, -0.2, 0.0])).astype(float)
    y[rng.random(n) < 0.1] = 0.5
    w = rng.choice([1.0, 3.0], n)
    fit = fit_style_bt(n_items, i, j, z, y, w, anchor=2)
    assert fit.grad_norm.max() <= 1e-6 and fit.theta[0, 2] == 0.0
    th_ref, g_ref = _scipy_fit(n_items, i, j, z, y, w, anchor=2)
    assert np.abs(fit.theta[0] - th_ref).max() < 1e-6
    assert np.abs(fit.gamma[0] - g_ref).max() < 1e-6
    W = rng.poisson(1.0, size=(5, n)).astype(float) * w
    batch = fit_style_bt(n_items, i, j, z, y, W, anchor=2)
    for r in range(5):
        single = fit_style_bt(n_items, i, j, z, y, W[r], anchor=2)
        assert np.abs(batch.theta[r] - single.theta[0]).max() < 1e-6
        assert np.abs(batch.gamma[r] - single.gamma[0]).max() < 1e-6


def test_undefeated_item_stops_at_tolerance_with_a_large_strength():
    # The MLE is infinite; Newton walks out until the gradient falls below tol (documented).
    i, j = np.array([0, 0, 1, 1]), np.array([1, 1, 2, 2])
    fit = fit_style_bt(3, i, j, np.zeros((4, 1)), np.ones(4), np.ones(4), anchor=2)
    assert fit.grad_norm.max() <= 1e-6 and fit.theta[0, 0] > fit.theta[0, 1] > 10


def test_recovers_simulated_style_coefficients_within_ci():
    gamma = np.array([0.5, 0.0, 0.25, -0.2])
    sim = simulate_arena(np.random.default_rng(11), 8, 400, gamma=gamma, strong_prob=0.3)
    res = style_controlled_leaderboard(sim.battles, sim.features, "baseline", n_bootstrap=200, rng=np.random.default_rng(5))
    assert res.grad_norm <= 1e-6
    c = res.coefficients
    assert ((c["lower"] <= gamma) & (gamma <= c["upper"])).all(), c
    # Controlled win rates track the true strengths (style removed).
    table = res.table.set_index("model")
    true_wr = 100 * expit(sim.theta)
    assert np.corrcoef(table.loc[true_wr.index, "score"], true_wr)[0, 1] > 0.98
    covered = (table.loc[true_wr.index, "lower"] <= true_wr) & (true_wr <= table.loc[true_wr.index, "upper"])
    assert covered.mean() >= 0.75


def test_self_concordance_bound_holds_for_random_steps():
    """The step-acceptance shortcut rests on f(x + d) <= f(x) + g'd + d'Hd (e^nu - 1 - nu) / nu^2,
    with nu the design's bound on the largest logit change; check it against the likelihood."""
    from arena.stats.bradley_terry import _Design

    rng = np.random.default_rng(8)
    n_items, n = 6, 600
    i = rng.integers(0, n_items, n)
    j = (i + rng.integers(1, n_items, n)) % n_items
    z = rng.normal(size=(n, 2))
    y = rng.choice([0.0, 0.5, 1.0], n)
    d = _Design(n_items, i, j, z, 0)
    w = rng.choice([0.0, 1.0, 3.0], size=(n, 40))
    x = rng.normal(scale=0.5, size=(40, d.m + d.s))
    step = rng.normal(scale=rng.choice([0.01, 0.3, 2.0], size=(40, 1)), size=(40, d.m + d.s))
    g, h = d.gradient(x[:, : d.m], x[:, d.m :], w, y)
    H = d.hessian(h)
    wy = w * y[:, None]
    f0 = d.nll(d.eta(x[:, : d.m], x[:, d.m :]), wy, w)
    f1 = d.nll(d.eta((x + step)[:, : d.m], (x + step)[:, d.m :]), wy, w)
    nu = d.max_logit_change(step[:, : d.m], step[:, d.m :])
    true_nu = np.abs(d.eta(step[:, : d.m], step[:, d.m :])).max(axis=0)
    assert (true_nu <= nu + 1e-12).all()
    curv = np.einsum("rk,rkl,rl->r", step, H, step)
    bound = f0 + (g * step).sum(axis=1) + curv * np.expm1(nu) / nu**2 - curv / nu
    assert (f1 <= bound + 1e-9 * np.abs(f0)).all()
    # The gradient pass agrees with finite differences of the likelihood.
    e = np.zeros(d.m + d.s)
    e[d.m] = 1e-6
    shifted = x + e
    fd = (d.nll(d.eta(shifted[:, : d.m], shifted[:, d.m :]), wy, w) - f0) / 1e-6
    assert np.abs(fd - g[:, d.m]).max() < 1e-3 * (1 + np.abs(g[:, d.m]).max())


def test_degenerate_replicates_converge_like_single_fits():
    # Replicates with singular Hessians: 0 drops every battle of item 3, 1 makes covariate 1
    # zero on every kept battle (both pinned), 2 makes covariate 1 the indicator of item 2 on
    # the kept battles (collinear: the pseudo-inverse path).
    rng = np.random.default_rng(4)
    n_items, n = 5, 1500
    i = rng.integers(1, n_items, n)
    j = np.zeros(n, int)
    marked = (i == 2) & (rng.random(n) < 0.5)
    z = np.column_stack([rng.normal(size=n), np.where(marked | (rng.random(n) < 0.1), 1.0, 0.0)])
    y = (rng.random(n) < expit(0.3 * i - 0.6 + z @ [0.4, 0.2])).astype(float)
    W = np.ones((4, n))
    W[0, i == 3] = 0.0
    W[1, z[:, 1] != 0] = 0.0
    W[2, (z[:, 1] != 0) != (i == 2)] = 0.0
    W[3] = rng.poisson(1.0, n)
    point = fit_style_bt(n_items, i, j, z, y, np.ones(n))
    import arena.stats.bradley_terry as style

    used = []
    pinv = style._pinv_solve
    try:
        style._pinv_solve = lambda H, g: used.append(len(H)) or pinv(H, g)
        batch = fit_style_bt(n_items, i, j, z, y, W, init=(point.theta[0], point.gamma[0]))
    finally:
        style._pinv_solve = pinv
    assert used, "the collinear replicate should take the pseudo-inverse path"
    assert batch.grad_norm.max() <= 1e-6
    assert batch.theta[0, 3] == pytest.approx(point.theta[0, 3])  # no data: stays at the start
    for r in range(4):
        single = fit_style_bt(n_items, i, j, z, y, W[r])
        # Compare what the replicate identifies: fitted logits of its battles, and the
        # covariate 0 coefficient (covariate 1 is unidentified in replicates 1 and 2).
        eta_b = batch.theta[r, i] - batch.theta[r, j] + z @ batch.gamma[r]
        eta_s = single.theta[0, i] - single.theta[0, j] + z @ single.gamma[0]
        kept = W[r] > 0
        assert np.abs(eta_b[kept] - eta_s[kept]).max() < 1e-6
        assert abs(batch.gamma[r, 0] - single.gamma[0, 0]) < 1e-6
        if r in (0, 3):
            assert abs(batch.gamma[r, 1] - single.gamma[0, 1]) < 1e-6


def test_leaderboard_matches_independent_fits_of_raw_battles_and_replicates():
    gamma = np.array([0.3, 0.0, 0.2, -0.1])
    sim = simulate_arena(np.random.default_rng(21), 5, 120, gamma=gamma, strong_prob=0.3, tie_prob=0.1)
    b = sim.battles.copy()
    b.loc[b.index[::17], "weight"] = 0.0  # unparsed games are left out
    counts = np.random.default_rng(2).multinomial(120, np.full(120, 1 / 120), size=6)

    class Replay:  # hands the leaderboard known bootstrap counts
        def multinomial(self, n, p, size):
            return counts[:size]

    res = style_controlled_leaderboard(b, sim.features, "baseline", n_bootstrap=6, rng=Replay())
    keep = b["weight"].to_numpy() > 0
    names = sorted(set(b["model"]) | {"baseline"})
    i = np.array([names.index(m) for m in b["model"][keep]])
    j = np.full(len(i), names.index("baseline"))
    z = sim.features.to_numpy()[keep]
    y, w = b["score"].to_numpy()[keep], b["weight"].to_numpy()[keep]
    # Unmerged games, cold start, independent optimiser.
    th, g = _scipy_fit(len(names), i, j, z, y, w, anchor=names.index("baseline"))
    table = res.table.set_index("model")
    assert np.abs(table.loc[names, "score"].to_numpy() - 100 * expit(th)).max() < 1e-5
    assert np.abs(res.coefficients["coef"].to_numpy() - g).max() < 1e-6
    q = b["question_id"].str[1:].astype(int).to_numpy()[keep]
    models = [m for m in names if m != "baseline"]
    for r in (0, 5):
        single = fit_style_bt(len(names), i, j, z, y, counts[r][q] * w, anchor=names.index("baseline"))
        assert np.abs(res.replicates.loc[r, models].to_numpy() - 100 * expit(single.theta[0, [names.index(m) for m in models]])).max() < 1e-5
        assert np.abs(res.coefficient_replicates.loc[r].to_numpy() - single.gamma[0]).max() < 1e-6
    none = style_controlled_leaderboard(b, sim.features, "baseline", n_bootstrap=0)
    assert none.table["lower"].isna().sum() == len(models) and len(none.replicates) == 0
    assert np.abs(none.coefficients["coef"].to_numpy() - g).max() < 1e-6


# --------------------------------------------------------------------------- emoji
@pytest.mark.parametrize(
    "text, n",
    [
        ("plain text", 0),
        ("hi 😀 there 🎉", 2),
        ("© ® ™ ↔ ❤ ☺", 0),  # Extended_Pictographic but text presentation by default
        ("❤️ ☺️", 2),  # U+FE0F asks for emoji presentation
        ("👨\u200d👩\u200d👧 family", 1),  # one ZWJ sequence is one emoji
        ("👍🏽👍", 2),  # skin-tone modifier belongs to its base
        ("🇫🇷🇩🇪", 2),  # flags: regional-indicator pairs
        ("1️⃣ #⃣ 123 #", 2),  # keycaps count, bare digits and # do not
        ("🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f", 1),  # subdivision flag (tag sequence)
        ("before 🎉\n```python\nprint('😀😀😀')\n```\nafter", 1),  # code blocks are not counted
    ],
)
def test_emoji_count_definition(text, n):
    from arena.stats.markdown_stats import answer_metadata, emoji_count

    assert emoji_count(text) == n
    assert answer_metadata(text, 10)["emoji_count"] == n


def test_emoji_style_feature_by_hand():
    from arena.stats.style import raw_style_features

    a = pd.DataFrame({"token_len": [100, 200, 50], "emoji_count": [2, 0, 0]})
    b = pd.DataFrame({"token_len": [100, 100, 50], "emoji_count": [1, 0, 1]})
    raw = raw_style_features(a, b, ["emoji"])
    assert list(raw.columns) == ["emoji_density"]
    # densities 0.02 vs 0.01 -> 1/3; none on either side -> 0; 0 vs 0.02 -> -1
    assert raw["emoji_density"].to_numpy() == pytest.approx([1 / 3, 0.0, -1.0])
    with pytest.raises(ValueError, match="lacks 'emoji_count'"):
        raw_style_features(a.drop(columns="emoji_count"), b, ["length", "emoji"])


def test_simulated_emoji_preference_is_recovered():
    gamma = np.array([0.3, 0.1, 0.1, 0.0, 0.4])
    sim = simulate_arena(np.random.default_rng(31), 6, 400, gamma=gamma, style_groups=("length", "markdown", "emoji"))
    assert list(sim.features.columns)[-1] == "emoji_density"
    res = style_controlled_leaderboard(sim.battles, sim.features, "baseline", n_bootstrap=100, rng=np.random.default_rng(0))
    emoji = res.coefficients.set_index("covariate").loc["emoji_density"]
    assert emoji["lower"] < 0.4 < emoji["upper"] and emoji["lower"] > 0.2


# --------------------------------------------------------------------------- anchored style control
def _arena_with_extra_model(seed=41):
    """Reference models, then the same prompts with one more model added to the battles."""
    gamma = np.array([0.4, 0.1, 0.15, -0.05, 0.3])
    groups = ("length", "markdown", "emoji")
    sim = simulate_arena(np.random.default_rng(seed), 5, 150, gamma=gamma, style_groups=groups, strong_prob=0.3, tie_prob=0.1)
    b, mm, om = sim.battles, sim.model_meta, sim.opponent_meta
    new = b["model"] == "model-04"
    return groups, (b[~new].reset_index(drop=True), mm[~new].reset_index(drop=True), om[~new].reset_index(drop=True)), (b, mm, om)


def test_anchor_freezes_style_so_adding_a_model_moves_no_one(tmp_path):
    from arena.stats.style import load_style_anchor, style_control

    groups, ref, full = _arena_with_extra_model()
    fitted_res, anchor = style_control(*ref, "baseline", groups=groups, n_bootstrap=50, rng=np.random.default_rng(3))
    anchor.save(tmp_path / "anchor.json")
    loaded = load_style_anchor(tmp_path / "anchor.json")
    assert loaded == anchor  # the JSON round trip loses nothing
    before, _ = style_control(*ref, "baseline", anchor=loaded, n_bootstrap=50, rng=np.random.default_rng(3))
    after, _ = style_control(*full, "baseline", anchor=loaded, n_bootstrap=50, rng=np.random.default_rng(3))
    old = before.table.set_index("model")
    new = after.table.set_index("model")
    assert "model-04" in new.index and "model-04" not in old.index
    for col in ("score", "lower", "upper"):
        assert np.abs(new.loc[old.index, col].to_numpy() - old[col].to_numpy()).max() < 1e-9
    assert np.abs(after.replicates[before.replicates.columns].to_numpy() - before.replicates.to_numpy()).max() < 1e-9
    # Anchoring at the reference fit's own coefficients reproduces that fit's scores (the
    # strengths are the profile optimum at the MLE coefficients); gradient tol 1e-6 of the free fit.
    assert np.abs(old.loc[fitted_res.table["model"], "score"].to_numpy() - fitted_res.table["score"].to_numpy()).max() < 1e-4
    # Without the anchor, adding the model re-standardises the covariates and refits the
    # coefficients, so the others do move: the test above would notice a silent refit.
    free, _ = style_control(*full, "baseline", groups=groups, n_bootstrap=50, rng=np.random.default_rng(3))
    moved = free.table.set_index("model").loc[old.index, "score"].to_numpy() - fitted_res.table.set_index("model").loc[old.index, "score"].to_numpy()
    assert np.abs(moved).max() > 1e-3
    coef = after.coefficients
    assert coef["frozen"].all() and coef["coef"].tolist() == list(anchor.coef)


def _anchor_json(**changes):
    from arena.stats.style import ANCHOR_FORMAT

    doc = {
        "format": ANCHOR_FORMAT,
        "groups": ["length"],
        "covariates": [{"name": "length", "mean": 0.1, "sd": 0.3, "coef": 0.5}],
        "baseline": "base",
        "reference_models": ["a"],
    }
    doc.update(changes)
    return doc


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "anchor.json:line 1: not valid JSON (Expecting property name enclosed in double quotes)"),
        ("[1, 2]", "anchor.json: a style anchor must be a JSON object"),
        (_anchor_json(format="pickle"), "anchor.json: field 'format': expected 'arena-style-anchor/1'"),
        (_anchor_json(groups=["length", "colour"]), "anchor.json: field 'groups': must be a list of distinct style groups from ['emoji', 'length', 'markdown']"),
        (_anchor_json(groups=["markdown"]), "anchor.json: field 'covariates': must list the 3 covariates ['header_density', 'list_density', 'bold_density']"),
        (_anchor_json(covariates=[{"name": "size", "mean": 0, "sd": 1, "coef": 0}]), "anchor.json: field 'covariates[0].name': expected the covariate 'length'"),
        (_anchor_json(covariates=[{"name": "length", "mean": 0, "sd": 1, "coef": float("nan")}]), "anchor.json: field 'covariates[0].coef': must be a finite number"),
        (_anchor_json(covariates=[{"name": "length", "mean": 0, "sd": 1, "coef": "__import__('os')"}]), "anchor.json: field 'covariates[0].coef': must be a finite number"),
        (_anchor_json(covariates=[{"name": "length", "mean": 0, "sd": 0, "coef": 1}]), "anchor.json: field 'covariates[0].sd': must be positive"),
        (_anchor_json(baseline=7), "anchor.json: field 'baseline': must be the baseline model's name"),
    ],
)
def test_hostile_anchor_files_are_refused_by_name(tmp_path, content, message):
    import json

    from arena.errors import InputError
    from arena.stats.style import load_style_anchor

    p = tmp_path / "anchor.json"
    p.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(InputError) as err:
        load_style_anchor(p)
    assert str(err.value) == message.replace("anchor.json", str(p))


def _write_arena_files(root, models, n_q=120, seed=0):
    """arena-hard layout on disk: answers with emoji/length differences, one judge that likes
    emoji and length; every model's verdicts are drawn from its own generator, so adding a model
    does not change the others' files."""
    from arena.io.formats import Answer, Game, Judgment, write_jsonl

    style = {"base": (400, 0), "a": (700, 2), "b": (300, 0), "c": (900, 4)}
    for m in ["base", *models]:
        rng = np.random.default_rng([seed, len(m), ord(m[0])])
        L, emo = style[m]
        answers, judgments = [], []
        for q in range(n_q):
            n_tok = int(rng.integers(L // 2, 3 * L // 2))
            answers.append(Answer(str(q), m, "word " * n_tok + " 🎉" * int(rng.poisson(emo)), token_len=n_tok).to_v01())
            if m != "base":
                p = 1 / (1 + np.exp(-(0.8 * (n_tok - 400) / (n_tok + 400) + 0.2 * emo)))
                g1 = "B>A" if rng.random() < p else "A>B"
                g2 = "A>B" if rng.random() < p else "B>A"
                judgments.append(Judgment(str(q), m, "judge", [Game("", "", g1), Game("", "", g2)]).to_v01())
        write_jsonl(root / "model_answer" / f"{m}.jsonl", answers)
        if judgments:
            write_jsonl(root / "model_judgment" / "judge" / f"{m}.jsonl", judgments)


def test_cli_anchor_out_then_anchor_in_keeps_earlier_models_fixed(tmp_path):
    import json

    from typer.testing import CliRunner

    from arena.cli import app

    _write_arena_files(tmp_path, ["a", "b"])
    anchor, first, second = tmp_path / "anchor.json", tmp_path / "first.json", tmp_path / "second.json"
    base = ["show", "-j", str(tmp_path / "model_judgment/judge"), "-b", "base", "--bootstrap", "40"]
    r = CliRunner().invoke(app, base + ["--style-control", "length,markdown,emoji", "--style-anchor-out", str(anchor)])
    assert r.exit_code == 0, r.output
    saved = json.loads(anchor.read_text())
    assert [c["name"] for c in saved["covariates"]] == ["length", "header_density", "list_density", "bold_density", "emoji_density"]
    assert saved["reference_models"] == ["a", "b"]
    r = CliRunner().invoke(app, base + ["--style-anchor", str(anchor), "-o", str(first)])
    assert r.exit_code == 0, r.output
    _write_arena_files(tmp_path, ["a", "b", "c"])  # a new model joins
    r = CliRunner().invoke(app, base + ["--style-anchor", str(anchor), "-o", str(second)])
    assert r.exit_code == 0, r.output
    one = {row["model"]: row for row in json.loads(first.read_text())["leaderboard"]}
    two = {row["model"]: row for row in json.loads(second.read_text())["leaderboard"]}
    assert set(two) == {"base", "a", "b", "c"}
    for m in ("a", "b"):
        for col in ("score", "lower", "upper"):
            assert abs(one[m][col] - two[m][col]) < 1e-9
        assert {"rank", "rank_lower", "rank_upper", "tied_with"} <= set(two[m])
    # A broken anchor is one line naming the file and field, exit code 2, no traceback.
    anchor.write_text(anchor.read_text().replace('"sd": ', '"sd": -', 1))
    r = CliRunner().invoke(app, base + ["--style-anchor", str(anchor)])
    assert r.exit_code == 2
    assert "field 'covariates[0].sd': must be positive" in r.output and "Traceback" not in r.output
