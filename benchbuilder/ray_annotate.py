"""Annotation on Ray: actors that each run the project's LLM client, one limiter per endpoint
shared by all of them, and results persisted per shard of prompt ids.

- **Workers** (:class:`AnnotateWorker`, ``engine.annotate_actors`` of them) build the same
  client as the local engine (retries, the SQLite response cache in WAL mode, cost ledger) and
  run the local :class:`~benchbuilder.annotate.Annotator` on one shard at a time, so each shard
  file resumes exactly as the local stage file does.
- **Limits across workers**: every attempt holds a permit from :class:`EndpointLimiter` (one
  named async actor per endpoint): at most ``max_concurrency`` attempts in flight over all
  workers, starts spaced for ``rpm``. A permit whose holder died (kill -9) is reclaimed once
  the holder's process is gone, so a killed worker cannot shrink the limit.
- **Shards**: ``annotations/<stage>/shard-NNNNN.jsonl``; a prompt's shard is a stable hash of
  its id, and the shard count is fixed on the stage's first run (``shards.json``), so a rerun
  finds every earlier record. The driver merges all shards, newest record per prompt wins, into
  ``annotations/<stage>.jsonl`` (the file the local engine writes and select reads).
- **Failure**: actors restart and their calls are retried by Ray (``max_restarts``,
  ``max_task_retries``); a retried shard skips prompts already recorded, and a paid answer
  whose record was lost is served by the response cache. A killed driver reruns the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import math
import os
import time
from pathlib import Path
from typing import Any, AsyncIterator, Callable

from arena.io.jsonl import write_json, write_jsonl
from benchbuilder.annotate import Annotation, AnnotationStage, load_annotations


def shard_of(source_id: str, n_shards: int) -> int:
    return int.from_bytes(hashlib.sha256(source_id.encode("utf-8")).digest()[:8], "big") % n_shards


class EndpointLimiter:
    """Permits for one endpoint across processes (used as an async Ray actor).

    ``acquire(holder_pid)`` waits until fewer than ``max_concurrency`` permits are out and the
    ``rpm`` spacing allows a start; ``release(token)`` returns one. Permits of processes that no
    longer exist are reclaimed (all workers of a single-node cluster share this machine's pid
    space; on several nodes a lease of ``lease_s`` bounds the loss instead).
    """

    def __init__(self, max_concurrency: int, rpm: float | None, lease_s: float = 900.0):
        self.max = max(1, int(max_concurrency))
        self.interval = 60.0 / rpm if rpm else 0.0
        self.lease_s = lease_s
        self.next_start = 0.0
        self.out: dict[int, tuple[int, float]] = {}
        self.peak = 0
        self._n = 0
        self._cond = asyncio.Condition()

    def _reclaim(self) -> None:
        now = time.monotonic()
        for tok, (pid, t) in list(self.out.items()):
            gone = False
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                gone = True
            except OSError:
                pass
            if gone or now - t > self.lease_s:
                del self.out[tok]

    async def acquire(self, holder_pid: int) -> int:
        async with self._cond:
            while len(self.out) >= self.max:
                self._reclaim()
                if len(self.out) < self.max:
                    break
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._cond.wait(), 0.5)
            now = time.monotonic()
            start = max(now, self.next_start)
            self.next_start = start + self.interval
            self._n += 1
            tok = self._n
            self.out[tok] = (holder_pid, now)
            self.peak = max(self.peak, len(self.out))
        if start > now:
            await asyncio.sleep(start - now)
        return tok

    async def release(self, token: int) -> None:
        async with self._cond:
            self.out.pop(token, None)
            self._cond.notify_all()

    async def stats(self) -> dict[str, int]:
        return {"peak": self.peak, "out": len(self.out), "granted": self._n}


class RayGate:
    """The client's ``gate``: a permit from the endpoint's limiter around each attempt."""

    def __init__(self, limiters: dict[str, Any]):
        self.limiters = limiters

    @contextlib.asynccontextmanager
    async def __call__(self, endpoint: str) -> AsyncIterator[None]:
        lim = self.limiters.get(endpoint)
        if lim is None:
            yield
            return
        tok = await lim.acquire.remote(os.getpid())
        try:
            yield
        finally:
            lim.release.remote(tok)


class AnnotateWorker:
    """One annotation worker (a Ray actor): the local Annotator over one shard at a time."""

    def __init__(self, config_json: str, stage: dict[str, Any], shard_dir: str, retry: bool, limiters: dict[str, Any]):
        from benchbuilder.config import BuildConfig
        from benchbuilder.pipeline import Pipeline

        self.pipeline = Pipeline(BuildConfig.model_validate_json(config_json))
        self.stage = AnnotationStage(**stage)
        self.shard_dir = Path(shard_dir)
        self.retry = retry
        self.gate = RayGate(limiters)

    def pid(self) -> int:
        return os.getpid()

    def run_shard(self, shard: int, prompts: dict[str, str]) -> dict[str, Any]:
        from arena.llm.cost import UsageLedger
        from benchbuilder.annotate import Annotator

        ledger = UsageLedger()
        self.pipeline.ledger = ledger
        client = self.pipeline.client(retry_failed=self.retry, gate=self.gate)
        ann = Annotator(client, self.stage, self.shard_dir / f"shard-{shard:05d}.jsonl", retry=self.retry)

        async def go() -> None:
            try:
                await ann.arun(prompts)
            finally:
                await client.aclose()

        asyncio.run(go())
        if client.cache is not None:
            client.cache.close()
        return {"shard": shard, "requests": ann.requests_, "usage": [{"stage": s, "endpoint": e, **vars(t)} for (s, e), t in ledger.totals.items()]}


def _n_shards(shard_dir: Path, n_prompts: int, block_size: int) -> int:
    """Fixed on the stage's first run, so a prompt always lands in the same shard."""
    meta = shard_dir / "shards.json"
    if meta.exists():
        return int(json.loads(meta.read_text())["n_shards"])
    n = max(1, math.ceil(n_prompts / block_size))
    shard_dir.mkdir(parents=True, exist_ok=True)
    write_json(meta, {"n_shards": n})
    return n


def merged(shard_dir: Path) -> dict[str, Annotation]:
    """Every shard's records, newest per prompt (a shard holds each prompt's records in order)."""
    out: dict[str, Annotation] = {}
    for p in sorted(shard_dir.glob("shard-*.jsonl")):
        out.update(load_annotations(p))
    return out


def annotate_stage_ray(
    pipeline: Any, ray: Any, stage: AnnotationStage, prompts: dict[str, str], *, retry: bool, progress: Callable[[Any], None] | None = None,
) -> tuple[dict[str, Annotation], int]:
    """Annotate ``prompts`` for one stage on the cluster; returns the annotations of these
    prompts and the number of requests the workers asked for."""
    e = pipeline.config.engine
    out_dir = pipeline.out / "annotations"
    shard_dir = out_dir / stage.name
    n_shards = _n_shards(shard_dir, len(prompts), e.block_size)
    done = merged(shard_dir)
    todo: dict[int, dict[str, str]] = {}
    for sid, text in prompts.items():
        prev = done.get(sid)
        if prev is None or (retry and prev.status in ("failed", "malformed")):
            todo.setdefault(shard_of(sid, n_shards), {})[sid] = text
    requests = 0
    if todo:
        client = pipeline.client()
        client.check_keys([stage.endpoint])
        ep = client.endpoint(stage.endpoint)
        limiter_cls = ray.remote(EndpointLimiter)
        limiter = limiter_cls.options(max_concurrency=1000).remote(ep.max_concurrency, ep.rpm)
        worker_cls = ray.remote(max_restarts=-1, max_task_retries=-1)(AnnotateWorker)
        workers = [worker_cls.options(num_cpus=0).remote(pipeline.config.model_dump_json(), stage.__dict__, str(shard_dir), retry, {stage.endpoint: limiter})
                   for _ in range(min(e.annotate_actors, len(todo)))]
        pipeline.workers_ = workers
        pending = {}
        queue = sorted(todo)
        for w in workers:
            if queue:
                s = queue.pop(0)
                pending[w.run_shard.remote(s, todo[s])] = w
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            w = pending.pop(ready[0])
            res = ray.get(ready[0])
            requests += res["requests"]
            for u in res["usage"]:
                t = pipeline.ledger.totals[(u.pop("stage"), u.pop("endpoint"))]
                for k, v in u.items():
                    setattr(t, k, getattr(t, k) + v)
            if progress:
                for _ in todo[res["shard"]]:
                    progress(None)
            if queue:
                s = queue.pop(0)
                pending[w.run_shard.remote(s, todo[s])] = w
        pipeline.limiter_stats_ = ray.get(limiter.stats.remote())
        for w in workers:
            ray.kill(w)
        ray.kill(limiter)
    allrecs = merged(shard_dir)
    write_jsonl(out_dir / f"{stage.name}.jsonl", (a.to_dict() for a in allrecs.values()))
    return {sid: allrecs[sid] for sid in prompts if sid in allrecs}, requests
