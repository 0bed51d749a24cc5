"""Judge stability: repeats through the CLI against a scripted judge that flips with a known
probability, the flip rate it reports, aggregation rules and adaptive repeats."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from arena.io.formats import Game, read_judgments
from arena.judge_repeats import aggregate_games, implied_flip_p, leader_posterior, stability
from tests.judge_setup import arena, judge_config

P_FLIP = 0.2


def _games(*labels):
    return [Game("p", f"reply {i}", lab, status="ok" if lab else "unparsed") for i, lab in enumerate(labels)]


def test_majority_tie_scores_the_mean_of_tied_labels():
    g = aggregate_games(_games("A>B", "B>A", "A>B", "B>A"), "majority")
    assert g.score == "A>B" and g.extra["tie"] == ["A>B", "B>A"]
    assert g.extra["label_probs"] == {"A>B": 0.5, "B>A": 0.5}
    assert [r["judgment"] for r in g.extra["repeats"]] == [f"reply {i}" for i in range(4)]


def test_majority_and_mean():
    g = aggregate_games(_games("A>B", "A>B", "B>>A", None), "majority")
    assert g.score == "A>B" and "label_probs" not in g.extra and g.extra["n_repeats"] == 4
    m = aggregate_games(_games("A>B", "A>B", "B>>A", None), "mean")
    assert m.score == "A>B" and m.extra["label_probs"] == pytest.approx({"A>B": 2 / 3, "B>>A": 1 / 3})
    none = aggregate_games(_games(None, None), "majority")
    assert none.score is None and none.status == "unparsed"


def test_leader_posterior_and_flip_inversion():
    assert leader_posterior(["A>B"] * 3) == pytest.approx(1 - 0.5**4)
    assert leader_posterior([]) == 0.0
    for p in (0.0, 0.1, 0.2, 0.5):
        assert implied_flip_p(2 * p - 1.25 * p * p) == pytest.approx(p)


def test_repeats_recover_flip_probability_and_resume_free(fake_server, tmp_path):
    srv = fake_server({"scripted_judge": {"strength": {"good": 2.0, "base": 1.0}, "p_flip": P_FLIP, "seed": 11}})
    cfg = judge_config(tmp_path, srv.url, ["good"], 150, {"repeats": 6})
    res = arena("judge", "--config", str(cfg))
    assert res.returncode == 0, res.stderr
    hits = srv.stats()["hits"]
    assert hits == 150 * 2 * 6
    js = read_judgments(tmp_path / "run" / "model_judgment" / "judge")
    assert all(len(g.extra["repeats"]) == 6 for j in js for g in j.games)
    st = stability(js, n_bootstrap=2000, rng=np.random.default_rng(0)).iloc[0]
    print(st.to_dict())
    assert st["flip_p_lower"] <= P_FLIP <= st["flip_p_upper"]
    assert st["flip_p_upper"] - st["flip_p_lower"] < 0.1
    d = 2 * P_FLIP - 1.25 * P_FLIP**2
    assert st["flip_lower"] <= d <= st["flip_upper"]
    # A rerun finds every repeat in the cache: no new call.
    res = arena("judge", "--config", str(cfg))
    assert res.returncode == 0, res.stderr
    assert srv.stats()["hits"] == hits
    # The audit reports the stability table.
    out = tmp_path / "audit"
    aud = arena("audit", "judges", "--judgments", str(tmp_path / "run" / "model_judgment" / "judge"), "--baseline", "base", "--output", str(out))
    assert aud.returncode == 0, aud.stderr
    assert "Judge stability" in aud.stdout
    row = pd.read_csv(out / "stability.csv").iloc[0]
    assert row["flip_p_lower"] <= P_FLIP <= row["flip_p_upper"]


def test_adaptive_repeats_reach_confidence(fake_server, tmp_path):
    srv = fake_server({"scripted_judge": {"strength": {"good": 2.0, "base": 1.0}, "p_flip": 0.3, "seed": 5}})
    cfg = judge_config(tmp_path, srv.url, ["good"], 60, {"repeats_adaptive": {"max": 9, "confidence": 0.9}})
    res = arena("judge", "--config", str(cfg))
    assert res.returncode == 0, res.stderr
    js = read_judgments(tmp_path / "run" / "model_judgment" / "judge")
    n = []
    for j in js:
        for g in j.games:
            reps = [r["score"] for r in g.extra["repeats"]]
            assert g.extra["posterior"] == pytest.approx(leader_posterior(reps), abs=1e-6)
            assert leader_posterior(reps) >= 0.9 or len(reps) == 9
            if len(reps) < 9:  # it stopped as soon as the confidence was reached
                assert leader_posterior(reps[:-1]) < 0.9
            n.append(len(reps))
    print("adaptive repeats: mean", np.mean(n), "max", max(n), "games at max", sum(x == 9 for x in n), "of", len(n))
    assert srv.stats()["hits"] == sum(n) < 9 * len(n)


def test_changing_repeats_rejudges_and_reuses_the_first_repeat(fake_server, tmp_path):
    srv = fake_server({"scripted_judge": {"strength": {"good": 2.0}, "p_flip": P_FLIP, "seed": 1}})
    cfg = judge_config(tmp_path, srv.url, ["good"], 10, {})
    assert arena("judge", "--config", str(cfg)).returncode == 0
    assert srv.stats()["hits"] == 20
    cfg = judge_config(tmp_path, srv.url, ["good"], 10, {"repeats": 3})
    res = arena("judge", "--config", str(cfg))
    assert res.returncode == 0, res.stderr
    assert "good: re-judging 10 stale judgments (repeats changed)" in " ".join(res.stdout.split())
    assert srv.stats()["hits"] == 20 + 40  # repeat 0 is the cached single run
    js = read_judgments(tmp_path / "run" / "model_judgment" / "judge")
    assert len(js) == 10 and all(len(g.extra["repeats"]) == 3 for j in js for g in j.games)
