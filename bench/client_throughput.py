"""Client throughput against the loopback fake server (200 ms latency a call, concurrency 64).

Ours: `LLMClient` with the SQLite cache, retries, accounting. Reference: the bare `openai`
AsyncOpenAI client under an asyncio semaphore (no cache, no accounting), in the same run.
Then a fully cached rerun, which must make zero calls. Target: >= 250 calls/s sustained.

Run: python bench/client_throughput.py [--calls 3000] [--latency 0.2] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import openai

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from server_process import FakeServer  # noqa: E402

from arena.llm import ChatRequest, Endpoint, LLMClient, ResponseCache  # noqa: E402


def requests(n: int, tag: str) -> list[ChatRequest]:
    return [ChatRequest("bench", [{"role": "user", "content": f"{tag} prompt number {i}"}], stage="bench") for i in range(n)]


async def ours(url: str, n: int, conc: int, cache_path: Path, tag: str) -> tuple[float, LLMClient]:
    ep = Endpoint(name="bench", model="fake", base_url=url, max_concurrency=conc, timeout=30)
    client = LLMClient({"bench": ep}, ResponseCache(cache_path))
    reqs = requests(n, tag)
    t0 = time.perf_counter()
    res = await client.chat_many(reqs)
    dt = time.perf_counter() - t0
    await client.aclose()
    assert all(r.ok for r in res)
    return dt, client


async def reference(url: str, n: int, conc: int) -> float:
    client = openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0, timeout=30)
    sem = asyncio.Semaphore(conc)

    async def one(i: int) -> None:
        async with sem:
            await client.chat.completions.create(model="fake", messages=[{"role": "user", "content": f"reference prompt number {i}"}])

    t0 = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    dt = time.perf_counter() - t0
    await client.close()
    return dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=64)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, FakeServer({"latency": a.latency}, tmp_dir=Path(tmp)) as srv:
        cache = Path(tmp) / "cache.sqlite"
        ceiling = a.concurrency / a.latency
        dt_ref = asyncio.run(reference(srv.url, a.calls, a.concurrency))
        dt, _ = asyncio.run(ours(srv.url, a.calls, a.concurrency, cache, "ours"))
        hits = srv.stats()["hits"]
        dt_cached, client = asyncio.run(ours(srv.url, a.calls, a.concurrency, cache, "ours"))
        rerun_calls = srv.stats()["hits"] - hits
        print(f"{a.calls} calls, {a.latency * 1000:.0f} ms latency, concurrency {a.concurrency} (ceiling {ceiling:.0f} calls/s)")
        print(f"reference (bare AsyncOpenAI + semaphore): {a.calls / dt_ref:.0f} calls/s")
        print(f"ours (cache + retries + accounting): {a.calls / dt:.0f} calls/s")
        print(f"ratio ours/reference: {dt_ref / dt:.2f}")
        print(f"cached rerun: {rerun_calls} calls to the server, {client.ledger.totals[('bench', 'bench')].cache_hits} cache hits, {dt_cached:.2f} s")


if __name__ == "__main__":
    main()
