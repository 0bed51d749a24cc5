"""Answers, judging and the leaderboard through the CLI against the fault-injecting server,
including a kill -9 mid-judging and a resume that repeats no successful call."""

from __future__ import annotations

import json
import re
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from arena.io.formats import VERDICT_LABELS, read_jsonl

N_PROMPTS = 500
MODELS = ["model-a", "model-b", "model-c"]


def _config(tmp_path: Path, url: str, n_prompts: int = N_PROMPTS) -> Path:
    qfile = tmp_path / "question.jsonl"
    with open(qfile, "w") as fh:
        for i in range(n_prompts):
            fh.write(json.dumps({"question_id": f"q{i:04d}", "category": "synthetic", "cluster": f"c{i % 25}",
                                 "turns": [{"content": f"Explain topic number {i} in detail, with an example."}]}) + "\n")
    ep = {"base_url": url, "max_concurrency": 32, "timeout": 1.0, "max_retries": 3, "price": {"input": 1.0, "output": 4.0}}
    cfg = {
        "name": "fault-test",
        "questions": str(qfile),
        "output_dir": str(tmp_path / "run"),
        "backoff_base": 0.01,
        "backoff_max": 0.05,
        "endpoints": {**{m: {"model": m, **ep} for m in [*MODELS, "baseline"]}, "judge": {"model": "judge-model", **ep, "params": {"temperature": 0}}},
        "answers": {"models": [*MODELS, "baseline"], "params": {"max_tokens": 256}},
        "judge": {"endpoint": "judge", "baseline": "baseline", "models": MODELS},
        "show": {"bootstrap": 50, "seed": 1},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _arena(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "arena.cli", *args], capture_output=True, text=True, timeout=600, **kw)


def _ok_server_keys(cache_path: Path) -> set[str]:
    """Server-side request ids of every judging success in our cache (the fake server's response id)."""
    db = sqlite3.connect(cache_path)
    try:
        rows = db.execute("SELECT payload FROM responses WHERE status = 'ok' AND stage LIKE 'judge%'").fetchall()
    finally:
        db.close()
    return {json.loads(p)["id"].removeprefix("chatcmpl-") for (p,) in rows}


def _judgment_lines(run: Path) -> int:
    d = run / "model_judgment" / "judge"
    return sum(p.read_text().count("\n") for p in d.glob("*.jsonl")) if d.exists() else 0


@pytest.mark.slow
def test_faults_kill_and_resume(fake_server, tmp_path):
    srv = fake_server({"faults": {"429": 0.03, "500": 0.03, "malformed": 0.02, "hang": 0.004}, "hang_seconds": 2, "retry_after": 0.02})
    cfg = _config(tmp_path, srv.url)
    run = tmp_path / "run"

    dry = _arena("run", "--config", str(cfg), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"{4 * N_PROMPTS + 2 * len(MODELS) * N_PROMPTS} calls" in dry.stdout.replace("\n", " ")
    assert srv.stats()["hits"] == 0

    res = _arena("answers", "--config", str(cfg))
    assert res.returncode == 0, res.stderr
    for m in [*MODELS, "baseline"]:
        recs = [r for _, r in read_jsonl(run / "model_answer" / f"{m}.jsonl")]
        assert len(recs) == N_PROMPTS == len({r["question_id"] for r in recs})
        assert all(r["conv_metadata"]["token_len"] > 0 and "header_count" in r["conv_metadata"] for r in recs)

    # Judging meets every fault, including verdict-less and conflicting judgments and
    # requests that fail on every attempt.
    srv.configure({**srv.config, "faults": {**srv.config["faults"], "no_verdict": 0.05, "conflict": 0.02, "no_verdict_reask": 0.3, "conflict_reask": 0.3, "persistent": 0.01}})
    srv.reset()
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "judge", "--config", str(cfg)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while _judgment_lines(run) < 600 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, "judging finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    lines_at_kill = _judgment_lines(run)
    assert 0 < lines_at_kill < len(MODELS) * N_PROMPTS
    cached_ok = _ok_server_keys(run / "cache.sqlite")
    hits_at_kill = srv.stats()["hits"]

    res = _arena("judge", "--config", str(cfg))
    # some calls fail on every attempt ("persistent"): recorded as failures, and the run says so with exit 1
    assert res.returncode == 1, res.stderr
    summary = re.fullmatch(r"(\d+) of (\d+) calls failed; rerun with --retry-failed", res.stderr.strip().splitlines()[-1])
    assert summary and 0 < int(summary[1]) < int(summary[2]), res.stderr
    st = srv.stats()
    ok_by_key = st["ok_by_key"]
    # No call whose success was recorded before the kill was made again ...
    assert all(ok_by_key[k] == 1 for k in cached_ok)
    # ... and the only successes seen twice are calls in flight at the kill (never cached).
    repeated = {k for k, n in ok_by_key.items() if n > 1}
    assert not (repeated & cached_ok) and len(repeated) <= 2 * 32

    statuses = Counter()
    for m in MODELS:
        recs = [r for _, r in read_jsonl(run / "model_judgment" / "judge" / f"{m}.jsonl")]
        assert len(recs) == N_PROMPTS == len({r["question_id"] for r in recs}), "duplicated or missing records"
        for r in recs:
            assert len(r["games"]) == 2
            for g in r["games"]:
                if g["score"] is not None:
                    assert g["score"] in VERDICT_LABELS and g.get("status", "ok") in ("ok", "reasked") and "[[" in g["judgment"]
                    statuses["judged"] += 1
                else:
                    assert g["status"] in ("unparsed", "conflict", "failed")
                    statuses[g["status"]] += 1
    assert sum(statuses.values()) == 2 * len(MODELS) * N_PROMPTS
    assert statuses["failed"] > 0 and statuses["unparsed"] > 0 and statuses["conflict"] > 0
    print(f"\nkill at {lines_at_kill} records / {hits_at_kill} hits; resume hits {st['hits'] - hits_at_kill}; "
          f"in-flight repeats {len(repeated)}; games {dict(statuses)}")

    # A third run makes no call at all.
    hits = srv.stats()["hits"]
    res = _arena("judge", "--config", str(cfg))
    assert res.returncode == 0 and srv.stats()["hits"] == hits

    # The leaderboard counts unparsed and failed games instead of dropping them silently.
    out = tmp_path / "lb.json"
    res = _arena("show", "--judgments", str(run / "model_judgment" / "judge"), "--baseline", "baseline", "--output", str(out))
    assert res.returncode == 0, res.stderr
    table = {r["model"]: r for r in json.loads(out.read_text())["leaderboard"]}
    for m in MODELS:
        unparsed = sum(g["score"] is None for _, r in read_jsonl(run / "model_judgment" / "judge" / f"{m}.jsonl") for g in r["games"])
        assert table[m]["n_unparsed"] == unparsed and table[m]["n_battles"] == 2 * N_PROMPTS - unparsed
        assert table[m]["lower"] <= table[m]["score"] <= table[m]["upper"] and table[m]["avg_tokens"] > 0

    # --retry-failed re-asks only the failed games and rewrites records without duplicates.
    srv.configure({"faults": {}})
    hits = srv.stats()["hits"]
    res = _arena("judge", "--config", str(cfg), "--retry-failed")
    assert res.returncode == 0, res.stderr
    assert 0 < srv.stats()["hits"] - hits
    for m in MODELS:
        recs = [r for _, r in read_jsonl(run / "model_judgment" / "judge" / f"{m}.jsonl")]
        assert len(recs) == N_PROMPTS == len({r["question_id"] for r in recs})
        assert not any(g.get("status") == "failed" for r in recs for g in r["games"])


def _small_run(tmp_path: Path, url: str) -> Path:
    cfg = _config(tmp_path, url, n_prompts=5)
    assert _arena("answers", "--config", str(cfg)).returncode == 0
    return cfg


def test_bad_input_errors_name_file_and_line(fake_server, tmp_path):
    srv = fake_server({})
    cfg = _small_run(tmp_path, srv.url)
    run = tmp_path / "run"
    before = (run / "model_answer" / "model-a.jsonl").read_text()

    # an answer to a question that is not in the question file
    extra = run / "model_answer" / "model-b.jsonl"
    saved = extra.read_text()
    extra.write_text(saved + json.dumps({"question_id": "nope", "model_id": "model-b", "choices": [{"index": 0, "turns": [{"content": "x"}]}]}) + "\n")
    res = _arena("judge", "--config", str(cfg))
    assert res.returncode == 2 and "model-b.jsonl:line 6" in res.stderr and "question_id" in res.stderr
    extra.write_text(saved)

    # the baseline has no answers
    base = run / "model_answer" / "baseline.jsonl"
    base.rename(tmp_path / "b.jsonl")
    res = _arena("judge", "--config", str(cfg))
    assert res.returncode == 2 and "baseline.jsonl" in res.stderr and "baseline" in res.stderr
    (tmp_path / "b.jsonl").rename(base)

    # malformed JSONL line, missing field, empty prompt in the question file
    q = tmp_path / "question.jsonl"
    good = q.read_text()
    for bad, want in [('{"question_id": "x", "turns": [{"content": "y"}', "line 6: malformed JSON"),
                      ('{"turns": [{"content": "y"}]}', "line 6: field 'question_id'"),
                      ('{"question_id": "x", "turns": [{"content": ""}]}', "line 6: field 'turns[0].content'")]:
        q.write_text(good + bad + "\n")
        res = _arena("answers", "--config", str(cfg))
        assert res.returncode == 2 and "question.jsonl:" + want in res.stderr.replace("\n", ""), res.stderr
    q.write_text(good)
    # nothing already written was lost
    assert (run / "model_answer" / "model-a.jsonl").read_text() == before

    # the baseline named in `show` is in no judgment
    assert _arena("judge", "--config", str(cfg)).returncode == 0
    res = _arena("show", "--judgments", str(run / "model_judgment" / "judge"), "--baseline", "gpt-4")
    assert res.returncode == 2 and "baseline 'gpt-4'" in res.stderr


def test_show_by_category_on_real_judgments(shared_data, tmp_path):
    """Real gpt-3.5 judgments with categories taken from the question file."""
    import pandas as pd

    qfile = tmp_path / "q.jsonl"
    src = [r for _, r in read_jsonl(shared_data / "prompts" / "arena_hard_v0.1_categories.jsonl")]
    with open(qfile, "w") as fh:
        for r in src:
            fh.write(json.dumps({"question_id": r["uid"], "category": r["category"], "prompt": r["prompt"]}) + "\n")
    out = tmp_path / "lb.csv"
    jdir = shared_data / "arena" / "judgments" / "arena-hard-v0.1" / "gpt-3.5-turbo-0125"
    res = _arena("show", "-j", str(jdir), "--baseline", "gpt-4-0314", "--questions", str(qfile), "--by-category", "--output", str(out), "--bootstrap", "20")
    assert res.returncode == 0, res.stderr
    table = pd.read_csv(out)
    overall = table[(table.category == "(all)") & (table.model == "Nexusflow__Athene-V2-Chat")].iloc[0]
    per_cat = table[(table.category != "(all)") & (table.model == "Nexusflow__Athene-V2-Chat")]
    assert len(per_cat) >= 2
    assert per_cat["n_battles"].sum() == overall["n_battles"]
    res = _arena("show", "-j", str(jdir), "--baseline", "gpt-4-0314", "--questions", str(qfile), "--category", "Coding", "--bootstrap", "0")
    assert res.returncode == 0 and "[Coding]" in res.stdout
