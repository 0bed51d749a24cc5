"""`arena show` with --ensemble / --min-judges / --style-control / --scores-jsonl, end to end on files."""

from __future__ import annotations

import json

import numpy as np
from typer.testing import CliRunner

from arena.audit.io import read_scores
from arena.cli import app
from arena.io.formats import Answer, Game, Judgment, write_jsonl


def _write_bench(root, n_q=150, seed=0):
    """arena-hard layout with two judges; both prefer the longer answer."""
    rng = np.random.default_rng(seed)
    answers = {"base": [], "long": [], "short": []}
    judges = {"judge-a": {"long": [], "short": []}, "judge-b": {"long": [], "short": []}}
    for q in range(n_q):
        lens = {"base": 400, "long": int(rng.integers(500, 1500)), "short": int(rng.integers(50, 400))}
        for m, L in lens.items():
            text = "word " * L + ("\n# Head\n- item\n**bold**" if m == "long" else "")
            answers[m].append(Answer(str(q), m, text, token_len=L).to_v01())
        for judge in judges:
            for m in ("long", "short"):
                p = 1 / (1 + np.exp(-3 * (lens[m] - 400) / (lens[m] + 400)))
                g1 = "B>A" if rng.random() < p else "A>B"
                g2 = "A>B" if rng.random() < p else "B>A"
                judges[judge][m].append(Judgment(str(q), m, judge, [Game("", "", g1), Game("", "", g2)]).to_v01())
    for m, recs in answers.items():
        write_jsonl(root / "model_answer" / f"{m}.jsonl", recs)
    for judge, by_model in judges.items():
        for m, recs in by_model.items():
            write_jsonl(root / "model_judgment" / judge / f"{m}.jsonl", recs)


def test_show_ensemble_and_scores_jsonl(tmp_path):
    _write_bench(tmp_path)
    out = tmp_path / "scores.jsonl"
    args = ["show", "-j", str(tmp_path / "model_judgment/judge-a"), "-j", str(tmp_path / "model_judgment/judge-b"), "-b", "base", "--bootstrap", "50"]
    r = CliRunner().invoke(app, args + ["--ensemble", "majority", "--min-judges", "2", "--scores-jsonl", str(out)])
    assert r.exit_code == 0, r.output
    assert "Leave-one-judge-out" in r.output
    scores = read_scores(out).set_index("model")
    assert len(scores.loc["long", "results"]) == 50
    assert scores.loc["long", "score"] > 50 > scores.loc["short", "score"]
    r = CliRunner().invoke(app, args + ["--ensemble", "bogus"])
    assert r.exit_code != 0 and "--ensemble" in r.output


def test_show_style_control_finds_the_length_preference(tmp_path):
    _write_bench(tmp_path, n_q=200, seed=1)
    out = tmp_path / "lb.json"
    r = CliRunner().invoke(
        app,
        ["show", "-j", str(tmp_path / "model_judgment/judge-a"), "-b", "base", "--bootstrap", "60", "--style-control", "length", "--output", str(out)],
    )
    assert r.exit_code == 0, r.output
    assert "Style coefficients" in r.output
    board = {row["model"]: row for row in json.loads(out.read_text())["leaderboard"]}
    raw = CliRunner().invoke(app, ["show", "-j", str(tmp_path / "model_judgment/judge-a"), "-b", "base", "--bootstrap", "20", "--scores-jsonl", str(tmp_path / "raw.jsonl")])
    assert raw.exit_code == 0, raw.output
    plain = read_scores(tmp_path / "raw.jsonl").set_index("model")
    # The judge only rewards length, so controlling for it pulls both models towards 50%.
    assert abs(board["long"]["score"] - 50) < abs(plain.loc["long", "score"] - 50)
    assert abs(board["short"]["score"] - 50) < abs(plain.loc["short", "score"] - 50)
