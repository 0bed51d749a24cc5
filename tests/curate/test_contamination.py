"""The contamination gate: nearest-reference similarity without NaN, the lexical leg, drop or
keep, the report (escaped), and a missing reference file as one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import yaml

from benchbuilder.contamination import Reference, flag, nearest_reference, word_jaccard

ROOT = Path(__file__).resolve().parents[2]


def test_zero_vectors_never_match_and_never_give_nan():
    x = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=np.float32)
    ref = np.array([[0, 0, 0], [2, 0, 0]], dtype=np.float32)
    best, idx = nearest_reference(x, ref)
    assert not np.isnan(best).any()
    assert idx.tolist() == [-1, 1, -1] and best.tolist() == [0.0, 1.0, 0.0]
    b5, i5 = nearest_reference(x, ref, k=5)
    assert b5.shape == (3, 2) and i5[1].tolist() == [1, -1]


def test_lexical_leg_catches_an_edited_copy_but_not_a_topic_neighbour():
    refs = [Reference("ref.jsonl", "r1", "Write a python function that extracts all tables from the pages of a pdf file")]
    texts = ["write python function extracts tables from the of a pdf file pages all",  # words dropped and swapped
             "Explain how pdf files store fonts and why text extraction is sometimes hard"]
    assert word_jaccard(texts[0], refs[0].text) >= 0.6 > word_jaccard(texts[1], refs[0].text)
    # cosine 0.87 and 0.8 to the reference: below 0.95, so only the lexical leg can flag
    x = np.array([[0.5, 0.866], [0.6, 0.8]], dtype=np.float32)
    ref_x = np.array([[0, 1]], dtype=np.float32)
    got = flag(["a", "b"], texts, x, refs, ref_x, threshold=0.95)
    assert [f.source_id for f in got] == ["a"] and got[0].reference_id == "r1"
    assert [f.source_id for f in flag(["a", "b"], texts, x, refs, ref_x, threshold=0.95, lexical=None)] == []
    # and the cosine leg alone
    assert [f.source_id for f in flag(["a", "b"], texts, x, refs, ref_x, threshold=0.85, lexical=None)] == ["a"]
    assert [f.source_id for f in flag(["a", "b"], texts, x, refs, ref_x, threshold=0.79, lexical=None)] == ["a", "b"]


def _setup(tmp_path: Path, action: str, refs: list[str]) -> Path:
    ref_rows = [{"question_id": "ah1", "turns": [{"content": "Use ABC notation to write a melody in the style of a folk tune."}]},
                {"question_id": "ah2", "turns": [{"content": "<script>alert(1)</script> Write a haiku about the sea and the moon at night."}]}]
    (tmp_path / "ref.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ref_rows))
    prompts = ["Use ABC notation to write a melody in the style of folk tune", "<script>alert(1)</script> Write a haiku about the sea and moon at night.",
               "How do I change a flat tyre on a bicycle without tools?", "Summarise the causes of the French revolution for a ten year old.",
               "What is a good recipe for vegetable lasagne for six people?"]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"id": f"p{i}", "prompt": p}) + "\n" for i, p in enumerate(prompts)))
    cfg = {"output": str(tmp_path / "out"), "input": {"paths": [str(tmp_path / "in.jsonl")]},
           "embedding": {"cache": str(tmp_path / "emb.sqlite")},
           "contamination": {"references": refs, "action": action}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    return tmp_path / "c.yaml"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchbuilder.cli", *args], capture_output=True, text=True, timeout=300, cwd=ROOT)


def test_gate_drops_flagged_prompts_and_reports_them(tmp_path):
    cfg = _setup(tmp_path, "drop", [str(tmp_path / "ref.jsonl")])
    r = _cli("ingest", "-c", str(cfg))
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out"
    flags = [json.loads(l) for l in (out / "contamination.jsonl").read_text().splitlines()]
    assert sorted(f["source_id"] for f in flags) == ["p0", "p1"]
    assert {f["reference_id"] for f in flags} == {"ah1", "ah2"}
    kept = [json.loads(l)["source_id"] for l in (out / "prompts.jsonl").read_text().splitlines()]
    assert kept == ["p2", "p3", "p4"]
    drops = [json.loads(l) for l in (out / "drops.jsonl").read_text().splitlines()]
    assert sorted(d["source_id"] for d in drops if d["reason"] == "contaminated") == ["p0", "p1"]
    assert json.loads((out / "contamination.json").read_text())["flagged"] == 2
    from benchbuilder.config import load_config
    from benchbuilder.pipeline import Pipeline

    from benchbuilder.cluster import save_assignments

    p = Pipeline(load_config(cfg))
    save_assignments(out / "clusters.jsonl", kept, np.zeros(3, dtype=int), {0: "all"}, {0: ["x"]})
    md = p.report()["markdown"].read_text()
    assert "Contamination gate" in md and "flagged: 2 of 5 prompts, rule: cosine ≥ " in md
    assert "<script>" not in md and "&lt;script&gt;" in md


def test_gate_keep_keeps_and_missing_reference_is_one_line(tmp_path):
    cfg = _setup(tmp_path, "keep", [str(tmp_path / "ref.jsonl")])
    assert _cli("ingest", "-c", str(cfg)).returncode == 0
    kept = [json.loads(l)["source_id"] for l in (tmp_path / "out" / "prompts.jsonl").read_text().splitlines()]
    assert kept == ["p0", "p1", "p2", "p3", "p4"]
    assert len((tmp_path / "out" / "contamination.jsonl").read_text().splitlines()) == 2
    cfg = _setup(tmp_path, "drop", [str(tmp_path / "nope.jsonl")])
    r = _cli("ingest", "-c", str(cfg))
    assert r.returncode == 2
    assert r.stderr.strip() == f"error: {tmp_path / 'nope.jsonl'}: field 'contamination.references': reference file not found"
