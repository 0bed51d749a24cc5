"""`arena index run` killed with SIGKILL mid-run, then resumed: per-item records, no repeated
paid call, no duplicated record, failures recorded and redone only with --retry-failed."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import yaml

N_ITEMS = 300
# One repeat: repeats of an item send the same body, which would blur the server's per-body
# success counts that prove no recorded call is repeated.
REPEATS = 1
# Replies are picked per request by the server's hash: right, wrong (-> equality checker) or
# no boxed answer at all; the checker says Yes or No, also by hash.
RULES = [
    {"match": r"Look at the following two expressions", "replies": ["Yes", "No"]},
    {"match": r"Compute item", "replies": ["So \\boxed{7}.", "Thus \\boxed{12}.", "I am not sure."]},
]
FAULTS = {"latency": 0.03, "faults": {"500": 0.05, "persistent": 0.03}, "fault_attempts": 1}


def _setup(tmp_path: Path, url: str) -> Path:
    data = tmp_path / "math.jsonl"
    with open(data, "w") as fh:
        for i in range(N_ITEMS):
            fh.write(json.dumps({"unique_id": f"m{i:03d}", "problem": f"Compute item {i}.", "answer": "7" if i % 2 else str(i + 100)}) + "\n")
    ep = {"base_url": url, "max_concurrency": 6, "max_retries": 1, "timeout": 5, "price": {"input": 1.0, "output": 2.0}}
    cfg = {"endpoints": {"m": {"model": "model-m", **ep}, "judge": {"model": "model-j", **ep}},
           "model": "m", "judge": "judge", "output": "out", "cache": "cache.sqlite",
           "evals": {"math500": {"source": "math.jsonl", "repeats": REPEATS}}}
    path = tmp_path / "index.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _arena(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "arena.cli", "index", *args], capture_output=True, text=True, timeout=300)


def _lines(path: Path) -> list[str]:
    return path.read_text().split("\n")[:-1] if path.exists() else []


def _ok_server_keys(cache: Path) -> set[str]:
    """The fake server's request key of every success in our cache (response id ``chatcmpl-<key>``)."""
    db = sqlite3.connect(cache)
    try:
        rows = db.execute("SELECT payload FROM responses WHERE status = 'ok'").fetchall()
    finally:
        db.close()
    return {json.loads(p)["id"].removeprefix("chatcmpl-") for (p,) in rows}


def test_kill_midway_and_resume(fake_server, tmp_path):
    srv = fake_server({"rules": RULES, **FAULTS})
    cfg = _setup(tmp_path, srv.url)
    results = tmp_path / "out" / "m" / "math500.jsonl"

    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "index", "run", "--config", str(cfg)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while len(_lines(results)) < 60 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = _lines(results)
    assert 60 <= len(before) < N_ITEMS * REPEATS
    # Records written before the kill are complete: answer and grade (checker outcome included).
    for rec in map(json.loads, before):
        assert rec["status"] in ("ok", "unanswered", "api_failure", "checker_failure")
        if rec["status"] == "ok" and rec["correct"] is False:
            assert rec["equality_checker"]["ok"] and rec["equality_checker"]["reply"] == "No"
    # A kill in the middle of a write leaves a torn line; the resumed run must cut it off.
    with open(results, "a") as fh:
        fh.write('{"eval": "math500", "item_id": "m0')
    cached_ok = _ok_server_keys(tmp_path / "cache.sqlite")
    at_kill = srv.stats()
    hits_at_kill, ok_at_kill = at_kill["hits"], at_kill["ok_by_key"]

    res = _arena("run", "--config", str(cfg))
    # Failures are recorded, so the run ends with exit code 1 and a summary line.
    assert res.returncode == 1, res.stderr + res.stdout
    assert "rerun with --retry-failed" in res.stderr
    st = srv.stats()
    ok_by_key = st["ok_by_key"]
    assert cached_ok and all(ok_by_key[k] == ok_at_kill[k] for k in cached_ok), "a call whose success was recorded was made again"
    repeated = {k for k, n in ok_at_kill.items() if ok_by_key[k] > n}
    assert not (repeated & cached_ok) and len(repeated) <= 2 * 6, "only calls in flight at the kill may be repeated"
    after = _lines(results)
    assert after[: len(before)] == before, "records written before the kill changed"
    recs = [json.loads(line) for line in after]
    keys = [(r["item_id"], r["repeat"]) for r in recs]
    assert len(keys) == len(set(keys)) == N_ITEMS * REPEATS
    status = {s: sum(r["status"] == s for r in recs) for s in {r["status"] for r in recs}}
    assert status.get("api_failure", 0) > 0 and all(r["correct"] is None for r in recs if r["status"] == "api_failure")
    assert status.get("unanswered", 0) > 0 and any(r.get("method") == "llm_equality" for r in recs)
    print(f"\nkilled at {len(before)} records / {hits_at_kill} hits; resume made {st['hits'] - hits_at_kill} calls; "
          f"in-flight repeats {len(repeated)}; statuses {status}")

    # Nothing left to do: a third run calls nothing and writes nothing.
    hits = srv.stats()["hits"]
    res = _arena("run", "--config", str(cfg))
    assert res.returncode == 1 and srv.stats()["hits"] == hits and _lines(results) == after

    # --retry-failed re-asks only the failed calls and leaves one record per (item, repeat).
    failed = {k for k, r in zip(keys, recs) if r["status"] in ("api_failure", "checker_failure")}
    srv.configure({"rules": RULES})
    srv.reset()
    res = _arena("run", "--config", str(cfg), "--retry-failed")
    assert res.returncode == 0, res.stderr + res.stdout
    assert 0 < srv.stats()["hits"] <= 2 * len(failed)
    final = [json.loads(line) for line in _lines(results)]
    assert len(final) == len({(r["item_id"], r["repeat"]) for r in final}) == N_ITEMS * REPEATS
    assert not any(r["status"] in ("api_failure", "checker_failure") for r in final)
    unchanged = {(r["item_id"], r["repeat"]): r for r in recs if (r["item_id"], r["repeat"]) not in failed}
    assert all(unchanged[(r["item_id"], r["repeat"])] == r for r in final if (r["item_id"], r["repeat"]) in unchanged)
