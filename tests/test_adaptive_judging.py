"""Adaptive judging through the CLI against scripted judges whose win rates differ by model:
fewer calls than uniform judging, the right ranking, and a rerun that makes no new call."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from tests.judge_setup import arena, judge_config

STRENGTH = {"m90": 9.0, "m75": 3.0, "m60": 1.5, "m25": 1 / 3, "m10": 1 / 9, "base": 1.0}
MODELS = ["m90", "m75", "m60", "m25", "m10"]
N = 300


@pytest.mark.parametrize("target", [("--target-ci", "8"), ("--target-elo", "90")])
def test_adaptive_judging_saves_calls_and_ranks_right(fake_server, tmp_path, target):
    srv = fake_server({"scripted_judge": {"strength": STRENGTH, "p_flip": 0.05, "seed": 2}})
    cfg = judge_config(tmp_path, srv.url, MODELS, N, {})
    res = arena("judge", "--config", str(cfg), *target, "--batch", "25", "--min-prompts", "50", "--order-seed", "4")
    assert res.returncode == 0, res.stderr
    out = " ".join(res.stdout.split())
    print(out[-600:])
    m = re.search(r"adaptive judging: (\d+) judge calls made \((\d+) from the cache\) in (\d+) rounds; uniform judging of every prompt would take (\d+) calls", out)
    assert m, out
    calls, uniform = int(m.group(1)), int(m.group(4))
    assert uniform == len(MODELS) * N * 2
    assert calls == srv.stats()["hits"] < uniform
    judged = {k: int(v) for k, v in re.findall(r"(m\d+): judged on (\d+) of", out)}
    print("prompts judged per model:", judged)
    assert judged["m90"] < N and judged["m10"] < N  # the clear models stop early
    lb_path = tmp_path / "lb.csv"
    show = arena("show", "--judgments", str(tmp_path / "run" / "model_judgment" / "judge"), "--baseline", "base", "--output", str(lb_path))
    assert show.returncode == 0, show.stderr
    lb = pd.read_csv(lb_path)
    ranked = [m for m in lb.sort_values("score", ascending=False)["model"] if m != "base"]
    assert ranked == MODELS
    # A rerun replays the rounds from stored judgments: no new call, the same allocation.
    again = arena("judge", "--config", str(cfg), *target, "--batch", "25", "--min-prompts", "50", "--order-seed", "4")
    assert again.returncode == 0, again.stderr
    assert srv.stats()["hits"] == calls
    assert "adaptive judging: 0 judge calls made" in " ".join(again.stdout.split())
    assert {k: int(v) for k, v in re.findall(r"(m\d+): judged on (\d+) of", " ".join(again.stdout.split()))} == judged


def test_budget_stops_between_rounds(fake_server, tmp_path):
    srv = fake_server({"scripted_judge": {"strength": STRENGTH, "p_flip": 0.3, "seed": 1}})
    cfg = judge_config(tmp_path, srv.url, ["m60", "m25"], 200, {})
    res = arena("judge", "--config", str(cfg), "--budget", "150", "--batch", "25", "--min-prompts", "25")
    assert res.returncode == 0, res.stderr
    out = " ".join(res.stdout.split())
    # round 1: 2 models x 25 prompts x 2 games = 100 calls (< 150); round 2 reaches 200: stop
    assert "adaptive judging: 200 judge calls made (0 from the cache) in 2 rounds; uniform judging of every prompt would take 800 calls (stopped by --budget)" in out
    assert srv.stats()["hits"] == 200


@pytest.mark.parametrize("args, message", [
    (["--target-ci", "5", "--target-elo", "100"], "give one precision target: --target-ci (win-rate points) or --target-elo (Elo points)"),
    (["--target-elo", "nan"], "--target-elo must be a positive number, got nan"),
    (["--target-ci", "inf"], "--target-ci must be a positive number, got inf"),
    (["--target-ci", "-3"], "--target-ci must be a positive number, got -3.0"),
])
def test_bad_precision_targets_are_one_line(tmp_path, args, message):
    cfg = judge_config(tmp_path, "http://127.0.0.1:9/v1", ["m60"], 2, {})
    res = arena("judge", "--config", str(cfg), *args)
    assert res.returncode == 2
    assert res.stderr.strip() == f"error: {message}"


@pytest.mark.parametrize("judge, message", [
    ({"aggregate": "median"}, "field 'judge.aggregate': Input should be 'majority' or 'mean'"),
    ({"repeats": 0}, "field 'judge.repeats': Input should be greater than or equal to 1"),
    ({"repeats_adaptive": {"max": 5, "confidence": 1.5}}, "field 'judge.repeats_adaptive.confidence': Input should be less than 1"),
])
def test_bad_judge_settings_are_one_line(tmp_path, judge, message):
    cfg = judge_config(tmp_path, "http://127.0.0.1:9/v1", ["m60"], 2, judge)
    res = arena("judge", "--config", str(cfg))
    assert res.returncode == 2
    assert res.stderr.strip() == f"error: {cfg}: {message}"
