"""HumanEval as an index task: canonical solutions through `arena index run` (loopback server)
pass 164/164 in the sandbox; wrong and missing code fail; it is in no index."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from arena.index.cli import app
from arena.index.tasks import get_task, index_definitions


def _problems(shared: Path) -> list[dict]:
    with gzip.open(shared / "index" / "humaneval" / "HumanEval.jsonl.gz", "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _run(tmp_path: Path, server, source: Path, limit: int | None = None):
    ev = {"source": str(source), **({"limit": limit} if limit else {})}
    cfg = {"endpoints": {"m": {"model": "model-m", "base_url": server.url, "max_retries": 1, "max_concurrency": 8}},
           "model": "m", "output": str(tmp_path / "out"), "cache": str(tmp_path / "cache.sqlite"),
           "sandbox_workers": 2, "evals": {"humaneval": ev}}
    path = tmp_path / "index.yaml"
    path.write_text(yaml.safe_dump(cfg))
    res = CliRunner().invoke(app, ["run", "--config", str(path)])
    recs = [json.loads(line) for line in (tmp_path / "out" / "m" / "humaneval.jsonl").read_text().splitlines()]
    return res, {r["item_id"]: r for r in recs}


def _rules(problems: list[dict], solution: dict[str, str]) -> list[dict]:
    # The task prompt embeds the problem's prompt verbatim: match on it, reply with the solution.
    return [{"match": re.escape(p["prompt"].rstrip()), "reply": f"Here it is.\n\n```python\n{solution[p['task_id']]}\n```\n"}
            for p in problems]


def test_humaneval_is_reported_but_in_no_index():
    assert get_task("humaneval").indices == {}
    assert all("humaneval" not in evals for evals in index_definitions().values())


def test_wrong_and_missing_code_fail(tmp_path, fake_server, shared_data):
    probs = _problems(shared_data)[:3]
    sol = {p["task_id"]: p["canonical_solution"] for p in probs}
    sol[probs[1]["task_id"]] = "    return None"
    rules = _rules(probs, sol)
    rules[2] = {"match": rules[2]["match"], "reply": "I cannot write code today."}
    server = fake_server({"rules": rules})
    res, recs = _run(tmp_path, server, shared_data / "index" / "humaneval" / "HumanEval.jsonl.gz", limit=3)
    assert res.exit_code == 0, res.output
    assert recs[probs[0]["task_id"]]["correct"] is True
    assert recs[probs[1]["task_id"]]["correct"] is False and recs[probs[1]["task_id"]]["method"].startswith("sandbox:")
    assert recs[probs[2]["task_id"]]["status"] == "unanswered" and recs[probs[2]["task_id"]]["method"] == "no_code"
    assert "humaneval" in res.output


@pytest.mark.slow
def test_canonical_solutions_pass_164_of_164(tmp_path, fake_server, shared_data):
    probs = _problems(shared_data)
    server = fake_server({"rules": _rules(probs, {p["task_id"]: p["canonical_solution"] for p in probs})})
    res, recs = _run(tmp_path, server, shared_data / "index" / "humaneval" / "HumanEval.jsonl.gz")
    assert res.exit_code == 0, res.output
    assert len(recs) == 164
    passed = sum(r["correct"] is True for r in recs.values())
    failed = {k: (r["method"], r.get("sandbox", {}).get("detail")) for k, r in recs.items() if r["correct"] is not True}
    print(f"\nHumanEval canonical solutions through arena index run: {passed}/164 passed")
    assert passed == 164, failed
