"""End to end: every eval through the loopback server with scripted answers, then the index table."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from arena.index.cli import app

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data" / "index"

JUDGE_YES = json.dumps({"extracted_final_answer": "101", "reasoning": "same number", "correct": "yes", "confidence": 80})
JUDGE_NO = json.dumps({"extracted_final_answer": "7", "reasoning": "differs", "correct": "no", "confidence": 30})
RULES = [
    {"match": r"Look at the following two expressions", "reply": "No"},
    {"match": r"Judge whether the following \[response\].*smallest prime", "reply": JUDGE_YES},
    {"match": r"Judge whether the following \[response\]", "reply": JUDGE_NO},
    {"match": r"smallest prime", "reply": "Explanation: 101 is prime.\nExact Answer: 101\nConfidence: 80%"},
    {"match": r"Your response should be in the following format", "reply": "Explanation: guess\nAnswer: C\nConfidence: 30%"},
    {"match": r"NEXT STEP - PROBLEM STEP AND FUNCTION HEADER:\nThis part will describe[^\n]*\n\n[^\n]*Euclidean norm",
     "reply": "```python\ndef norm(x):\n    return np.sqrt(np.sum(square(x)))\n```"},
    {"match": r"NEXT STEP - PROBLEM STEP AND FUNCTION HEADER:\nThis part will describe[^\n]*\n\n[^\n]*elementwise square",
     "reply": "```python\ndef square(x):\n    return x * x\n```"},
    {"match": r"Read an integer n from standard input", "reply": "```python\nn = int(input())\nprint(2 * n)\n```"},
    {"match": r"Given integers a and b", "reply": "```python\nclass Solution:\n    def addTwo(self, a: int, b: int) -> int:\n        return a - b\n```"},
    {"match": r"Every morning Aya", "reply": "So the walk takes \\boxed{204} minutes."},
    {"match": r"Put your answer inside", "reply": "I think it is \\boxed{7}."},
    {"match": r"Solve this math problem|Löse dieses|Resuelve este", "reply": "Step by step.\nAnswer: 18\nAntwort: 18\nRespuesta: 18"},
    {"match": r"multiple choice question", "reply": "Let me think.\n\nAnswer: B"},
]


def _config(tmp_path: Path, url: str, shared: Path) -> Path:
    idx = shared / "index"
    cfg = {
        "endpoints": {
            "scripted": {"model": "scripted-model", "base_url": url, "max_retries": 2, "price": {"input": 1.0, "output": 2.0}},
            "judge": {"model": "scripted-judge", "base_url": url, "max_retries": 2},
        },
        "model": "scripted", "judge": "judge", "output": str(tmp_path / "out"), "cache": str(tmp_path / "cache.sqlite"),
        "evals": {
            "mmlu_pro": {"source": str(idx / "mmlu_pro" / "llama31_8b_outputs.jsonl.gz"), "limit": 4},
            "hle": {"source": str(DATA / "hle_sample.jsonl")},
            "gpqa_diamond": {"source": str(DATA / "gpqa_diamond_sample.csv"), "repeats": 3},
            "math500": {"source": str(idx / "math500.jsonl"), "limit": 3, "repeats": 2},
            "aime2024": {"source": str(idx / "aime24.jsonl"), "limit": 2, "repeats": 2},
            "scicode": {"source": str(DATA / "scicode_sample.jsonl"), "targets": str(DATA / "scicode_sample_targets.json"), "repeats": 1},
            "livecodebench": {"source": str(DATA / "livecodebench_sample.jsonl"), "repeats": 1},
            "mmmlu": {"source": str(DATA / "mmmlu_es_sample.csv"), "languages": ["es"]},
            "mgsm": {"source": str(idx / "mgsm" / "mgsm_{lang}.tsv"), "languages": ["en", "de", "es"], "limit": 2},
        },
    }
    path = tmp_path / "index.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _records(tmp_path: Path, name: str) -> list[dict]:
    path = tmp_path / "out" / "scripted" / f"{name}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def test_full_suite_through_loopback_server(tmp_path, fake_server, shared_data):
    server = fake_server({"rules": RULES})
    cfg = _config(tmp_path, server.url, shared_data)
    runner = CliRunner()
    res = runner.invoke(app, ["run", "--config", str(cfg)])
    assert res.exit_code == 0, res.output
    for name in ("mmlu_pro", "hle", "gpqa_diamond", "math500", "aime2024", "scicode", "livecodebench", "mmmlu", "mgsm"):
        assert _records(tmp_path, name), name
    # HLE: the image row is dropped; "101" judged correct, the rest wrong; confidences kept.
    hle = {r["item_id"]: r for r in _records(tmp_path, "hle")}
    assert set(hle) == {"hle-sample-001", "hle-sample-002", "hle-sample-004"}
    assert hle["hle-sample-001"]["correct"] is True and hle["hle-sample-001"]["confidence"] == 80
    assert hle["hle-sample-004"]["correct"] is False
    # AIME item 60 (answer 204) is right; the other is wrong after the equality checker says No.
    aime = _records(tmp_path, "aime2024")
    assert {(r["item_id"], r["correct"]) for r in aime} == {("60", True), ("61", False)}
    assert any(r.get("equality_checker") for r in aime)
    # Code: the stdin solution passes public + private tests; the functional one is wrong.
    lcb = {r["item_id"]: r for r in _records(tmp_path, "livecodebench")}
    assert lcb["sample_stdin_1"]["correct"] is True and lcb["sample_func_1"]["correct"] is False
    sci = {r["item_id"]: r for r in _records(tmp_path, "scicode")}
    assert sci["S1.1"]["correct"] is True and sci["S1.2"]["correct"] is True
    # GPQA: options are shuffled per repeat, so the scripted "B" is right in some repeats only.
    gpqa = _records(tmp_path, "gpqa_diamond")
    assert len(gpqa) == 9 and len({r["gold"] for r in gpqa}) > 1
    assert all(r["correct"] == (r["gold"] == "B") for r in gpqa)
    # MGSM: three languages, "18" right only where the gold is 18.
    mgsm = _records(tmp_path, "mgsm")
    assert {r["language"] for r in mgsm} == {"en", "de", "es"}
    assert all(r["correct"] == (r["gold"] == "18") for r in mgsm)
    assert "Intelligence Index" in res.output and "Multilingual Index" in res.output
    assert "HLE RMS calibration error" in res.output

    # Rerun: nothing new is asked, no duplicate records.
    hits = server.stats()["hits"]
    res2 = runner.invoke(app, ["run", "--config", str(cfg)])
    assert res2.exit_code == 0, res2.output
    assert server.stats()["hits"] == hits
    assert len(_records(tmp_path, "gpqa_diamond")) == 9

    # show recomputes from records without any server.
    res3 = runner.invoke(app, ["show", "--output", str(tmp_path / "out"), "--model", "scripted"])
    assert res3.exit_code == 0 and "Coding Index" in res3.output


def test_api_failures_are_reported_not_scored(tmp_path, fake_server, shared_data):
    server = fake_server({"rules": RULES, "faults": {"500": 1.0}, "fault_attempts": 99})
    cfg = _config(tmp_path, server.url, shared_data)
    data = yaml.safe_load(cfg.read_text())
    data["evals"] = {"gpqa_diamond": data["evals"]["gpqa_diamond"]}
    data["endpoints"]["scripted"]["max_retries"] = 1
    cfg.write_text(yaml.safe_dump(data))
    res = CliRunner().invoke(app, ["run", "--config", str(cfg)])
    # A run whose calls failed is not a success: exit 1 and one summary line.
    assert res.exit_code == 1, res.output
    recs = _records(tmp_path, "gpqa_diamond")
    assert recs and all(r["status"] == "api_failure" and r["correct"] is None for r in recs)
    assert "failures" in res.output
    assert ("failed: 9 items (api_failure: 9), 9 calls; they are recorded and not scored — rerun with --retry-failed"
            in " ".join(res.output.split()))


def test_bad_config_names_file_and_field(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"endpoints": {"m": {"model": "x"}}, "model": "m", "evals": {"nope": {}}}))
    res = CliRunner().invoke(app, ["run", "--config", str(path)])
    assert res.exit_code == 2
    assert "bad.yaml" in res.output and "evals.nope" in res.output
