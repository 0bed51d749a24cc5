"""Judge audit: constructed biases are found; agreement statistics on hand-worked cases."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from arena.audit import judges as ja
from arena.cli import app
from arena.io.formats import Game, Judgment
from arena.stats.ratings import battles_from_judgments


def _judgments(judge, pick, n_q=300, models=("m1", "m2"), seed=0):
    """Two games per prompt; ``pick(rng, model, game)`` returns the label the judge writes."""
    rng = np.random.default_rng(seed)
    out = []
    for m in models:
        for q in range(n_q):
            games = [Game(user_prompt="", judgment="", score=pick(rng, m, g)) for g in (1, 2)]
            out.append(Judgment(question_id=str(q), model=m, judge=judge, games=games, baseline="base", category="c"))
    return out


def position_biased(rng, model, game):
    # Prefers whichever answer sits in position A 80% of the time, whatever the content.
    return "A>B" if rng.random() < 0.8 else "B>A"


def fair(rng, model, game):
    # The model wins 70% of prompts, in either position (consistent verdicts are drawn per game).
    model_wins = rng.random() < 0.7
    if game == 1:  # model is B
        return "B>A" if model_wins else "A>B"
    return "A>B" if model_wins else "B>A"


def test_known_position_bias_is_found():
    b = battles_from_judgments(_judgments("biased", position_biased) + _judgments("fair", fair, seed=1), "base")
    pc = ja.position_consistency(b).set_index("judge")
    # Biased judge: consistent only when it happens to pick opposite positions: .8*.2 + .2*.8 = .32.
    assert pc.loc["biased", "consistency"] == pytest.approx(0.32, abs=0.05)
    assert pc.loc["biased", "first_position_win"] == pytest.approx(0.8, abs=0.03)
    assert pc.loc["fair", "first_position_win"] == pytest.approx(0.5, abs=0.03)
    # Fair judge draws each game independently: consistent with prob .7^2 + .3^2 = .58.
    assert pc.loc["fair", "consistency"] == pytest.approx(0.58, abs=0.05)


def test_verdict_distribution_and_unparsed_rate():
    js = _judgments("j", lambda rng, m, g: None if g == 2 and rng.random() < 0.5 else "A=B", n_q=200)
    vd = ja.verdict_distribution(battles_from_judgments(js, "base")).iloc[0]
    assert vd["n_games"] == 800
    assert vd["unparsed_rate"] == pytest.approx(0.25, abs=0.04)
    assert vd["share_A=B"] + vd["unparsed_rate"] == pytest.approx(1.0)


def test_length_bias_slope_is_found():
    rng = np.random.default_rng(4)
    js, lens = [], []
    for q in range(600):
        lm, lb = rng.uniform(100, 1000), 500.0
        d = (lm - lb) / (lm + lb)
        p = 1 / (1 + np.exp(-2.0 * d))  # judge prefers longer answers: slope 2
        s1 = "B>A" if rng.random() < p else "A>B"
        s2 = "A>B" if rng.random() < p else "B>A"
        js.append(Judgment(str(q), "m", "j", [Game("", "", s1), Game("", "", s2)], baseline="base"))
        lens += [(lm, lb), (lm, lb)]
    b = battles_from_judgments(js, "base")
    lens = np.array(lens)
    slopes, bins = ja.length_bias(b, lens[:, 0], lens[:, 1], n_bootstrap=100, rng=np.random.default_rng(0))
    row = slopes.iloc[0]
    assert row["lower"] <= 2.0 <= row["upper"] and row["lower"] > 0.5
    assert bins["win_rate"].is_monotonic_increasing or bins["win_rate"].iloc[-1] > bins["win_rate"].iloc[0] + 0.2


def test_cohen_and_fleiss_by_hand():
    # po = .75, marginals (.5,.5) and (.25,.75): pe = .5 -> kappa = .5
    assert ja.cohen_kappa([0, 0, 1, 1], [0, 1, 1, 1], 2) == pytest.approx(0.5)
    # P_i = [1, 1, 0] -> 2/3; p_j = (.5, .5) -> pe = .5; kappa = 1/3.
    assert ja.fleiss_kappa(np.array([[0, 0], [1, 1], [0, 1.0]]), 2) == pytest.approx(1 / 3)


def test_judge_agreement_self_preference_runs_and_humans():
    a = _judgments("gpt-4-judge", fair, models=("gpt-x", "llama-y"), seed=2)
    # A second judge that copies the first one's verdicts except that it favours gpt-x always.
    b = [Judgment(j.question_id, j.model, "claude-judge", [Game("", "", g.score) for g in j.games], baseline="base") for j in a]
    for j in b:
        if j.model == "gpt-x":
            j.games = [Game("", "", "A>B"), Game("", "", "B>A")]  # baseline wins both
    battles = battles_from_judgments(a + b, "base")
    pairs, overall = ja.judge_agreement(battles)
    assert pairs.iloc[0]["n_games"] == 1200
    assert 0 < pairs.iloc[0]["cohen_kappa"] < 1
    assert overall["n_games_all_judges"] == 1200 and -1 <= overall["krippendorff_alpha"] <= 1
    sp = ja.self_preference(battles)
    row = sp.set_index(["judge", "model"]).loc[("gpt-4-judge", "gpt-x")]
    assert row["other_win_rate"] == 0.0 and row["self_preference"] == pytest.approx(row["win_rate"]) and row["win_rate"] > 0.5
    rv = ja.run_variance({"run1": battles_from_judgments(a, "base"), "run2": battles_from_judgments(b, "base")}).set_index("model")
    assert rv.loc["llama-y", "sd"] == 0 and rv.loc["llama-y", "verdict_agreement"] == 1.0
    assert rv.loc["gpt-x", "sd"] > 10 and rv.loc["gpt-x", "verdict_agreement"] < 1
    human = pd.DataFrame({"question_id": ["0", "1"], "model": ["llama-y", "llama-y"], "winner": ["model", "opponent"]})
    ha = ja.human_agreement(battles, human)
    assert set(ha["judge"]) == {"gpt-4-judge", "claude-judge"} and ha["n"].tolist() == [2, 2]


def test_audit_judges_cli_on_real_files(shared_data, tmp_path):
    jdir = shared_data / "arena/judgments/arena-hard-v0.1"
    result = CliRunner().invoke(app, ["audit", "judges", "--judgments", str(jdir), "--answers", str(shared_data / "arena/answers/arena-hard-v0.1"), "--output", str(tmp_path)])
    assert result.exit_code == 0, result.output
    pc = pd.read_csv(tmp_path / "position_consistency.csv").set_index("judge")
    vd = pd.read_csv(tmp_path / "verdict_distribution.csv").set_index("judge")
    # gpt-3.5 on Athene: 108 prompts, 2 unparsed games (documented in the data README).
    assert vd.loc["gpt-3.5-turbo-0125", "n_games"] == 216
    assert vd.loc["gpt-3.5-turbo-0125", "unparsed_rate"] == pytest.approx(2 / 216)
    assert vd.loc["gpt-4-1106-preview", "unparsed_rate"] == 1.0  # every game is an API failure
    assert 0 <= pc.loc["gpt-3.5-turbo-0125", "consistency"] <= 1
    assert "position consistency" in result.output.lower()


def test_cli_repeated_runs_human_labels_and_bad_human_file(tmp_path):
    from arena.io.formats import write_jsonl

    run1 = _judgments("j", fair, n_q=100, models=("m",), seed=3)
    run2 = _judgments("j", fair, n_q=100, models=("m",), seed=4)
    for name, js in (("run1", run1), ("run2", run2)):
        write_jsonl(tmp_path / name / "m.jsonl", [j.to_v01() for j in js])
    human = tmp_path / "human.csv"
    human.write_text("question_id,model,winner\n0,m,model\n1,m,opponent\n2,m,tie\n")
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["audit", "judges", "--human", str(human), "--output", str(out), "--judgments", str(tmp_path / "run1"), str(tmp_path / "run2")])
    assert r.exit_code == 0, r.output
    rv = pd.read_csv(out / "run_variance_j.csv")
    assert rv.loc[0, "verdict_agreement"] < 1 and rv.loc[0, "sd"] >= 0
    ha = pd.read_csv(out / "human_agreement.csv")
    assert ha.loc[0, "n"] == 3
    human.write_text("question_id,model,winner\n0,m,model\n1,m,maybe\n")
    r = CliRunner().invoke(app, ["audit", "judges", "--human", str(human), "--judgments", str(tmp_path / "run1")])
    assert r.exit_code == 2 and "line 3" in r.output and "winner" in r.output
