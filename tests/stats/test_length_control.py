"""Length-controlled win rate: simulated judges with a known length bias, and AlpacaEval 2.0."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit
from scipy.stats import spearmanr

from arena.stats.length_control import (
    fit_length_glm, instruction_difficulty, length_controlled_win_rates, standardised_length_term,
)

AE = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "alpaca_eval"


def simulate(rng, n_instr=805, bias=1.5):
    """Models with known quality θ and answer lengths; the judge adds `bias`·tanh(Δ/sd)."""
    quality = {"short-good": 0.3, "long-bad": -0.6, "even": 0.0, "long-good": 0.5}
    mean_len = {"short-good": -500.0, "long-bad": 700.0, "even": 0.0, "long-good": 400.0}
    difficulty = rng.normal(0, 1, n_instr)
    rows = []
    for m, theta in quality.items():
        delta = rng.normal(mean_len[m], 900, n_instr)
        t = standardised_length_term(delta)
        p = expit(theta + bias * t + difficulty)
        y = rng.binomial(1, p).astype(float)
        truth = 100 * expit(theta + difficulty).mean()
        rows.append(pd.DataFrame({"model": m, "instr": np.arange(n_instr), "y": y, "delta": delta, "truth": truth}))
    return pd.concat(rows, ignore_index=True)


def test_recovers_the_win_rate_without_the_length_bonus():
    rng = np.random.default_rng(7)
    df = simulate(rng)
    res = length_controlled_win_rates(df["model"], df["instr"], df["y"], df["delta"],
                                      n_boot=60, rng=np.random.default_rng(1))
    truth = df.groupby("model")["truth"].first().reindex(res.models).to_numpy()
    raw_err = np.abs(res.win_rate - truth)
    lc_err = np.abs(res.lc_win_rate - truth)
    # The raw win rate is moved by length (long-bad looks better, short-good worse) ...
    assert raw_err.max() > 10
    # ... the length-controlled one is not, and its CIs cover the truth.
    assert lc_err.max() < 4.5, dict(zip(res.models, lc_err.round(2)))
    assert np.all((res.lc_lower <= truth) & (truth <= res.lc_upper)), (res.lc_lower, truth, res.lc_upper)
    order_truth = np.argsort(truth)
    assert list(np.argsort(res.lc_win_rate)) == list(order_truth)
    assert list(np.argsort(res.win_rate)) != list(order_truth)


def test_no_length_variation_and_soft_labels():
    # A model identical to the baseline in length: the length term is 0 and LC equals the fitted mean.
    assert np.all(standardised_length_term(np.full(10, 3.0)) == 0)
    y = np.full(200, 0.5)
    coef = fit_length_glm(y, np.zeros(200), np.zeros(200))
    assert abs(expit(coef[0]) - 0.5) < 1e-9


def test_difficulty_is_shared_across_models():
    rng = np.random.default_rng(3)
    n_models, n_instr = 6, 300
    gamma = rng.normal(0, 1.2, n_instr)
    m = np.repeat(np.arange(n_models), n_instr)
    i = np.tile(np.arange(n_instr), n_models)
    y = rng.binomial(1, expit(rng.normal(0, 0.5, n_models)[m] + gamma[i])).astype(float)
    est = instruction_difficulty(m, i, y, np.zeros_like(y), n_models, n_instr).difficulty
    assert np.corrcoef(est, gamma)[0, 1] > 0.7
    assert abs(est.mean()) < 1e-9


@pytest.mark.skipif(not AE.exists(), reason="../shared/data/alpaca_eval is absent")
def test_alpaca_eval_2_published_length_controlled_win_rates():
    d = pd.read_csv(AE / "ae2_gpt4turbo_preferences.csv.gz")
    published = pd.read_csv(AE / "leaderboard_ae2.csv", index_col=0)["length_controlled_winrate"]
    res = length_controlled_win_rates(d["model"], d["instruction_index"], d["preference"] - 1,
                                      d["len_output_2"] - d["len_output_1"])
    ours = pd.Series(res.lc_win_rate, index=res.models)
    both = pd.concat([ours, published], axis=1, join="inner").dropna()
    assert len(both) == 57
    rho = spearmanr(both.iloc[:, 0], both.iloc[:, 1])[0]
    med = (both.iloc[:, 0] - both.iloc[:, 1]).abs().median()
    assert rho >= 0.98, rho
    assert med <= 1.5, med


@pytest.mark.skipif(not AE.exists(), reason="../shared/data/alpaca_eval is absent")
def test_cli_import_with_answers_then_length_controlled_show(tmp_path):
    import json

    from typer.testing import CliRunner

    from arena.cli import app

    runner = CliRunner()
    raw = AE / "raw"
    files = [str(raw / "alpaca-7b__weighted_alpaca_eval_gpt4_turbo.json.gz"), str(raw / "claude-2.1__weighted_alpaca_eval_gpt4_turbo.json.gz")]
    res = runner.invoke(app, ["import", "alpaca-eval", *files, "--output", str(tmp_path / "j"), "--answers-output", str(tmp_path / "a")])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["alpaca-7b.jsonl", "claude-2.1.jsonl", "gpt4_1106_preview.jsonl"]
    out = tmp_path / "lb.json"
    res = runner.invoke(app, ["show", "-j", str(tmp_path / "j"), "--baseline", "gpt4_1106_preview", "--answers", str(tmp_path / "a"),
                              "--length-control", "--bootstrap", "20", "-o", str(out)])
    assert res.exit_code == 0, res.output
    rows = {r["model"]: r for r in json.loads(out.read_text())["leaderboard"]}
    a7 = rows["alpaca-7b"]
    # alpaca-7b writes far shorter answers than the baseline and the judge favours length, so
    # controlling for length raises its win rate (published: 2.59 raw, 5.88 length-controlled).
    assert a7["lc_win_rate"] > a7["score"] + 1
    assert a7["lc_lower"] <= a7["lc_win_rate"] <= a7["lc_upper"]
    # Without answers there is nothing to control for: one line, exit 2.
    res = runner.invoke(app, ["show", "-j", str(tmp_path / "j"), "--baseline", "gpt4_1106_preview", "--answers", str(tmp_path / "nope"), "--length-control"])
    assert res.exit_code == 2
