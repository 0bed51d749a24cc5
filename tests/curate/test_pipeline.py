"""End to end: `benchbuilder build` on the ShareGPT prompts through the loopback fake server
(scripted annotator, injected faults), then `arena answers` on the resulting question.jsonl;
and annotation with the real embedded SmolLM2 on a small sample."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]

# A scripted annotator: coding/maths prompts are "hard", writing prompts mixed, the rest easy;
# some replies are malformed (no parsable list).
# Rules see system + all messages; USER anchors a pattern to the text after the template's
# last line, i.e. to the user prompt only.
USER = r"Criteria Satisfied: \[\]\s*\n(?![\s\S]*Criteria Satisfied: \[\])[\s\S]*"
ANNOTATOR_RULES = [
    {"match": USER + r"(?i:python|code|function|sql|algorithm|equation|calculate|error)",
     "replies": ["Criteria Satisfied: [1, 2, 3, 4, 6, 7]", "Criteria Satisfied: [1, 2, 3, 4, 5, 6, 7]", "Criteria Satisfied: [1, 2, 4, 6, 7]"]},
    {"match": USER + r"(?i:write|story|poem|essay|blog)",
     "replies": ["Criteria Satisfied: [1, 5, 7]", "Criteria Satisfied: [1, 2, 3, 5, 7]", "The prompt is creative.", "Criteria Satisfied: [1, 2, 3, 4, 5, 7]"]},
    {"match": r"Criteria Satisfied", "replies": ["Criteria Satisfied: [1]", "Criteria Satisfied: [1, 2, 6, 7]", "Criteria Satisfied: [1, 2, 3, 4, 7]", "Criteria Satisfied: [1, 2, 3, 6, 7]", "Criteria Satisfied: []"]},
]


def _cli(*args, cwd=ROOT, timeout=900):
    r = subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    return r


@pytest.mark.slow
def test_build_sharegpt_through_fake_server_then_arena_answers(shared_data, fake_server, tmp_path):
    from arena.io.formats import read_questions

    srv = fake_server({"rules": ANNOTATOR_RULES, "faults": {"429": 0.03, "500": 0.03, "malformed": 0.02}, "retry_after": 0.01})
    out = tmp_path / "run"
    n = 100
    cfg = {
        "output": str(out),
        "input": {"paths": [str(shared_data / "prompts" / "sharegpt_en.jsonl.gz")]},
        "embedding": {"backend": "model2vec"},  # distilled model and embeddings cached under .cache/
        "endpoints": {"annotator": {"model": "fake-gpt-3.5", "base_url": srv.url, "max_concurrency": 64, "max_retries": 10}},
        "annotation": {"stages": [{"name": "screen", "endpoint": "annotator", "min_score": 5, "min_cluster_mean": 3}]},
        "selection": {"n": n, "seed": 0},  # category: each prompt's broad topic category
    }
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(cfg))
    _cli("benchbuilder.cli", "build", "--config", str(tmp_path / "cfg.yaml"))

    ingest = json.loads((out / "ingest.json").read_text())
    assert ingest["read"] == 9126 and ingest["kept"] + sum(ingest["dropped"].values()) == 9126
    topics = json.loads((out / "topics.json").read_text())["stats"]
    assert topics["n_topics"] >= 60 and topics["largest_share"] <= 0.05 and topics["labels_distinct"]
    ann = json.loads((out / "annotation.json").read_text())["stages"][0]
    assert ann["input"] == ingest["kept"] and ann["dropped"].get("malformed", 0) > 0  # malformed replies recorded, not scored
    assert srv.stats()["status"].get("429", 0) > 0  # faults were injected and survived
    qs = read_questions(out / "question.jsonl")
    assert len(qs) == n and len({q.cluster for q in qs}) >= n / 2
    assert all(q.extra["score"] >= 5 for q in qs)
    assert (out / "report" / "mean_score_per_cluster.html").exists()
    # the topic hierarchy: 8-25 broad categories, in question.jsonl and in the report with their topics
    meta = json.loads((out / "topics.json").read_text())
    cats = {k: v for k, v in meta["hierarchy"]["categories"].items() if k != "-1"}
    assert 8 <= len(cats) <= 25
    assert sorted(t for c in cats.values() for t in c["topics"]) == sorted(int(t) for t in meta["labels"] if t != "-1")
    of = meta["hierarchy"]["category_of"]
    for q in qs:
        assert q.category == cats[str(of[str(q.extra["cluster_id"])])]["label"] and q.extra["subcategory"] == q.cluster
    report = (out / "report" / "report.md").read_text()
    section = report.split("## Topic hierarchy")[1].split("\n## ")[0]
    for c in cats.values():
        assert c["label"].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in section
        assert meta["labels"][str(c["topics"][0])].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in section

    # a rerun pays for nothing
    hits = srv.stats()["hits"]
    _cli("benchbuilder.cli", "annotate", "--config", str(tmp_path / "cfg.yaml"))
    assert srv.stats()["hits"] == hits

    # `arena answers` and `judge` take question.jsonl as it is; `show --by-category` ranks per
    # broad category of the curated set
    srv.configure({"faults": {}})
    ep = {"base_url": srv.url, "max_concurrency": 16}
    arena_cfg = {"questions": str(out / "question.jsonl"), "output_dir": str(tmp_path / "arena"),
                 "endpoints": {m: {"model": f"fake-{m}", **ep} for m in ("m1", "base", "judge")}, "answers": {"models": ["m1", "base"]},
                 "judge": {"endpoint": "judge", "baseline": "base", "models": ["m1"]}}
    (tmp_path / "arena.yaml").write_text(yaml.safe_dump(arena_cfg))
    _cli("arena.cli", "answers", "--config", str(tmp_path / "arena.yaml"))
    answers = (tmp_path / "arena" / "model_answer" / "m1.jsonl").read_text().splitlines()
    assert len(answers) == n
    _cli("arena.cli", "judge", "--config", str(tmp_path / "arena.yaml"))
    _cli("arena.cli", "show", "-j", str(tmp_path / "arena" / "model_judgment" / "judge"), "--baseline", "base", "--by-category",
         "--output", str(tmp_path / "lb.csv"), "--bootstrap", "10")
    import pandas as pd

    board = pd.read_csv(tmp_path / "lb.csv")
    assert set(board["category"]) == {"(all)"} | {q.category for q in qs}


# llama.cpp GBNF grammar: constrains the small local model to the answer line we parse.
CRITERIA_GRAMMAR = 'root ::= "Criteria Satisfied: [" list? "]"\nlist ::= [1-7] (", " [1-7])*'


@pytest.mark.smollm
def test_annotation_with_local_smollm2(smollm_server, tmp_path):
    """The real local model through the shared client. Unconstrained, a 135M model rarely writes
    the answer line (recorded as malformed); with a grammar every answer parses. This checks
    the real path (calls, parsing, recording, resume), not annotation quality."""
    from arena.llm import LLMClient, ResponseCache
    from benchbuilder.annotate import AnnotationStage, Annotator, load_annotations

    ep = smollm_server.endpoint("smollm2", params={"temperature": 0.0, "max_tokens": 40, "seed": 0})
    prompts = {
        "p1": "Write a Python function that returns the n-th Fibonacci number using memoization.",
        "p2": "What is the capital of France?",
        "p3": "Design a database schema for a library with books, members and loans, and explain the indexes.",
        "p4": "Write a short poem about the sea.",
    }
    client = LLMClient({"smollm2": ep}, ResponseCache(tmp_path / "c.sqlite"))
    free = Annotator(client, AnnotationStage("free", "smollm2"), tmp_path / "free.jsonl").run(prompts)
    assert set(free) == set(prompts) and all(a.status in {"ok", "malformed"} and a.raw for a in free.values())
    stage = AnnotationStage("constrained", "smollm2", params={"extra_body": {"grammar": CRITERIA_GRAMMAR}})
    out = tmp_path / "constrained.jsonl"
    client = LLMClient({"smollm2": ep}, ResponseCache(tmp_path / "c.sqlite"))
    res = Annotator(client, stage, out).run(prompts)
    assert all(a.status == "ok" for a in res.values()), {k: a.raw for k, a in res.items()}
    for a in res.values():
        assert a.score == len(a.criteria) and all(1 <= c <= 7 for c in a.criteria)
        assert a.raw.startswith("Criteria Satisfied: [")
    assert len(load_annotations(out)) == len(prompts)
    # resumable: a second run asks nothing
    client2 = LLMClient({"smollm2": ep}, ResponseCache(tmp_path / "c.sqlite"))
    Annotator(client2, stage, out).run(prompts)
    assert client2.ledger.calls == 0
