"""Provenance on every record and one record per game, through the CLI against the loopback
fake server: a kill -9 during `arena judge --retry-failed`, regenerated answers, a changed
judge, old records without provenance, and the run log."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from arena.io.formats import Game, Judgment, latest_judgments, read_judgments
from arena.io.jsonl import read_jsonl, write_jsonl
from arena.provenance import endpoint_identity, stale_reasons

KEY = "sk-test-provenance-7f3a9c2e51"


# --------------------------------------------------------------------------- units
def _prov(**over):
    p = {"question_sha256": "q", "answers": {"model": {"answer_id": "a", "sha256": "h1"}, "baseline": {"answer_id": "b", "sha256": "h2"}},
         "judge": {"model": "j", "base_url": "http://127.0.0.1:4001/v1", "params": {"temperature": 0}}, "template_version": "t", "reask_version": "r"}
    p.update(over)
    return p


def test_stale_reasons():
    cur = _prov()
    assert stale_reasons(_prov(), cur) == []
    assert stale_reasons(None, cur) == []  # unknown provenance is kept, never silently re-paid
    assert stale_reasons(_prov(answers={"model": {"sha256": "other"}, "baseline": {"sha256": "h2"}}), cur) == ["answers changed"]
    assert stale_reasons(_prov(judge={"model": "j", "base_url": "http://127.0.0.1:4001/v1", "params": {"temperature": 0.7}}), cur) == ["judge changed"]
    assert stale_reasons(_prov(judge={"model": "j2", "base_url": "http://127.0.0.1:4001/v1", "params": {"temperature": 0}}), cur) == ["judge changed"]
    assert stale_reasons(_prov(template_version="t0", question_sha256="q0"), cur) == ["question changed", "template changed"]
    # a loopback server's port is per run (the embedded model picks a free one): not identity
    assert endpoint_identity({"model": "j", "base_url": "http://127.0.0.1:4001/v1/"}) == endpoint_identity({"model": "j", "base_url": "http://127.0.0.1:5999/v1"})
    assert endpoint_identity({"model": "j", "base_url": "https://a.example/v1"}) != endpoint_identity({"model": "j", "base_url": "https://b.example/v1"})


def _j(qid, score, tstamp=None, judge="jj"):
    return Judgment(qid, "m", judge, [Game("p", "t", score), Game("p", "t", score)], baseline="base", tstamp=tstamp)


def test_latest_judgments_newest_wins():
    js = [_j("q1", "A>B"), _j("q2", "A>B"), _j("q1", "B>A"), _j("q1", "A=B", judge="other")]
    out = latest_judgments(js)
    assert [(j.question_id, j.judge, j.games[0].score) for j in out] == [("q1", "jj", "B>A"), ("q2", "jj", "A>B"), ("q1", "other", "A=B")]
    # with timestamps on both, the later tstamp wins even when it comes first in the file
    out = latest_judgments([_j("q1", "B>A", tstamp=20.0), _j("q1", "A>B", tstamp=10.0)])
    assert [j.games[0].score for j in out] == ["B>A"]


def test_readers_count_each_game_once(tmp_path):
    from arena.show import ShowOptions, compute_leaderboard, load_judgments

    d = tmp_path / "judge"
    d.mkdir()
    recs = [_j(f"q{i}", "B>A").to_v01() for i in range(10)]
    recs += [_j(f"q{i}", "A>B").to_v01() for i in range(6)]  # 6 prompts judged again (newer, worse)
    write_jsonl(d / "m.jsonl", recs)
    assert len(read_judgments(d)) == 10
    js = load_judgments([d, d])  # the same directory twice still counts once
    lb = compute_leaderboard(js, ShowOptions("base", n_bootstrap=0))
    row = lb.table.set_index("model").loc["m"]
    assert row["n_battles"] == 20
    # 4 prompts won (B>A: the model is B in game 1 ... ) and 6 lost, both games alike
    from arena.stats.ratings import battles_from_judgments

    b = battles_from_judgments(js, "base")
    assert len(b) == 20 and b.groupby("question_id").size().eq(2).all()


# --------------------------------------------------------------------------- CLI helpers
def _arena(*args: str, env=None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "arena.cli", *args], capture_output=True, text=True, timeout=600, env=env, **kw)


def _env() -> dict:
    return {**os.environ, "FAKE_PROVIDER_KEY": KEY}


def _write_config(tmp_path: Path, url: str, n: int, *, judge_concurrency: int = 32, answer_params=None, judge_params=None) -> Path:
    qfile = tmp_path / "question.jsonl"
    if not qfile.exists():
        write_jsonl(qfile, [{"question_id": f"q{i:04d}", "category": "synthetic", "turns": [{"content": f"Explain topic number {i}, with an example."}]} for i in range(n)])
    ep = {"base_url": url, "max_concurrency": 32, "timeout": 2.0, "max_retries": 3, "api_key_env": "FAKE_PROVIDER_KEY", "price": {"input": 1.0, "output": 4.0}}
    cfg = {
        "name": "provenance-test",
        "questions": str(qfile),
        "output_dir": str(tmp_path / "run"),
        "backoff_base": 0.01,
        "backoff_max": 0.05,
        "endpoints": {"model-a": {"model": "model-a", **ep}, "baseline": {"model": "baseline", **ep},
                      "judge": {"model": "judge-model", **ep, "max_concurrency": judge_concurrency, "params": judge_params or {"temperature": 0}}},
        "answers": {"models": ["model-a", "baseline"], "params": answer_params or {"max_tokens": 256}},
        "judge": {"endpoint": "judge", "baseline": "baseline", "models": ["model-a"]},
        "show": {"bootstrap": 20, "seed": 3},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _records(path: Path) -> list[dict]:
    return [r for _, r in read_jsonl(path)]


def _show(tmp_path: Path) -> dict:
    out = tmp_path / "lb.json"
    res = _arena("show", "--judgments", str(tmp_path / "run" / "model_judgment" / "judge"), "--baseline", "baseline", "--output", str(out), "--bootstrap", "0")
    assert res.returncode == 0, res.stderr
    return {r["model"]: r for r in json.loads(out.read_text())["leaderboard"]}


def _ok(res: subprocess.CompletedProcess) -> str:
    assert res.returncode == 0, (res.stdout[-2000:], res.stderr[-2000:])
    return res.stdout


def _finished_with_failures(res: subprocess.CompletedProcess) -> str:
    # A run whose results hold failed calls ends with exit 1 and the summary line (README).
    assert res.returncode == 1, (res.stdout[-2000:], res.stderr[-2000:])
    assert "calls failed; rerun with --retry-failed" in res.stderr
    return res.stdout


# --------------------------------------------------------------------------- acceptance
@pytest.mark.slow
def test_kill_during_retry_failed_leaves_one_record_per_game(fake_server, tmp_path):
    n = 200
    srv = fake_server({})
    cfg = _write_config(tmp_path, srv.url, n, judge_concurrency=4)
    jfile = tmp_path / "run" / "model_judgment" / "judge" / "model-a.jsonl"
    _ok(_arena("answers", "--config", str(cfg), env=_env()))

    # 1. failures injected first: about a third of the judge calls fail on every attempt
    srv.configure({"faults": {"persistent": 0.3}})
    _finished_with_failures(_arena("judge", "--config", str(cfg), env=_env()))
    first = _records(jfile)
    failed_prompts = sum(any(g.get("status") == "failed" for g in r["games"]) for r in first)
    assert len(first) == n and failed_prompts > 20

    # 2. --retry-failed, slowed down, killed with SIGKILL after it has appended some records
    srv.configure({"faults": {}, "latency": 0.15})
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "judge", "--config", str(cfg), "--retry-failed"], env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while jfile.read_bytes().count(b"\n") < n + failed_prompts // 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert proc.poll() is None, "the retry finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    lines_at_kill = jfile.read_bytes().count(b"\n")
    dup = lines_at_kill - n
    assert 0 < dup < failed_prompts  # the double-counting state of the bug report

    # Readers already count each game once, before any repair of the file.
    table = _show(tmp_path)["model-a"]
    assert table["n_battles"] + table["n_unparsed"] == 2 * n

    # 3. the next run (a plain one) compacts the file: one record per prompt, the newest; it
    #    makes no call, so no call of its own failed (exit 0)
    out = _ok(_arena("judge", "--config", str(cfg), env=_env()))
    assert f"model-a: removed {dup} duplicate judgment records" in out
    recs = _records(jfile)
    assert len(recs) == n == len({r["question_id"] for r in recs})
    table = _show(tmp_path)["model-a"]
    assert table["n_battles"] + table["n_unparsed"] == 2 * n

    # 4. --retry-failed finishes the failed prompts; every game now has a verdict
    _ok(_arena("judge", "--config", str(cfg), "--retry-failed", env=_env()))
    recs = _records(jfile)
    assert len(recs) == n == len({r["question_id"] for r in recs})
    assert not any(g.get("status") == "failed" for r in recs for g in r["games"])
    table = _show(tmp_path)["model-a"]
    assert table["n_battles"] == 2 * n and table["n_unparsed"] == 0
    print(f"\nfailed prompts {failed_prompts}; lines at kill {lines_at_kill} ({dup} duplicates); n_battles after {table['n_battles']}")


@pytest.mark.slow
def test_regenerated_answers_are_rejudged(fake_server, tmp_path):
    n = 200
    srv = fake_server({})
    cfg = _write_config(tmp_path, srv.url, n)
    run = tmp_path / "run"
    _ok(_arena("answers", "--config", str(cfg), env=_env()))
    _ok(_arena("judge", "--config", str(cfg), env=_env()))
    afile = run / "model_answer" / "model-a.jsonl"
    jfile = run / "model_judgment" / "judge" / "model-a.jsonl"
    old = {r["question_id"]: r["choices"][0]["turns"][0]["content"] for r in _records(afile)}

    # Answers record their endpoint and params, never the key.
    a0 = _records(afile)[0]["provenance"]
    assert a0["endpoint"] == {"name": "model-a", "model": "model-a", "base_url": srv.url, "params": {"max_tokens": 256}}
    j0 = _records(jfile)[0]["provenance"]
    assert set(j0) >= {"answers", "judge", "template_version", "question_sha256"}
    assert j0["judge"]["params"] == {"temperature": 0} and j0["judge"]["base_url"] == srv.url

    # Regenerate model-a's answers with other params.
    afile.unlink()
    cfg = _write_config(tmp_path, srv.url, n, answer_params={"max_tokens": 300})
    _ok(_arena("answers", "--config", str(cfg), env=_env()))
    new = {r["question_id"]: r["choices"][0]["turns"][0]["content"] for r in _records(afile)}
    changed = sum(old[q] != new[q] for q in old)  # the fake server may repeat a text by chance
    assert changed > n // 2

    hits = srv.stats()["hits"]
    out = _ok(_arena("judge", "--config", str(cfg), env=_env()))
    m = re.search(r"model-a: re-judging (\d+) stale judgments \(answers changed\)", out)
    assert m and int(m.group(1)) == changed, out
    # Two games per stale judgment, except where the new answer equals the baseline's word for
    # word: then both games are one request, made once.
    base = {r["question_id"]: r["choices"][0]["turns"][0]["content"] for r in _records(run / "model_answer" / "baseline.jsonl")}
    expected_calls = sum(1 if new[q] == base[q] else 2 for q in old if old[q] != new[q])
    assert srv.stats()["hits"] - hits == expected_calls
    assert f"{changed} judged now, {n - changed} already done" in out
    recs = _records(jfile)
    assert len(recs) == n
    from arena.provenance import content_hash

    assert all(r["provenance"]["answers"]["model"]["sha256"] == content_hash(new[r["question_id"]]) for r in recs)

    # A rerun makes no call; a changed judge re-judges everything.
    hits = srv.stats()["hits"]
    out = _ok(_arena("judge", "--config", str(cfg), env=_env()))
    assert srv.stats()["hits"] == hits and "stale" not in out
    cfg = _write_config(tmp_path, srv.url, n, answer_params={"max_tokens": 300}, judge_params={"temperature": 0.5})
    out = _ok(_arena("judge", "--config", str(cfg), env=_env()))
    assert f"model-a: re-judging {n} stale judgments (judge changed)" in out
    assert srv.stats()["hits"] - hits == sum(1 if new[q] == base[q] else 2 for q in new)
    print(f"\nregenerated answers: {changed} of {n} changed; re-judged {changed} with {expected_calls} judge calls")

    # The run log: one line per run, no key anywhere in the outputs.
    log = _records(run / "run_log.jsonl")
    assert [r["command"] for r in log] == ["answers", "judge", "answers", "judge", "judge", "judge"]
    last = log[-1]
    assert last["status"] == "ok" and last["config_sha256"] and last["package_version"] and last["seeds"] == {"show.seed": 3}
    assert last["endpoints"]["judge"]["params"] == {"temperature": 0.5} and "api_key_env" not in last["endpoints"]["judge"]
    assert set(last["templates"]) == {"judge.system_prompt", "judge.template", "judge.reask_prompt"}
    assert sum(u["calls"] for u in last["usage"]) == sum(1 if new[q] == base[q] else 2 for q in new) and last["cost"] > 0 and last["seconds"] >= 0
    for p in run.rglob("*"):
        if p.is_file():
            assert KEY.encode() not in p.read_bytes(), p


def test_records_without_provenance_are_kept(fake_server, tmp_path):
    n = 20
    srv = fake_server({})
    cfg = _write_config(tmp_path, srv.url, n)
    _ok(_arena("answers", "--config", str(cfg), env=_env()))
    _ok(_arena("judge", "--config", str(cfg), env=_env()))
    jfile = tmp_path / "run" / "model_judgment" / "judge" / "model-a.jsonl"
    recs = _records(jfile)
    write_jsonl(jfile, [{k: v for k, v in r.items() if k not in ("provenance", "tstamp")} for r in recs])  # an arena-hard file
    hits = srv.stats()["hits"]
    cfg = _write_config(tmp_path, srv.url, n, judge_params={"temperature": 0.9})
    out = _ok(_arena("judge", "--config", str(cfg), env=_env()))
    assert srv.stats()["hits"] == hits
    assert f"model-a: kept {n} judgments of unknown provenance" in out
    assert _show(tmp_path)["model-a"]["n_battles"] + _show(tmp_path)["model-a"]["n_unparsed"] == 2 * n


def test_failed_run_is_logged(fake_server, tmp_path):
    srv = fake_server({})
    cfg = _write_config(tmp_path, srv.url, 5)
    res = _arena("answers", "--config", str(cfg), env={k: v for k, v in os.environ.items() if k != "FAKE_PROVIDER_KEY"})
    assert res.returncode == 2 and "FAKE_PROVIDER_KEY" in res.stderr
    log = _records(tmp_path / "run" / "run_log.jsonl")
    assert [(r["command"], r["status"]) for r in log] == [("answers", "failed")]


def test_answers_made_with_other_settings_are_reported_not_redone(fake_server, tmp_path):
    n = 6
    srv = fake_server({})
    cfg = _write_config(tmp_path, srv.url, n)
    _ok(_arena("answers", "--config", str(cfg), env=_env()))
    hits = srv.stats()["hits"]
    out = _ok(_arena("answers", "--config", str(cfg), env=_env()))
    assert "other settings" not in out and srv.stats()["hits"] == hits
    cfg = _write_config(tmp_path, srv.url, n, answer_params={"max_tokens": 99})
    out = _ok(_arena("answers", "--config", str(cfg), env=_env()))
    assert f"model-a: {n} kept answers were made with other settings" in out.replace("\n", " ")
    assert f"baseline: {n} kept answers were made with other settings" in out.replace("\n", " ")
    assert srv.stats()["hits"] == hits  # nothing is paid for behind the user's back
