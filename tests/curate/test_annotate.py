"""Annotation: parsing, stages and thresholds, failures, resume after kill -9, validation."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from benchbuilder.annotate import (
    Annotation,
    AnnotationStage,
    Annotator,
    annotator_accuracy,
    apply_thresholds,
    load_annotations,
    majority_vote,
    parse_criteria,
)
from tests.curate.annotation_run import write_annotation_run

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Criteria Satisfied: [1, 2, 4]", [1, 2, 4]),
        ("analysis...\n**Criteria Satisfied:** [7,1, 1]", [1, 7]),
        ("criteria satisfied: []", []),
        ("Criteria Satisfied: [1, 2]\nOn reflection, Criteria Satisfied: [3]", [3]),
        ("Criteria Satisfied: ['1', '5']", [1, 5]),
        ("Criteria Satisfied: [1, 9]", None),
        ("Criteria Satisfied: [specificity]", None),
        ("I think it meets 1, 2 and 4.", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_criteria(text, expected):
    assert parse_criteria(text) == expected


def test_thresholds_prompt_and_cluster():
    ann = {f"p{i}": Annotation(f"p{i}", "s", "ok", list(range(1, s + 1)), s) for i, s in enumerate([6, 5, 1, 2, 6, 7])}
    ann["p6"] = Annotation("p6", "s", "malformed", raw="?")
    clusters = {"p0": 0, "p1": 0, "p2": 0, "p3": 1, "p4": 1, "p5": 2, "p6": 2}
    kept, means, drops = apply_thresholds(ann, clusters, AnnotationStage("s", "e", min_score=5, min_cluster_mean=4.5))
    # cluster 0 mean 4.0 < 4.5 drops p0,p1; cluster 1 mean 4.0 drops p4; p2,p3 low score; p5 kept
    assert means == {0: 4.0, 1: 4.0, 2: 7.0}
    assert kept == ["p5"] and drops == {"low_cluster_mean": 3, "low_score": 2, "malformed": 1}


def test_validation_against_majority():
    assert majority_vote([[1, 2], [1], [1, 3]]) == {1}
    assert majority_vote([[1], [2]]) == set()  # a tie is no majority
    target = {"a": [1, 2], "b": [3], "c": []}
    others = [{"a": [1, 2], "b": [3], "c": [4]}, {"a": [1], "b": [3], "c": [4]}, {"a": [1, 2], "b": [], "c": [4]}]
    res = annotator_accuracy(target, others)
    # majority: a={1,2}, b={3}, c={4}; target misses only criterion 4 on c
    assert res["n_prompts"] == 3 and res["exact_match"] == pytest.approx(2 / 3)
    assert res["per_criterion"]["problem_solving"] == pytest.approx(2 / 3)
    assert res["per_criterion"]["specificity"] == 1.0
    assert res["overall"] == pytest.approx(20 / 21)


def _client(url, **kw):
    from arena.llm import Endpoint, LLMClient, ResponseCache

    return LLMClient({"ann": Endpoint(name="ann", model="fake-annotator", base_url=url, max_retries=kw.pop("max_retries", 5), timeout=5)}, ResponseCache(kw.pop("cache")), backoff_base=0.01, **kw)


def test_annotator_records_failures_and_retries(fake_server, tmp_path):
    rules = [
        {"match": "prompt-malformed", "replies": ["I would say it is quite specific."]},
        {"match": "Criteria Satisfied", "replies": ["Reasoning.\nCriteria Satisfied: [1, 2, 4]", "Criteria Satisfied: [1,2,3,4,5,6,7]", "Criteria Satisfied: []"]},
    ]
    srv = fake_server({"rules": rules})
    stage = AnnotationStage("s1", "ann")
    out = tmp_path / "ann" / "s1.jsonl"
    prompts = {"bad": "prompt-malformed please", "id0": "user prompt number 0"}
    res = Annotator(_client(srv.url, cache=tmp_path / "c.sqlite", max_retries=0), stage, out).run(prompts)
    assert res["bad"].status == "malformed" and res["bad"].raw.startswith("I would say") and res["bad"].score is None
    assert res["id0"].status == "ok"
    # injected 500s with max_retries=0 become recorded failures
    srv.configure({"rules": rules, "faults": {"500": 0.5}, "fault_attempts": 1})
    prompts.update({f"id{i}": f"user prompt number {i}" for i in range(1, 14)})
    res = Annotator(_client(srv.url, cache=tmp_path / "c.sqlite", max_retries=0), stage, out).run(prompts)
    statuses = {sid: a.status for sid, a in res.items()}
    n_failed = sum(s == "failed" for s in statuses.values())
    assert n_failed >= 1 and all("HTTP 500" in a.error for a in res.values() if a.status == "failed")
    assert all(a.score == len(a.criteria) for a in res.values() if a.status == "ok")
    # rerun without retry: nothing is asked again
    hits = srv.stats()["hits"]
    Annotator(_client(srv.url, cache=tmp_path / "c.sqlite", max_retries=0), stage, out).run(prompts)
    assert srv.stats()["hits"] == hits
    # retry: failures re-asked (second attempt passes the fault), the malformed one gets a fresh sample
    srv.configure({"rules": [{"match": "Criteria Satisfied", "reply": "Criteria Satisfied: [2, 6]"}]})
    res2 = Annotator(_client(srv.url, cache=tmp_path / "c.sqlite", max_retries=0, retry_failed=True), stage, out, retry=True).run(prompts)
    assert all(a.status == "ok" for a in res2.values())
    assert res2["bad"].criteria == [2, 6] and res2["bad"].repeat == 1
    lines = out.read_text().splitlines()
    assert len(lines) == len(prompts) and len({json.loads(l)["source_id"] for l in lines}) == len(prompts)


def _write_run(tmp_path: Path, n: int, url: str) -> Path:
    out = tmp_path / "run"
    write_annotation_run(out, n, n_topics=5)
    cfg = {
        "output": str(out), "input": {"paths": ["unused.jsonl"]},
        "endpoints": {
            "ann": {"model": "fake-annotator", "base_url": url, "max_concurrency": 4, "price": {"input": 1.0, "output": 2.0}},
            "ann2": {"model": "fake-annotator-strong", "base_url": url, "max_concurrency": 4, "price": {"input": 10.0, "output": 30.0}},
        },
        "annotation": {"stages": [{"name": "s1", "endpoint": "ann", "min_score": 3, "min_cluster_mean": 2}, {"name": "s2", "endpoint": "ann2", "min_cluster_mean": 4}]},
        "selection": {"n": 10, "seed": 1},
    }
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(cfg))
    return tmp_path / "cfg.yaml"


def test_kill_minus_9_then_resume(fake_server, tmp_path):
    n = 40
    srv = fake_server({"latency": 0.15, "rules": [{"match": "Criteria Satisfied", "replies": ["Criteria Satisfied: [1, 2, 3, 4]", "Criteria Satisfied: [1, 2, 3, 4, 5, 6]", "Criteria Satisfied: [1]"]}]})
    cfg = _write_run(tmp_path, n, srv.url)
    out = tmp_path / "run" / "annotations" / "s1.jsonl"
    cmd = [sys.executable, "-m", "benchbuilder.cli", "annotate", "--config", str(cfg)]
    log = open(tmp_path / "first_run.log", "w")
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=log, start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if out.exists() and len(out.read_text().splitlines()) >= 8:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = len(load_annotations(out))
    assert 8 <= before < n, "the kill should land mid-stage: " + (tmp_path / "first_run.log").read_text()[-2000:]
    time.sleep(0.3)  # let the server finish replies to the dead client, so they are counted now
    hits_at_kill = srv.stats()["hits"]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    st = srv.stats()
    # Only requests still in flight at the kill (at most max_concurrency=4; their replies never
    # reached the client) can be answered twice; nothing that finished is asked again.
    assert st["ok_repeated"] <= 4
    lines = out.read_text().splitlines()
    ids = [json.loads(l)["source_id"] for l in lines]
    assert len(ids) == n and len(set(ids)) == n
    # stage 2 saw only stage-1 survivors, each once
    s2 = [json.loads(l)["source_id"] for l in (out.parent / "s2.jsonl").read_text().splitlines()]
    survivors1 = {sid for sid, a in load_annotations(out).items() if a.score >= 3}
    assert set(s2) == survivors1 and len(s2) == len(set(s2))
    # the rerun asked exactly for the prompts missing from the file, plus stage 2
    assert st["hits"] - hits_at_kill == (n - before) + len(s2)
    import pandas as pd

    usage = pd.read_csv(tmp_path / "run" / "usage.csv").set_index("stage")
    assert usage.loc["annotate:s1", "calls"] == n - before and usage.loc["annotate:s2", "calls"] == len(s2)
    assert usage.loc["annotate:s2", "cost"] > 0
    # a third run pays nothing
    hits = srv.stats()["hits"]
    subprocess.run(cmd, cwd=ROOT, capture_output=True, timeout=300, check=True)
    assert srv.stats()["hits"] == hits
