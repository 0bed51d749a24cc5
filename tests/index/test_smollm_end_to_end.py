"""One eval end to end with the real local model (SmolLM2-135M via llama-cpp-python)."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from arena.index.report import summarize
from arena.index.runner import EvalSpec, IndexConfig, IndexRunner, read_records
from arena.index.sandbox import Sandbox
from arena.llm import LLMClient, ResponseCache


@pytest.mark.smollm
def test_math500_with_smollm2(smollm_server, shared_data, tmp_path):
    ep = smollm_server.endpoint("smollm2")
    cfg = IndexConfig(
        endpoints={"smollm2": ep}, model="smollm2", judge=None,
        evals=[EvalSpec("math500", str(shared_data / "index" / "math500.jsonl"), repeats=1, limit=3)],
        output=tmp_path / "out", cache=tmp_path / "cache.sqlite", max_tokens=256,
    )

    async def go() -> int:
        client = LLMClient(cfg.endpoints, ResponseCache(cfg.cache))
        try:
            return await IndexRunner(cfg, client, Sandbox()).run_eval(cfg.evals[0])
        finally:
            await client.aclose()

    assert asyncio.run(go()) == 3
    recs = read_records(cfg.output, "smollm2")["math500"]
    assert len(recs) == 3
    assert all(r["status"] in {"ok", "unanswered"} and r["response"] for r in recs)
    assert all(r["completion_tokens"] > 0 for r in recs)
    evals, _ = summarize({"math500": recs}, rng=np.random.default_rng(0), rounds=100)
    assert evals.loc[0, "items"] == 3 and 0.0 <= evals.loc[0, "score"] <= 1.0
    # Rerun from the cache: nothing new is written.
    assert asyncio.run(go()) == 0
    print(json.dumps([{k: r[k] for k in ("item_id", "extracted", "correct", "completion_tokens")} for r in recs]))
