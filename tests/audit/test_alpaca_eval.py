"""AlpacaEval import: soft preferences become judgments that reproduce AlpacaEval 2.0."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from arena.io.alpaca_eval import SOFT_KEY, read_annotations, soft_battles, to_judgments, write_judgment_dir
from arena.cli import app
from arena.errors import InputError
from arena.io.formats import read_judgments
from arena.stats.ratings import leaderboard


def _rows():
    base = {"generator_1": "base", "annotator": "ann", "output_1": "x", "output_2": "y"}
    return [
        {**base, "instruction": "q1", "generator_2": "m", "preference": 1.75},
        {**base, "instruction": "q2", "generator_2": "m", "preference": 0},  # legacy draw
        {**base, "instruction": "q3", "generator_2": "m", "preference": None},  # annotator failure
        {**base, "instruction": "q4", "generator_2": "m", "preference": 1.2},
    ]


def test_import_roundtrip_and_soft_win_rate(tmp_path):
    src = tmp_path / "annotations.json.gz"
    with gzip.open(src, "wt") as fh:
        json.dump(_rows(), fh)
    js = to_judgments(read_annotations(src))
    assert [j.games[0].score for j in js] == ["B>A", "A=B", None, "A>B"]
    assert js[2].games[0].status == "failed"
    write_judgment_dir(js, tmp_path / "out")
    back = read_judgments(tmp_path / "out")
    assert back[0].games[0].extra[SOFT_KEY] == pytest.approx(0.75)
    b = soft_battles(back, "base")
    # Soft scores reach the battle table at weight 1; the failed game keeps weight 0.
    assert b["weight"].tolist() == [1.0, 1.0, 0.0, 1.0]
    lb = leaderboard(b, "base", n_bootstrap=50, rng=np.random.default_rng(0))
    row = lb.table.set_index("model").loc["m"]
    assert row["score"] == pytest.approx(100 * (0.75 + 0.5 + 0.2) / 3)


def test_swapped_baseline_and_bad_preference(tmp_path):
    rows = _rows()[:1]
    rows[0] = {**rows[0], "generator_1": "m", "generator_2": "base"}
    src = tmp_path / "a.json"
    src.write_text(json.dumps(rows))
    (j,) = to_judgments(read_annotations(src), baseline="base")
    assert j.model == "m" and j.baseline == "base" and j.games[0].extra[SOFT_KEY] == pytest.approx(0.25)
    rows[0]["preference"] = 2.5
    src.write_text(json.dumps(rows))
    with pytest.raises(InputError) as err:
        read_annotations(src)
    assert err.value.field == "[0].preference" and "a.json" in str(err.value)


def test_reproduces_published_ae2_leaderboard(shared_data, tmp_path):
    """Every model's AE2 win_rate to 1e-6; bootstrap SE within 10% of the published SE."""
    ae = shared_data / "alpaca_eval"
    result = CliRunner().invoke(app, ["import", "alpaca-eval", str(ae / "ae2_gpt4turbo_preferences.csv.gz"), "--output", str(tmp_path / "j")])
    assert result.exit_code == 0, result.output
    js = read_judgments(tmp_path / "j")
    lb = leaderboard(soft_battles(js, "gpt4_1106_preview"), "gpt4_1106_preview", n_bootstrap=1000, rng=np.random.default_rng(7))
    ours = lb.table.set_index("model")
    se = lb.replicates.std(ddof=1)
    pub = pd.read_csv(ae / "leaderboard_ae2.csv", index_col=0)
    shared = [m for m in ours.index if m in pub.index]
    assert len(shared) == 57
    err = (ours.loc[shared, "score"] - pub.loc[shared, "win_rate"]).abs()
    assert err.max() < 1e-6
    rel = (se[shared] / pub.loc[shared, "standard_error"] - 1).abs()
    # The baseline against itself has SE 0 on both sides.
    rel = rel.drop("gpt4_1106_preview", errors="ignore")
    assert rel.max() < 0.10, rel.sort_values().tail()


def test_raw_annotation_file_matches_flat_table(shared_data):
    ae = shared_data / "alpaca_eval"
    ids = {json.loads(line)["instruction"]: str(k) for k, line in enumerate((shared_data / "prompts/alpaca_eval_805.jsonl").read_text().split("\n")) if line}
    raw = to_judgments(read_annotations(ae / "raw/claude-2.1__weighted_alpaca_eval_gpt4_turbo.json.gz", instruction_ids=ids))
    flat = pd.read_csv(ae / "ae2_gpt4turbo_preferences.csv.gz").query("model == 'claude-2.1'").set_index("instruction_index")
    soft = {int(j.question_id): j.games[0].extra[SOFT_KEY] for j in raw}
    assert len(soft) == len(flat) == 805
    assert max(abs(soft[i] - (flat.loc[i, "preference"] - 1)) for i in soft) < 1e-9


def test_audit_of_ae2_against_chatbot_arena(shared_data, tmp_path):
    """`arena audit benchmark` on our AE2 scores (with our bootstrap replicates) vs the Arena."""
    from arena.audit.io import scores_from_leaderboard, write_scores

    ae = shared_data / "alpaca_eval"
    js = to_judgments(read_annotations(ae / "ae2_gpt4turbo_preferences.csv.gz"))
    lb = leaderboard(soft_battles(js, "gpt4_1106_preview"), "gpt4_1106_preview", n_bootstrap=200, rng=np.random.default_rng(1))
    write_scores(tmp_path / "scores.jsonl", scores_from_leaderboard(lb.table, lb.replicates))
    out = tmp_path / "audit.json"
    names = Path(__file__).resolve().parents[2] / "data" / "ae2_to_chatbot_arena_20240329.json"
    result = CliRunner().invoke(
        app,
        ["audit", "benchmark", "--scores", str(tmp_path / "scores.jsonl"), "--reference", str(shared_data / "human_reference/chatbot_arena_20240329.csv"), "--names", str(names), "--output", str(out)],
    )
    assert result.exit_code == 0, result.output
    res = json.loads(out.read_text())["benchmark"]
    assert res["n_models"] == 15 and res["n_pairs"] == 105
    # AE2 is known to track the Arena closely (Spearman ~0.95 in AlpacaEval's own table).
    assert res["spearman"] > 0.9 and 0.5 < res["separability"] <= 1 and res["brier"] < 0.1
