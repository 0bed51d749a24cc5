"""The offline main job, end to end, with the real embedded model (SmolLM2-135M-Instruct).

The model is far too small to be a good judge; this proves the real path works: llama-cpp-python's
OpenAI-compatible server on loopback, reached through our client, answers, two-game judging with
the re-ask turn, and the leaderboard.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from arena.io.formats import VERDICT_LABELS, read_jsonl

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.smollm
@pytest.mark.slow
def test_quickstart_pipeline_with_smollm2(tmp_path):
    cfg = yaml.safe_load((ROOT / "data" / "quickstart" / "config.yaml").read_text())
    qfile = tmp_path / "question.jsonl"
    lines = (ROOT / "data" / "quickstart" / "question.jsonl").read_text().splitlines()[:2]
    qfile.write_text("\n".join(lines) + "\n")
    cfg["questions"] = str(qfile)
    cfg["output_dir"] = str(tmp_path / "run")
    cfg["answers"]["models"] = ["smollm2-greedy", "smollm2-brief"]
    cfg["judge"]["models"] = ["smollm2-greedy"]
    cfg["endpoints"]["smollm2-greedy"]["params"]["max_tokens"] = 48
    cfg["endpoints"]["smollm2-judge"]["params"]["max_tokens"] = 64
    cfg["show"]["bootstrap"] = 20
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))

    res = subprocess.run([sys.executable, "-m", "arena.cli", "run", "--config", str(path)], capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "not meaningful" in res.stdout + res.stderr
    run = tmp_path / "run"
    for m in ("smollm2-greedy", "smollm2-brief"):
        recs = [r for _, r in read_jsonl(run / "model_answer" / f"{m}.jsonl")]
        assert len(recs) == 2 and all(r["choices"][0]["turns"][0]["content"].strip() for r in recs)
        assert all(r["choices"][0]["turns"][0]["token_len"] > 0 for r in recs)
    judged = [r for _, r in read_jsonl(run / "model_judgment" / "smollm2-judge" / "smollm2-greedy.jsonl")]
    assert len(judged) == 2 and all(len(r["games"]) == 2 for r in judged)
    games = [g for r in judged for g in r["games"]]
    # The grammar-constrained re-ask makes even this tiny judge end with a label.
    assert all(g["score"] in VERDICT_LABELS for g in games), [g.get("status") for g in games]
    assert all(g["judgment"] for g in games)
    with open(run / "leaderboard.csv") as fh:
        rows = {r["model"]: r for r in csv.DictReader(fh)}
    assert set(rows) == {"smollm2-greedy", "smollm2-brief"}
    assert int(rows["smollm2-greedy"]["n_battles"]) == 4
    # The score follows the verdicts: game 1 has the baseline as A, game 2 the model; >> counts
    # strong_weight (3) times. The quickstart judges with soft verdicts (judge.soft): each game
    # counts with its label probabilities read from the logprobs (a game without them, its label).
    assert any("label_probs" in g for g in games)
    weight = {"A>>B": 3, "A>B": 1, "A=B": 1, "B>A": 1, "B>>A": 3}
    as_b = {"A>>B": 0, "A>B": 0, "A=B": 0.5, "B>A": 1, "B>>A": 1}
    num = den = 0.0
    for r in judged:
        for k, g in enumerate(r["games"]):
            for lab, p in (g.get("label_probs") or {g["score"]: 1.0}).items():
                s = as_b[lab] if k == 0 else 1 - as_b[lab]
                num, den = num + p * weight[lab] * s, den + p * weight[lab]
    score = float(rows["smollm2-greedy"]["score"])
    assert abs(score - 100 * num / den) < 1e-3, (score, num, den)

    # A rerun is served from the cache: nothing new is written.
    res = subprocess.run([sys.executable, "-m", "arena.cli", "run", "--config", str(path)], capture_output=True, text=True, timeout=900)
    assert res.returncode == 0
    assert "0 written, 2 already done" in res.stdout.replace("\n", " ")
    assert "0 judged now, 2 already done" in res.stdout.replace("\n", " ")
