"""Quality score against separability: simulated battles whose strength gap grows with the
prompt's score; the analysis recovers the trend and its CIs cover the simulated truth."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from scipy.special import expit

from arena.audit.quality import quality_buckets, read_quality_scores, score_bucket
from arena.errors import InputError
from arena.io.formats import Game, Judgment
from arena.stats.ratings import battles_from_judgments

THETA = {"strong": 1.2, "mid": 0.5, "weak": -0.8}
BUCKETS = {"0-1": (0, 1), "2-3": (2, 3), "4-5": (4, 5), "6-7": (6, 7)}


def gap(score):
    """The strength multiplier: models differ more on better prompts."""
    return 0.1 + 1.4 * np.asarray(score) / 7


def simulate(n_prompts: int, rng: np.random.Generator):
    scores = {f"q{i:05d}": int(s) for i, s in enumerate(rng.integers(0, 8, size=n_prompts))}
    js = []
    for m, th in THETA.items():
        for q, s in scores.items():
            games = []
            for k in range(2):
                win = rng.random() < expit(th * gap(s))
                # game 1: baseline is A; game 2: the model is A
                label = ("B>A" if win else "A>B") if k == 0 else ("A>B" if win else "B>A")
                games.append(Game("p", "j", label))
            js.append(Judgment(q, m, "judge", games, baseline="base"))
    return scores, battles_from_judgments(js, "base")


def truth(model: str, bucket: str) -> float:
    lo, hi = BUCKETS[bucket]
    return 100 * float(np.mean(expit(THETA[model] * gap(np.arange(lo, hi + 1)))))


def test_bucket_labels():
    assert [score_bucket(s) for s in (0, 1, 2, 5, 6, 7)] == ["0-1", "0-1", "2-3", "4-5", "6-7", "6-7"]


def test_trend_is_recovered():
    scores, battles = simulate(3200, np.random.default_rng(0))
    rep = quality_buckets(battles, scores, "base", pairs=[("strong", "base"), ("weak", "base"), ("strong", "weak")], n_bootstrap=300,
                          rng=np.random.default_rng(1))
    print(rep.pairs.round(2).to_string())
    print(rep.buckets.round(3).to_string())
    for pair, sign in (("strong:base", 1), ("weak:base", -1), ("strong:weak", 1)):
        wr = rep.pairs[rep.pairs["pair"] == pair].sort_values("bucket")["win_rate"].to_numpy()
        assert list(rep.pairs[rep.pairs["pair"] == pair].sort_values("bucket")["bucket"]) == list(BUCKETS)
        assert np.all(np.diff(sign * (wr - 50)) > 0), (pair, wr)  # moves away from 50% as the score rises
    n = rep.buckets["n_prompts"].to_numpy()
    assert (n == n[0]).all()  # the same number of prompts per bucket
    sep = rep.buckets.sort_values("bucket")["separability"].to_numpy()
    assert sep[-1] > sep[0]


def test_cis_cover_the_simulated_truth():
    covered = total = 0
    for seed in range(20):
        scores, battles = simulate(800, np.random.default_rng(100 + seed))
        rep = quality_buckets(battles, scores, "base", pairs=[(m, "base") for m in THETA], n_bootstrap=200, rng=np.random.default_rng(seed))
        for row in rep.pairs.itertuples():
            t = truth(row.model_a, row.bucket)
            covered += row.lower <= t <= row.upper
            total += 1
    print(f"coverage {covered}/{total} = {covered / total:.3f}")
    assert total == 20 * 3 * 4
    assert covered / total >= 0.88


@pytest.mark.parametrize("record, message", [
    ({"question_id": "q1", "score": "7; __import__('os')"}, "score must be a number from 0 to 7, got \"7; __import__('os')\""),
    ({"question_id": "q1", "score": 9}, "score must be a number from 0 to 7, got '9'"),
    ({"question_id": "q1", "score": True}, "score must be a number from 0 to 7, got 'True'"),
    ({"score": 3}, "missing question_id (or uid)"),
])
def test_hostile_score_files(tmp_path, record, message):
    p = tmp_path / "q.jsonl"
    p.write_text(json.dumps({"question_id": "q0", "score": 4}) + "\n" + json.dumps(record) + "\n")
    with pytest.raises(InputError) as exc:
        read_quality_scores(p)
    assert exc.value.line == 2 and message in str(exc.value)


def test_cli(tmp_path):
    scores, battles = simulate(400, np.random.default_rng(5))
    jdir = tmp_path / "judgments"
    jdir.mkdir()
    rows = {}
    for r in battles.itertuples():
        rows.setdefault((r.model, r.question_id), []).append(r.label)
    for m in THETA:
        with open(jdir / f"{m}.jsonl", "w") as fh:
            for (mm, q), labels in rows.items():
                if mm == m:
                    fh.write(json.dumps({"question_id": q, "model": m, "judge": "judge", "baseline": "base",
                                         "games": [{"user_prompt": "p", "judgment": "j", "score": lab} for lab in labels]}) + "\n")
    qfile = tmp_path / "question.jsonl"
    qfile.write_text("".join(json.dumps({"question_id": q, "turns": [{"content": "x"}], "score": s}) + "\n" for q, s in scores.items()))
    out = tmp_path / "quality.json"
    res = subprocess.run([sys.executable, "-m", "arena.cli", "audit", "quality", "--judgments", str(jdir), "--questions", str(qfile),
                          "--baseline", "base", "--pairs", "strong:base,strong:weak", "--output", str(out)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    data = json.loads(out.read_text())
    assert {r["bucket"] for r in data["buckets"]} == set(BUCKETS)
    assert len(data["pairs"]) == 8
    bad = subprocess.run([sys.executable, "-m", "arena.cli", "audit", "quality", "--judgments", str(jdir), "--questions", str(qfile),
                          "--baseline", "base", "--pairs", "strong"], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == ["error: --pairs: expected model_a:model_b, got 'strong'"] or "expected model_a:model_b" in bad.stderr
