"""Index trust boundaries: dataset files never run code, hub scripts stay off by default,
missing local sources fail fast, SymPy cannot hang the run, unparseable grader replies are
re-asked by --retry-failed, and failed runs end with exit code 1."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import pickle
import time
import zlib
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from arena.index.cli import app
from arena.index.graders.math import MathScriptGrader


class _Boom:
    """Unpickling this calls ``os.system`` (the classic crafted-pickle payload)."""

    def __init__(self, cmd: str):
        self.cmd = cmd

    def __reduce__(self):
        return (os.system, (self.cmd,))


def _config(tmp_path: Path, evals: dict, url: str = "http://127.0.0.1:9/v1", judge: bool = False) -> Path:
    eps = {"m": {"model": "model-m", "base_url": url, "max_retries": 1, "timeout": 5}}
    cfg = {"endpoints": eps, "model": "m", "output": str(tmp_path / "out"), "cache": str(tmp_path / "cache.sqlite"), "evals": evals}
    if judge:
        eps["j"] = {"model": "model-j", "base_url": url, "max_retries": 1, "timeout": 5}
        cfg["judge"] = "j"
    path = tmp_path / "index.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _one_line_error(res) -> str:
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1, res.output
    return lines[0]


@pytest.mark.parametrize("dry_run", [True, False])
def test_crafted_pickle_in_livecodebench_row_runs_nothing(tmp_path, dry_run):
    marker = tmp_path / "pwned"
    payload = base64.b64encode(zlib.compress(pickle.dumps(_Boom(f"touch {marker}")))).decode()
    row = {"question_id": "q1", "question_content": "x", "public_test_cases": json.dumps([{"input": "1", "output": "1", "testtype": "stdin"}]),
           "private_test_cases": payload, "metadata": "{}"}
    data = tmp_path / "lcb.jsonl"
    data.write_text(json.dumps(row) + "\n")
    cfg = _config(tmp_path, {"livecodebench": {"source": str(data)}})
    res = CliRunner().invoke(app, ["run", "--config", str(cfg), *(["--dry-run"] if dry_run else [])])
    assert not marker.exists()
    assert res.exit_code == 2, res.output
    assert _one_line_error(res) == (f"error: {data}:line 1: field 'private_test_cases': unsafe or invalid pickle "
                                    "(refused global posix.system)")
    if dry_run:
        assert not (tmp_path / "cache.sqlite").exists()  # failed before anything was written


def test_published_private_tests_still_decode(tmp_path):
    from arena.index.tasks.livecodebench import decode_lcb_tests

    tests = [{"input": "3\n", "output": "6\n", "testtype": "stdin"}]
    raw = base64.b64encode(zlib.compress(pickle.dumps(json.dumps(tests)))).decode()
    assert decode_lcb_tests(raw) == tests


def test_hub_scripts_off_unless_asked(tmp_path, monkeypatch):
    """``datasets`` is the edge here (no hub offline), so its entry point records its kwargs."""
    import datasets

    from arena.index.datasets import load_eval

    seen: list[dict] = []

    def fake_load_dataset(**kw):
        seen.append(kw)
        return [{"question_id": "q", "question_content": "x", "public_test_cases": "[]",
                 "private_test_cases": json.dumps([{"input": "1", "output": "1", "testtype": "stdin"}])}]

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    load_eval("livecodebench", "livecodebench/code_generation_lite")
    load_eval("livecodebench", "livecodebench/code_generation_lite", trust_remote_code=True)
    assert "trust_remote_code" not in seen[0] and "version_tag" not in seen[0]
    assert seen[1]["trust_remote_code"] is True and seen[1]["version_tag"] == "release_v5"


def test_missing_local_source_is_one_line_fast(tmp_path):
    cfg = _config(tmp_path, {"math500": {"source": "data/missing_math.jsonl"}})
    t0 = time.monotonic()
    res = CliRunner().invoke(app, ["run", "--config", str(cfg), "--dry-run"])
    assert time.monotonic() - t0 < 10  # no hub download attempt
    assert res.exit_code == 2
    assert _one_line_error(res) == (f"error: {cfg}: field 'evals.math500.source': no such file or directory: "
                                    f"{tmp_path / 'data/missing_math.jsonl'}")


def test_hostile_math_answer_is_time_limited_and_off_the_loop():
    grader = MathScriptGrader(timeout=2.0)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.05)
            ticks += 1

    async def go():
        t = asyncio.create_task(ticker())
        t0 = time.monotonic()
        v = await grader.grade(r"So \boxed{9^{9^{9^{9}}}}.", "3")
        elapsed = time.monotonic() - t0
        ok = await grader.grade(r"\boxed{\frac{1}{2}}", "0.5")
        t.cancel()
        return v, elapsed, ok

    try:
        v, elapsed, ok = asyncio.run(go())
    finally:
        grader.close()
    assert v.method == "timeout" and v.correct is False and v.extracted == "9^{9^{9^{9}}}"
    assert elapsed < 8  # the in-process grader took 10 s on this answer
    assert ticks >= 20  # the event loop kept running while SymPy worked
    assert ok.correct is True  # the pool replaced the killed worker


def test_hostile_math_answer_without_checker_is_a_grading_failure(tmp_path, fake_server):
    server = fake_server({"rules": [{"match": "Compute", "reply": r"\boxed{9^{9^{9^{9}}}}"}]})
    data = tmp_path / "m.jsonl"
    data.write_text(json.dumps({"unique_id": "a", "problem": "Compute it.", "answer": "3"}) + "\n")
    cfg = _config(tmp_path, {"math500": {"source": str(data), "repeats": 1}}, url=server.url)
    raw = yaml.safe_load(cfg.read_text())
    raw["math_timeout"] = 2
    cfg.write_text(yaml.safe_dump(raw))
    res = CliRunner().invoke(app, ["run", "--config", str(cfg)])
    assert res.exit_code == 1, res.output
    rec = json.loads((tmp_path / "out" / "m" / "math500.jsonl").read_text())
    assert rec["status"] == "grading_failure" and rec["correct"] is None and rec["method"] == "timeout"


@pytest.mark.parametrize("kind", ["hle", "equality"])
def test_unparseable_grader_reply_is_reasked_with_retry_failed(tmp_path, fake_server, kind):
    if kind == "hle":
        rules = [{"match": r"Judge whether the following \[response\]", "reply": "I refuse to grade this."},
                 {"match": "smallest prime", "reply": "Exact Answer: 101\nConfidence: 80%"}]
        data = tmp_path / "hle.jsonl"
        data.write_text(json.dumps({"id": "h1", "question": "What is the smallest prime above 100?", "answer": "101",
                                    "answer_type": "exactMatch"}) + "\n")
        status = "judge_failure"
    else:
        rules = [{"match": "Look at the following two expressions", "reply": "Maybe, it depends."},
                 {"match": "Compute", "reply": r"\boxed{7}"}]
        data = tmp_path / "math500.jsonl"
        data.write_text(json.dumps({"unique_id": "a", "problem": "Compute it.", "answer": "8"}) + "\n")
        status = "checker_failure"
    kind_eval = "hle" if kind == "hle" else "math500"
    server = fake_server({"rules": rules})
    cfg = _config(tmp_path, {kind_eval: {"source": str(data), "repeats": 1}}, url=server.url, judge=True)
    runner = CliRunner()
    res = runner.invoke(app, ["run", "--config", str(cfg)])
    assert res.exit_code == 1, res.output
    assert f"failed: 1 items ({status}: 1), 0 calls" in " ".join(res.output.split())
    path = tmp_path / "out" / "m" / f"{kind_eval}.jsonl"
    assert json.loads(path.read_text())["status"] == status
    hits = server.stats()["hits"]
    # A plain rerun serves everything from records and cache: nothing is asked again.
    assert runner.invoke(app, ["run", "--config", str(cfg)]).exit_code == 1
    assert server.stats()["hits"] == hits
    # --retry-failed re-asks the rejected grader reply (the model's own answer stays cached).
    server.configure({"rules": [{**rules[0], "reply": "Yes" if kind == "equality" else json.dumps(
        {"extracted_final_answer": "101", "reasoning": "same", "correct": "yes", "confidence": 80})}, rules[1]]})
    res = runner.invoke(app, ["run", "--config", str(cfg), "--retry-failed"])
    assert res.exit_code == 0, res.output
    assert server.stats()["hits"] == hits + 1
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(recs) == 1 and recs[0]["status"] == "ok" and recs[0]["correct"] is True
