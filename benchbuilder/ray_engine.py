"""The curation pipeline on Ray Data (``benchbuilder build --engine ray``).

Same stages, same files, same decisions as :class:`~benchbuilder.pipeline.Pipeline`; what
costs CPU per prompt runs on the cluster, what needs the whole corpus runs on the driver:

- **read** (Ray tasks): JSONL in byte ranges of ``engine.block_size`` lines, Parquet by row
  group, JSON / CSV / gzip / Hugging Face one block per source; each row goes through the local
  engine's :func:`~benchbuilder.ingest.prompt_from_row`, so records, ids and drops match.
- **prepare** (actor pool): language, exact-duplicate key, MinHash signature and LSH band keys
  per prompt (:class:`~benchbuilder.filters.MinHasher`, a pure function of the text).
- **near-duplicates across blocks**: band keys are grouped by a Ray Data ``groupby`` shuffle
  over the whole corpus; every bucket yields candidate pairs, confirmed by signature agreement
  on the cluster, and the ordered greedy resolution
  (:func:`~benchbuilder.filters.resolve_near_duplicates`) runs on the driver. It equals the
  local filter's decisions because that filter's decision for a prompt depends only on the
  prompts before it.
- **embed** (actor pool of ``engine.embed_actors``): only texts missing from the embedding
  cache; the driver stores what they return and applies the corpus-level post-processing.
- **topics**: BERTopic is fitted on the sample on the driver; the
  :class:`~benchbuilder.cluster.VoteAssigner` is broadcast and every other prompt is assigned
  with ``map_batches``; outlier reduction, keywords and labels on the driver.
- **annotate**: :mod:`benchbuilder.ray_annotate` (actors with the shared client, one limiter
  per endpoint across all workers, per-block shards).
- **select / report**: the driver, unchanged.

Per-stage seconds and rows per second go to ``engine.json``.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from arena.errors import InputError
from arena.io.jsonl import write_json
from benchbuilder.filters import lsh_bands, resolve_near_duplicates
from benchbuilder.ingest import DropLog, FieldMap, IngestOptions, PromptRecord, check_unique_id
from benchbuilder.pipeline import Pipeline

# Line numbers and file indices packed into one sortable int64 (files first, then lines).
_LINE_BITS = 40


def _okey(file_idx: int, line: int) -> int:
    return (file_idx << _LINE_BITS) | line


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """A TCP connect to ``HOST:PORT`` (or ``ray://HOST:PORT``) before ``ray.init``, which would
    otherwise retry an unreachable cluster for minutes. ``auto`` is left to Ray."""
    import socket

    if address == "auto":
        return
    hostport = address.removeprefix("ray://")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise InputError(f"expected auto, HOST:PORT or ray://HOST:PORT, got {address!r}", field="--address")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise InputError(f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}", field="--address") from None


# ----------------------------------------------------------------------------- read
def jsonl_blocks(path: Path, block_lines: int) -> list[tuple[int, int, int]]:
    """``(start byte, end byte, first line)`` of consecutive ``block_lines``-line ranges; split
    on ``\\n`` only, as the local reader does."""
    blocks, start, pos, first, n = [], 0, 0, 1, 0
    with open(path, "rb") as f:
        for raw in f:
            n += 1
            pos += len(raw)
            if n == block_lines:
                blocks.append((start, pos, first))
                start, first, n = pos, first + n, 0
    if n:
        blocks.append((start, pos, first))
    return blocks


def _describe_sources(paths: list[str], opts: IngestOptions, block_lines: int) -> list[dict[str, Any]]:
    """Read tasks in global order. Uncompressed JSONL splits into byte ranges, Parquet into row
    groups; everything else (gzip, JSON, CSV, Hugging Face) is one task per source."""
    from benchbuilder.ingest import _detect_format

    descs: list[dict[str, Any]] = []
    for fi, src in enumerate(paths):
        p = Path(src)
        fmt = opts.format
        if fmt == "auto" and p.is_file():
            fmt = _detect_format(p)
        if fmt == "jsonl" and p.is_file() and not p.name.lower().endswith(".gz"):
            for start, end, first in jsonl_blocks(p, block_lines):
                descs.append({"file_idx": fi, "source": src, "kind": "jsonl_range", "start": start, "end": end, "first": first})
        elif fmt == "parquet" and p.is_file():
            import pyarrow.parquet as pq

            try:
                md = pq.ParquetFile(p).metadata
            except Exception as exc:  # pyarrow's errors for a corrupt file
                raise InputError(f"cannot read parquet: {exc}", path=src) from None
            first = 1
            for g in range(md.num_row_groups):
                descs.append({"file_idx": fi, "source": src, "kind": "parquet_group", "group": g, "first": first})
                first += md.row_group(g).num_rows
        else:
            descs.append({"file_idx": fi, "source": src, "kind": "whole"})
    return descs


def _iter_block_rows(desc: dict[str, Any], opts: IngestOptions) -> Iterator[tuple[int, Any]]:
    from benchbuilder.ingest import iter_rows

    src = desc["source"]
    if desc["kind"] == "jsonl_range":
        with open(src, "rb") as f:
            f.seek(desc["start"])
            data = f.read(desc["end"] - desc["start"])
        for k, raw in enumerate(data.split(b"\n")):
            line = desc["first"] + k
            if desc["start"] == 0 and k == 0 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"cannot read file: {exc}", path=src) from None
            if not text.strip():
                continue
            try:
                yield line, json.loads(text)
            except json.JSONDecodeError as exc:
                raise InputError(f"malformed JSON ({exc.msg} at column {exc.colno})", path=src, line=line) from None
    elif desc["kind"] == "parquet_group":
        import pyarrow.parquet as pq

        for k, row in enumerate(pq.ParquetFile(src).read_row_group(desc["group"]).to_pylist()):
            yield desc["first"] + k, row
    else:
        yield from iter_rows(src, opts)


def read_block(batch: dict[str, np.ndarray], opts: IngestOptions) -> dict[str, list]:
    """One read task: records and drops of one block, or the block's first input error (the
    driver reports the earliest one, as the local engine would)."""
    from benchbuilder.ingest import prompt_from_row

    cols: dict[str, list] = {k: [] for k in ("okey", "source_id", "prompt", "source", "line", "n_turns", "drop", "detail", "error")}
    for k in range(len(batch["file_idx"])):
        desc = {key: (v[k].item() if hasattr(v[k], "item") else v[k]) for key, v in batch.items()}
        fi = int(desc["file_idx"])
        drops = DropLog()

        def emit(line: int, sid: str | None, prompt: str, n_turns: int, drop: str, detail: str, error: str) -> None:
            for key, val in zip(cols, (_okey(fi, line), sid or "", prompt, desc["source"], line, n_turns, drop, detail, error)):
                cols[key].append(val)

        try:
            for line, row in _iter_block_rows(desc, opts):
                rec = prompt_from_row(line, row, opts, desc["source"], drops)
                if rec is None:
                    d = drops.drops.pop()
                    emit(line, d.source_id, "", 0, d.reason, d.detail, "")
                else:
                    emit(line, rec.source_id, rec.prompt, rec.n_turns, "", "", "")
        except InputError as exc:
            emit(exc.line or 0, None, "", 0, "", "", json.dumps({"message": exc.reason, "path": exc.path, "line": exc.line, "field": exc.field}))
    return cols


class Prepare:
    """Per-prompt filter features, computed once per actor-held language model. With ``opts``,
    each batch is a block descriptor that the actor reads first: reading and preparing are then
    one stage, so a pool holding every CPU never starves separate read tasks."""

    def __init__(self, languages: list[str] | None, num_perm: int, bands: int, rows: int, opts: IngestOptions | None = None):
        from benchbuilder.filters import LanguageFilter, MinHasher

        self.lang = LanguageFilter(keep=tuple(languages)) if languages else None
        self.hasher = MinHasher(num_perm=num_perm)
        self.bands, self.rows = bands, rows
        self.opts = opts

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        from benchbuilder.filters import band_keys, exact_key

        if self.opts is not None:
            batch = {k: np.asarray(v, dtype=np.int64 if k in ("okey", "line", "n_turns") else object) for k, v in read_block(batch, self.opts).items()}

        texts = [str(t) for t in batch["prompt"]]
        usable = np.array([not d and not e for d, e in zip(batch["drop"], batch["error"])], dtype=bool)
        lang = [(self.lang.language(t) or "") if (self.lang and u) else "" for t, u in zip(texts, usable)]
        sig, has = self.hasher.signatures([t if u else "" for t, u in zip(texts, usable)])
        batch["lang"] = np.array(lang, dtype=object)
        batch["exact"] = np.array([exact_key(t) if u else "" for t, u in zip(texts, usable)], dtype=object)
        batch["has_words"] = has
        # values are < 2**32: half the memory in transit
        batch["sig"] = sig.astype(np.uint32)
        batch["bands"] = band_keys(sig, self.bands, self.rows)
        return batch


def _partition_pairs(group: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """All ordered pairs ``i < j`` that share an LSH bucket, within one hash partition of the
    bucket keys. One call per partition (not per bucket): a per-bucket call costs a Python
    round trip for each of millions of mostly single-member buckets."""
    key, idx = np.asarray(group["key"]), np.asarray(group["idx"])
    order = np.lexsort((idx, key))
    key, idx = key[order], idx[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    ends = np.r_[starts[1:], len(key)]
    pi, pj = [], []
    for s, e in zip(starts[ends - starts > 1].tolist(), ends[ends - starts > 1].tolist()):
        a, b = np.triu_indices(e - s, 1)
        pi.append(idx[s:e][a])
        pj.append(idx[s:e][b])
    if not pi:
        return {"i": np.zeros(0, np.int64), "j": np.zeros(0, np.int64)}
    return {"i": np.concatenate(pi), "j": np.concatenate(pj)}


# ----------------------------------------------------------------------------- embed / topics
class EmbedActor:
    """Holds one embedding backend (loaded once per actor) and embeds blocks of texts."""

    def __init__(self, config_json: str):
        from benchbuilder.config import BuildConfig

        self.backend = Pipeline(BuildConfig.model_validate_json(config_json)).embedder().backend

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        x = self.backend.embed([str(t) for t in batch["text"]])
        return {"i": batch["i"], "vec": np.asarray(x, dtype=np.float32)}


def _assign(batch: dict[str, np.ndarray], x: np.ndarray, assigner: Any, size: int) -> dict[str, np.ndarray]:
    """Topics of rows ``[start, start + size)`` of the broadcast matrix (zero-copy on a node)."""
    s = int(batch["start"][0])
    rows = np.arange(s, min(s + size, len(x)))
    return {"pos": rows, "topic": assigner.assign(x[rows])}


# ----------------------------------------------------------------------------- the pipeline
class RayPipeline(Pipeline):
    """:class:`Pipeline` whose per-prompt work runs on a Ray cluster."""

    # --------------------------------------------------------------- cluster connection
    @contextlib.contextmanager
    def ray(self) -> Iterator[Any]:
        import ray

        e = self.config.engine
        if ray.is_initialized():
            yield ray
            return
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        kw: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": "ERROR", "configure_logging": True}
        if e.address:
            check_reachable(e.address)
        try:
            if e.address:
                ray.init(address=e.address, **kw)
            else:
                ray.init(num_cpus=e.num_cpus, object_store_memory=e.object_store_mb * 1024**2, **kw)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            msg = " ".join(str(exc).split())[:300]
            raise InputError(f"cannot reach the Ray cluster: {msg}", field="--address" if e.address else "engine") from None
        import logging

        logging.getLogger("ray.data").setLevel(logging.ERROR)
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        ctx.print_on_execution_start = False
        try:
            yield ray
        finally:
            ray.shutdown()

    def gate(self, records: list[Any], drops: Any) -> list[Any]:
        t0 = time.perf_counter()
        out = super().gate(records, drops)
        self._time("filter: contamination gate", t0, len(records))
        return out

    def _time(self, stage: str, t0: float, rows: int, *, add: bool = False) -> None:
        """Seconds and rows/s of a stage in ``engine.json``; ``add`` sums repeated runs of one stage."""
        dt = time.perf_counter() - t0
        if not hasattr(self, "timings_"):
            self.timings_: dict[str, dict[str, Any]] = {}
        if add and stage in self.timings_:
            dt += self.timings_[stage]["seconds"]
            rows += self.timings_[stage]["rows"]
        self.timings_[stage] = {"seconds": round(dt, 3), "rows": rows, "rows_per_s": round(rows / dt, 1) if dt > 0 else None}
        self.out.mkdir(parents=True, exist_ok=True)
        write_json(self.out / "engine.json", {"engine": "ray", "workers": self.config.engine.num_cpus, "stages": self.timings_})

    # --------------------------------------------------------------- ingest
    def ingest(self) -> dict[str, Any]:
        c = self.config
        opts = IngestOptions(
            fields=FieldMap(**{k: v for k, v in c.input.fields.items()}), multi_turn=c.input.multi_turn, max_chars=c.input.max_chars,
            max_bytes=c.input.max_bytes, format=c.input.format, hf_split=c.input.hf_split, hf_config=c.input.hf_config, limit=c.input.limit,
        )
        for src in c.input.paths:
            p = Path(src)
            if not p.exists() and (opts.format != "hf" and not ("/" in src and not src.startswith((".", "/")))):
                raise InputError("file not found", path=src)
        descs = _describe_sources(list(c.input.paths), opts, c.engine.block_size)
        num_perm = 128
        bands, rows = lsh_bands(c.filters.near_dedup_threshold, num_perm)
        with self.ray() as ray:
            t0 = time.perf_counter()
            ds = ray.data.from_items(descs, override_num_blocks=max(1, len(descs)))
            # one actor per CPU, each reading and preparing whole blocks (an autoscaling pool
            # fed by separate read tasks stayed at one actor: 1.11x from 1 to 2 CPUs)
            ds = ds.map_batches(Prepare, fn_constructor_kwargs={"languages": c.filters.languages, "num_perm": num_perm, "bands": bands, "rows": rows, "opts": opts},
                                compute=ray.data.ActorPoolStrategy(size=max(1, int(ray.cluster_resources().get("CPU", 1)))), batch_size=1, batch_format="numpy")
            ds = ds.materialize()
            cols = ["okey", "source_id", "prompt", "source", "line", "n_turns", "drop", "detail", "error", "lang", "exact", "has_words"]
            frame = ds.select_columns(cols).to_pandas().sort_values("okey", kind="stable").reset_index(drop=True)
            self._time("read+prepare", t0, len(frame))
            t1 = time.perf_counter()
            summary, keep = self._decide(frame, ds, opts, ray)
            self._time("filter (driver + LSH shuffle)", t1, len(frame))
        return summary

    def _decide(self, frame: Any, ds: Any, opts: IngestOptions, ray: Any) -> tuple[dict[str, Any], np.ndarray]:
        """The local engine's decisions, in its order: read drops, id checks and limit,
        language, exact duplicates, near-duplicates; then the same three files."""
        c = self.config
        errors = frame[frame["error"] != ""]
        if len(errors):
            first = json.loads(errors.iloc[0]["error"])
            raise InputError(first["message"], path=first["path"], line=first["line"], field=first["field"])
        n = len(frame)
        drops = DropLog()
        usable = (frame["drop"] == "").to_numpy()
        # limit per source: usable records after the limit-th are not read, nor their drops
        alive = np.ones(n, dtype=bool)
        if opts.limit:
            file_idx = frame["okey"].to_numpy() >> _LINE_BITS
            for fi in np.unique(file_idx):
                rows_fi = np.nonzero((file_idx == fi) & usable)[0]
                if len(rows_fi) > opts.limit:
                    alive[(file_idx == fi) & (frame["okey"].to_numpy() > frame["okey"].to_numpy()[rows_fi[opts.limit - 1]])] = False
        recs: list[PromptRecord] = []
        rec_rows: list[int] = []
        per_source: dict[str, dict[str, tuple[int, str]]] = {}
        src_arr, sid_arr, prompt_arr = frame["source"].tolist(), frame["source_id"].tolist(), frame["prompt"].tolist()
        line_arr, turns_arr, drop_arr, detail_arr = frame["line"].tolist(), frame["n_turns"].tolist(), frame["drop"].tolist(), frame["detail"].tolist()
        # the local engine logs each source's read drops, then reads the next source
        for k in range(n):
            if not alive[k]:
                continue
            if drop_arr[k]:
                drops.add(drop_arr[k], src_arr[k], int(line_arr[k]), sid_arr[k] or None, detail_arr[k])
                continue
            rec = PromptRecord(sid_arr[k], prompt_arr[k], src_arr[k], int(line_arr[k]), int(turns_arr[k]))
            check_unique_id(per_source.setdefault(src_arr[k], {}), rec)
            recs.append(rec)
            rec_rows.append(k)
        n_read = len(recs) + len(drops.drops)
        if n_read == 0:
            raise InputError("the input holds no prompts; earlier outputs were left as they are", path=", ".join(map(str, c.input.paths)), field="input.paths")
        for p in dict.fromkeys(src_arr):
            self.log(f"read {sum(1 for r in recs if r.source == p)} prompts from {p}")
        seen: set[str] = set()
        for r in recs:
            if r.source_id in seen:
                r.source_id = f"{r.source_id}@{Path(r.source).name}:{r.line}"
            seen.add(r.source_id)
        rows_arr = np.asarray(rec_rows, dtype=np.int64)
        keep = np.ones(len(recs), dtype=bool)
        if c.filters.languages:
            lang = frame["lang"].to_numpy()[rows_arr]
            allowed = set(c.filters.languages)
            for m in range(len(recs)):
                if lang[m] and lang[m] not in allowed:
                    keep[m] = False
                    drops.add("language", recs[m].source, recs[m].line, recs[m].source_id, lang[m])
        if c.filters.exact_dedup:
            first: dict[str, int] = {}
            exact = frame["exact"].to_numpy()[rows_arr]
            for m in np.nonzero(keep)[0].tolist():
                f = first.setdefault(exact[m], m)
                if f != m:
                    keep[m] = False
                    drops.add("duplicate", recs[m].source, recs[m].line, recs[m].source_id, f"same as {recs[f].source_id}")
        if c.filters.near_dedup:
            cand = np.nonzero(keep)[0]
            t_lsh = time.perf_counter()
            dup = self._near_duplicates(ds, frame["okey"].to_numpy()[rows_arr[cand]], frame["has_words"].to_numpy()[rows_arr[cand]], ray)
            self._time("filter: near-duplicates (LSH shuffle + confirm)", t_lsh, len(cand))
            for pos, d in enumerate(dup):
                if d is not None:
                    m, first_m = cand[pos], cand[d]
                    keep[m] = False
                    drops.add("near_duplicate", recs[m].source, recs[m].line, recs[m].source_id, f"near {recs[first_m].source_id}")
        return self.finish_ingest([r for r, k in zip(recs, keep) if k], drops, n_read), keep

    def _near_duplicates(self, ds: Any, okeys: np.ndarray, has_words: np.ndarray, ray: Any) -> list[int | None]:
        """Greedy near-duplicate decisions over the candidates (in order), with LSH buckets
        formed across all blocks by a groupby shuffle on the cluster."""
        threshold = self.config.filters.near_dedup_threshold
        order = {int(k): i for i, k in enumerate(okeys.tolist())}
        cand_keys = np.sort(okeys[has_words.astype(bool)])

        parts = 4 * max(1, int(ray.cluster_resources().get("CPU", 1)))

        def explode(batch: dict[str, np.ndarray], cands: np.ndarray) -> dict[str, np.ndarray]:
            ok = np.isin(batch["okey"], cands)
            b = np.asarray(batch["bands"])[ok]
            key = b.ravel()
            return {"part": (key.view(np.uint64) % np.uint64(parts)).astype(np.int64), "key": key,
                    "idx": np.repeat(np.asarray(batch["okey"])[ok], b.shape[1] if b.ndim == 2 else 0)}

        keys = ds.select_columns(["okey", "bands"]).map_batches(explode, fn_kwargs={"cands": cand_keys}, batch_format="numpy")
        # buckets are formed across all blocks: every key of a hash partition meets in one group
        pairs = keys.groupby("part").map_groups(_partition_pairs, batch_format="numpy").materialize()
        if pairs.count() == 0:
            return [None] * len(okeys)
        pf = pairs.to_pandas().drop_duplicates()
        pi = np.array([order[int(v)] for v in pf["i"].tolist()], dtype=np.int64)
        pj = np.array([order[int(v)] for v in pf["j"].tolist()], dtype=np.int64)
        # confirmation needs both signatures: gather only those of prompts in some pair
        need = np.unique(np.concatenate([pf["i"].to_numpy(), pf["j"].to_numpy()]))
        sf = ds.select_columns(["okey", "sig"]).map_batches(
            lambda b, nd: {"okey": np.asarray(b["okey"])[np.isin(b["okey"], nd)], "sig": np.asarray(b["sig"])[np.isin(b["okey"], nd)]},
            fn_kwargs={"nd": need}, batch_format="numpy").to_pandas()
        sig_of = {int(k): np.asarray(v) for k, v in zip(sf["okey"].tolist(), sf["sig"].tolist())}
        inv = {i: k for k, i in order.items()}
        agree = np.array([np.mean(sig_of[inv[i]] == sig_of[inv[j]]) for i, j in zip(pi.tolist(), pj.tolist())])
        ok = agree >= threshold
        return resolve_near_duplicates(len(okeys), pi[ok], pj[ok])

    # --------------------------------------------------------------- embed
    def embed_texts(self, texts: list[str], *, postprocess: bool = True) -> np.ndarray:
        """The local engine's cached embedding, with the missing texts embedded by the actor pool."""
        from benchbuilder.embed import text_hash

        emb = self.embedder()
        emb_backend = self.backend()
        hashes = [text_hash(t) for t in texts]
        found = emb.cache.get_many(emb.name, hashes) if emb.cache else {}
        todo: dict[str, str] = {}
        for h, t in zip(hashes, texts):
            if h not in found:
                todo.setdefault(h, t)
        if todo:
            t0 = time.perf_counter()
            items = list(todo.items())
            with self.ray() as ray:
                ds = ray.data.from_items([{"i": i, "text": t} for i, (_, t) in enumerate(items)], override_num_blocks=max(1, len(items) // self.config.engine.block_size))
                # the workers embed with the backend this run resolved, whatever their view of the output folder
                cfg = self.config.model_copy(deep=True)
                cfg.embedding.backend = emb_backend
                out = ds.map_batches(EmbedActor, fn_constructor_args=(cfg.model_dump_json(),), compute=ray.data.ActorPoolStrategy(size=self.config.engine.embed_actors),
                                     batch_size=min(self.config.engine.block_size, 4096), batch_format="numpy").to_pandas()
            vecs = np.stack(out.sort_values("i")["vec"].to_numpy()).astype(np.float32)
            if emb.cache:
                emb.cache.put_many(emb.name, [h for h, _ in items], vecs)
            for (h, _), v in zip(items, vecs):
                found[h] = v
            # the gate embeds before the embed stage does, so the pool's own throughput is kept apart
            self._time("embed: actor pool (texts not in the cache)", t0, len(items), add=True)
        self.embedded_ = (len(texts) - len(todo), len(todo))
        x = np.vstack([found[h] for h in hashes]).astype(np.float32) if hashes else np.zeros((0, 0), dtype=np.float32)
        post = getattr(emb.backend, "postprocess", None) if postprocess else None
        return post(x) if post else x

    def embed(self) -> np.ndarray:
        recs = self.prompts()
        t0 = time.perf_counter()
        x = self.embed_texts([r["prompt"] for r in recs.values()])
        cached, computed = self.embedded_
        self._time("embed", t0, computed)
        self.log(f"embedded {len(recs)} prompts with {self.embedder().name} ({cached} cached, {computed} computed)")
        return x

    # --------------------------------------------------------------- topics
    def cluster(self) -> dict[str, Any]:
        from benchbuilder.cluster import OUTLIER, save_topic_model

        recs = self.prompts()
        ids = list(recs)
        docs = [recs[i]["prompt"] for i in ids]
        x = self.embed()
        t0 = time.perf_counter()
        tm = self.topic_model()
        fit_rows, rest = tm.plan(x)
        model, fit_topics, assigner = tm.fit_sample_model([docs[i] for i in fit_rows], x[fit_rows])
        self._time("topics: fit on the sample (driver)", t0, len(fit_rows))
        topics = np.full(len(docs), OUTLIER, dtype=int)
        topics[fit_rows] = fit_topics
        t1 = time.perf_counter()
        if len(rest):
            with self.ray() as ray:
                size = 8192
                starts = [{"start": s} for s in range(0, len(rest), size)]
                ds = ray.data.from_items(starts, override_num_blocks=len(starts))
                out = ds.map_batches(_assign, fn_kwargs={"x": x[rest], "assigner": assigner, "size": size}, batch_size=1, batch_format="numpy").to_pandas()
            topics[rest[out["pos"].to_numpy()]] = out["topic"].to_numpy()
        self._time("topics: assign the rest (map_batches)", t1, len(rest))
        t2 = time.perf_counter()
        tm.finish(model, docs, x, np.asarray(topics, dtype=int), t0)
        st = save_topic_model(self.out / "clusters.jsonl", ids, tm)
        self._time("topics: outliers, keywords, labels, categories (driver)", t2, len(docs))
        self._time("topics+assign", t0, len(docs))
        self.log(f"{st.n_topics} topics, largest {st.largest_share:.1%}, outliers before reduction {st.outlier_share_before:.1%}")
        self.write_usage()
        return st.to_dict()

    # --------------------------------------------------------------- annotate
    async def annotate_stage(self, client: Any, stage: Any, prompts: dict[str, str], retry: bool, progress: Any) -> tuple[dict[str, Any], int]:
        from benchbuilder.ray_annotate import annotate_stage_ray

        t0 = time.perf_counter()
        with self.ray() as ray:
            res = annotate_stage_ray(self, ray, stage, prompts, retry=retry, progress=progress)
        self._time(f"annotate:{stage.name}", t0, len(prompts))
        return res
