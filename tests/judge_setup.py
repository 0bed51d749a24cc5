"""A judging run over scripted answers for the loopback fake server's scripted judge.

Answers carry ``[model=NAME]`` so the scripted judge knows which model holds each position."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml


def judge_config(tmp_path: Path, url: str, models: list[str], n_prompts: int, judge: dict, baseline: str = "base") -> Path:
    qfile = tmp_path / "question.jsonl"
    with open(qfile, "w") as fh:
        for i in range(n_prompts):
            fh.write(json.dumps({"question_id": f"q{i:04d}", "category": "synthetic", "turns": [{"content": f"Question number {i}?"}]}) + "\n")
    adir = tmp_path / "run" / "model_answer"
    adir.mkdir(parents=True, exist_ok=True)
    for m in [baseline, *models]:
        with open(adir / f"{m}.jsonl", "w") as fh:
            for i in range(n_prompts):
                fh.write(json.dumps({"question_id": f"q{i:04d}", "answer_id": f"{m}-{i}", "model_id": m,
                                     "choices": [{"index": 0, "turns": [{"content": f"[model={m}] answer {i}", "token_len": 4}]}]}) + "\n")
    ep = {"base_url": url, "max_concurrency": 16, "timeout": 5.0, "max_retries": 2}
    cfg = {
        "name": "scripted", "questions": str(qfile), "output_dir": str(tmp_path / "run"),
        "backoff_base": 0.01, "backoff_max": 0.05,
        "endpoints": {"judge": {"model": "judge-model", **ep, "params": {"temperature": 1.0}}},
        "judge": {"endpoint": "judge", "baseline": baseline, "models": models, **judge},
        "show": {"bootstrap": 50, "seed": 1},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def arena(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "arena.cli", *args], capture_output=True, text=True, timeout=600)
