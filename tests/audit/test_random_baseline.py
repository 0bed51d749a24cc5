"""`arena audit benchmark --random-baseline K`: random prompt subsets from the same pool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena.audit.io import read_names, read_reference
from arena.audit.random_baseline import random_subset_audits
from arena.cli import app
from arena.errors import InputError

NAMES = Path(__file__).resolve().parents[2] / "data" / "ae2_to_chatbot_arena_20240329.json"


def test_random_subsets_separate_less_than_the_full_pool(shared_data, tmp_path):
    pool = [shared_data / "alpaca_eval/ae2_gpt4turbo_preferences.csv.gz"]
    ref = read_reference(shared_data / "human_reference/chatbot_arena_20240329.csv")
    names = read_names(NAMES)
    small = random_subset_audits(pool, ref, names, k=3, subset_size=150, rounds=60, seed=1)
    full = random_subset_audits(pool, ref, names, k=1, subset_size=805, rounds=60, seed=1)
    assert len(small) == 3 and (small["n_models"] == 15).all()
    # Fewer prompts -> wider CIs -> fewer confidently separated pairs.
    assert small["separability"].mean() < full["separability"].iloc[0]
    # Different subsets give different leaderboards.
    assert small["brier"].nunique() == 3
    with pytest.raises(InputError):
        random_subset_audits(pool, ref, names, k=1, subset_size=None)
    with pytest.raises(InputError):
        random_subset_audits(pool, ref, names, k=1, subset_size=10_000)


def test_cli_reports_side_by_side(shared_data, tmp_path):
    scores = tmp_path / "s.jsonl"
    scores.write_text(json.dumps({"model": "claude-2.1", "score": 15.7, "lower": 14.5, "upper": 17.0}) + "\n" + json.dumps({"model": "gemma-2b-it", "score": 3.4, "lower": 2.8, "upper": 4.0}) + "\n")
    out = tmp_path / "o.json"
    r = CliRunner().invoke(
        app,
        ["audit", "benchmark", "--scores", str(scores), "--reference", str(shared_data / "human_reference/chatbot_arena_20240329.csv"), "--names", str(NAMES),
         "--random-baseline", "2", "--pool", str(shared_data / "alpaca_eval/ae2_gpt4turbo_preferences.csv.gz"), "--subset-size", "100", "--rounds", "30", "--output", str(out)],
    )
    assert r.exit_code == 0, r.output
    res = json.loads(out.read_text())
    assert set(res) == {"benchmark", "random_mean", "random_sd"} and res["benchmark"]["n_models"] == 2
    assert 0 <= res["random_mean"]["separability"] <= 1
