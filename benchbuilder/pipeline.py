"""The curation pipeline: ingest -> filter -> embed -> cluster -> annotate -> select -> report.

Each stage reads the previous stage's files in the output folder and writes its own, so any
stage can be rerun alone, and a rerun reuses the embedding cache and the LLM response cache:

``prompts.jsonl`` / ``drops.jsonl`` / ``ingest.json`` (ingest), ``clusters.jsonl`` /
``topics.json`` (cluster), ``annotations/<stage>.jsonl`` / ``annotation.json`` /
``usage.csv`` (every LLM call of the run: embeddings, cluster labels, annotation), ``question.jsonl`` (select), ``report/`` (report).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from arena.errors import InputError
from arena.io.jsonl import read_jsonl, write_json, write_jsonl
from benchbuilder.config import BuildConfig

Log = Callable[[str], None]


def _noop(msg: str) -> None:
    pass


def _new_ledger() -> Any:
    from arena.llm.cost import UsageLedger

    return UsageLedger()


@dataclass
class Pipeline:
    config: BuildConfig
    log: Log = _noop
    # One ledger per run: every client this pipeline makes (embeddings, cluster labels,
    # annotation) accounts into it, so usage.csv holds every call of the run.
    ledger: Any = field(default_factory=_new_ledger)

    @property
    def out(self) -> Path:
        return Path(self.config.output)

    # ------------------------------------------------------------------ collaborators
    def client(self, retry_failed: bool = False, gate: Any = None):
        from arena.llm import LLMClient, ResponseCache, load_endpoints
        from arena.llm.endpoints import parse_endpoints

        c = self.config
        eps: dict[str, Any] = {}
        if c.endpoints_file:
            eps.update(load_endpoints(c.endpoints_file))
        if c.endpoints:
            eps.update(parse_endpoints(c.endpoints, source="config:endpoints"))
        cache = ResponseCache(c.llm_cache or self.out / "llm_cache.sqlite")
        return LLMClient(eps, cache, retry_failed=retry_failed, ledger=self.ledger, gate=gate)

    def write_usage(self) -> None:
        """``usage.csv``: this run's calls so far, every stage and endpoint."""
        if self.ledger.totals:
            self.out.mkdir(parents=True, exist_ok=True)
            self.ledger.to_frame().to_csv(self.out / "usage.csv", index=False)

    def backend(self, n: int | None = None) -> str:
        """The embedding backend: as configured, or for ``auto`` by corpus size, decided once at
        ingest (``ingest.json``) so that every later stage embeds with the same model."""
        e = self.config.embedding
        if e.backend != "auto":
            return e.backend
        if n is None and getattr(self, "backend_", None):
            return self.backend_
        if n is None:
            info = self.out / "ingest.json"
            saved = json.loads(info.read_text()).get("embedding_backend") if info.exists() else None
            if saved:
                return saved
            n = len(self.prompts())
        return "minilm" if n <= e.static_above else "model2vec"

    def embedder(self, client: Any = None):
        from benchbuilder.embed import CachedEmbedder, EmbeddingCache, Model2VecEmbedder, OpenAIEmbedder, SentenceTransformerEmbedder

        e = self.config.embedding
        backend = self.backend()
        if backend == "model2vec":
            backend = Model2VecEmbedder(e.model_dir, pca_dims=e.pca_dims)
        elif backend == "minilm":
            backend = SentenceTransformerEmbedder(max_seq_length=e.max_seq_length, batch_size=e.batch_size)
        else:
            if not e.endpoint:
                raise InputError("the openai backend needs embedding.endpoint", field="embedding.endpoint")
            backend = OpenAIEmbedder(client or self.client(), e.endpoint, batch_size=e.batch_size)
        return CachedEmbedder(backend, EmbeddingCache(e.cache))

    def topic_model(self, client: Any = None):
        from benchbuilder.cluster import HDBSCANParams, LLMLabeller, TopicModel, UMAPParams

        c = self.config.clustering
        labeller = categoriser = None
        if c.labeller == "llm":
            if not c.label_endpoint:
                raise InputError("labeller: llm needs clustering.label_endpoint", field="clustering.label_endpoint")
            labeller = LLMLabeller(client or self.client(), c.label_endpoint)
            # a client of its own: the topic labeller closes its client when done
            categoriser = LLMLabeller(self.client(), c.label_endpoint, template="benchbuilder_category_label", stage="category_label", n_examples=40, example_chars=80)
        # words are embedded on the driver with the run's own embedder (cached), so both engines
        # rank keywords identically
        return TopicModel(umap=UMAPParams(**c.reducer), hdbscan=HDBSCANParams(**c.hdbscan), outlier_strategy=c.outlier_strategy, fit_sample=c.fit_sample,
                          labeller=labeller, seed=c.seed, embed_words=self.embedder().embed if c.keywords == "mmr" else None,
                          categories=tuple(c.categories) if c.categories else None, category_labeller=categoriser)

    # ------------------------------------------------------------------ stages
    def ingest(self) -> dict[str, Any]:
        from benchbuilder.filters import ExactDedup, LanguageFilter, MinHashDedup, run_filters
        from benchbuilder.ingest import DropLog, FieldMap, IngestOptions, read_prompts

        c = self.config
        opts = IngestOptions(
            fields=FieldMap(**{k: v for k, v in c.input.fields.items()}), multi_turn=c.input.multi_turn, max_chars=c.input.max_chars,
            max_bytes=c.input.max_bytes, format=c.input.format, hf_split=c.input.hf_split, hf_config=c.input.hf_config, limit=c.input.limit,
        )
        drops = DropLog()
        records = []
        for p in c.input.paths:
            recs = read_prompts(p, opts, drops)
            self.log(f"read {len(recs)} prompts from {p}")
            records += recs
        n_read = len(records) + len(drops.drops)
        # Source ids must be unique across files: later clashes get their file and line appended.
        seen: set[str] = set()
        for r in records:
            if r.source_id in seen:
                r.source_id = f"{r.source_id}@{Path(r.source).name}:{r.line}"
            seen.add(r.source_id)
        filters = []
        if c.filters.languages:
            filters.append(LanguageFilter(keep=tuple(c.filters.languages)))
        if c.filters.exact_dedup:
            filters.append(ExactDedup())
        if c.filters.near_dedup:
            filters.append(MinHashDedup(threshold=c.filters.near_dedup_threshold))
        if n_read == 0:
            # A failed run never overwrites earlier outputs with nothing.
            raise InputError("the input holds no prompts; earlier outputs were left as they are", path=", ".join(map(str, c.input.paths)), field="input.paths")
        return self.finish_ingest(run_filters(records, filters, drops), drops, n_read)

    def finish_ingest(self, records: list[Any], drops: Any, n_read: int) -> dict[str, Any]:
        """The end of ingest on either engine: the contamination gate, then ``prompts.jsonl``,
        ``drops.jsonl`` and ``ingest.json``; no survivor is an error that leaves earlier
        outputs as they are."""
        records = self.gate(records, drops)
        if not records:
            raise InputError(f"no prompt survived ingestion ({n_read} read, dropped: {dict(drops.counts())}); earlier outputs were left as they are",
                             path=", ".join(map(str, self.config.input.paths)), field="input.paths")
        self.out.mkdir(parents=True, exist_ok=True)
        write_jsonl(self.out / "prompts.jsonl", (r.to_dict() for r in records))
        write_jsonl(self.out / "drops.jsonl", (d.to_dict() for d in drops.drops))
        summary = {"read": n_read, "kept": len(records), "dropped": drops.counts(), "embedding_backend": self.backend_}
        write_json(self.out / "ingest.json", summary)
        return summary

    def embed_texts(self, texts: list[str], *, postprocess: bool = True) -> np.ndarray:
        return self.embedder().embed(texts, postprocess=postprocess)

    def gate(self, records: list[Any], drops: Any) -> list[Any]:
        """The contamination gate over the filtered prompts: flags go to ``contamination.jsonl``
        and ``contamination.json``; with ``action: drop`` flagged prompts are dropped (reason
        ``contaminated``)."""
        from benchbuilder.contamination import CALIBRATED_THRESHOLDS, DEFAULT_REFERENCES, flag, load_references, reference_label

        self.backend_ = self.backend(len(records))
        g = self.config.contamination
        if not g.enabled or not records:
            return records
        root = Path(__file__).resolve().parents[1]
        defaults = g.references is None
        paths = [str(root / p) for p in DEFAULT_REFERENCES] if defaults else list(g.references)
        refs = load_references(paths, defaults=defaults, warn=self.log) + load_references(g.extra_references, defaults=False, warn=self.log)
        if not refs:
            return records
        threshold = g.threshold if g.threshold is not None else CALIBRATED_THRESHOLDS[self.backend_]
        x = self.embed_texts([r.prompt for r in records], postprocess=False)
        ref_x = self.embed_texts([r.text for r in refs], postprocess=False)
        flags = flag([r.source_id for r in records], [r.prompt for r in records], x, refs, ref_x, threshold, lexical=g.lexical)
        self.out.mkdir(parents=True, exist_ok=True)
        write_jsonl(self.out / "contamination.jsonl", (f.to_dict() for f in flags))
        by_ref: dict[str, int] = {}
        for f in flags:
            by_ref[f.reference] = by_ref.get(f.reference, 0) + 1
        write_json(self.out / "contamination.json", {"checked": len(records), "flagged": len(flags), "threshold": threshold, "lexical": g.lexical,
                                                     "action": g.action, "references": len(refs), "flagged_by_reference": by_ref})
        self.log(f"contamination gate: {len(flags)} of {len(records)} prompts within {threshold} of {len(refs)} benchmark prompts ({g.action})")
        if g.action == "keep" or not flags:
            return records
        hit = {f.source_id: f for f in flags}
        for r in records:
            if r.source_id in hit:
                f = hit[r.source_id]
                drops.add("contaminated", r.source, r.line, r.source_id, f"{f.similarity} {reference_label(f.reference, f.reference_id)}")
        return [r for r in records if r.source_id not in hit]

    def prompts(self) -> dict[str, dict[str, Any]]:
        path = self.out / "prompts.jsonl"
        if not path.exists():
            raise InputError("no prompts yet: run the ingest stage first", path=str(path))
        recs = {str(r["source_id"]): r for _, r in read_jsonl(path)}
        if not recs:
            raise InputError("no prompts in this file: run the ingest stage again", path=str(path))
        return recs

    def embed(self) -> np.ndarray:
        recs = self.prompts()
        emb = self.embedder()
        x = emb.embed([r["prompt"] for r in recs.values()])
        self.log(f"embedded {len(recs)} prompts with {emb.name} ({emb.cache_hits_} cached, {emb.computed_} computed)")
        return x

    def cluster(self) -> dict[str, Any]:
        from benchbuilder.cluster import save_topic_model

        recs = self.prompts()
        ids = list(recs)
        x = self.embed()
        tm = self.topic_model().fit([recs[i]["prompt"] for i in ids], x)
        st = save_topic_model(self.out / "clusters.jsonl", ids, tm)
        self.log(f"{st.n_topics} topics, largest {st.largest_share:.1%}, outliers before reduction {st.outlier_share_before:.1%}")
        self.write_usage()
        return st.to_dict()

    def annotate(self, *, retry_failed: bool | None = None, progress: Callable[[Any], None] | None = None) -> dict[str, Any]:
        import asyncio

        from benchbuilder.annotate import AnnotationStage, apply_thresholds
        from benchbuilder.cluster import load_assignments

        c = self.config
        retry = c.annotation.retry_failed if retry_failed is None else retry_failed
        if not c.annotation.stages:
            raise InputError("no annotation stages configured", field="annotation.stages")
        recs = self.prompts()
        clusters, _ = load_assignments(self.out / "clusters.jsonl")
        client = self.client(retry_failed=retry)
        client.check_keys(s.endpoint for s in c.annotation.stages)
        alive = [sid for sid in recs if sid in clusters]
        summary: dict[str, Any] = {"stages": []}

        async def run_all() -> None:
            nonlocal alive
            try:
                for sc in c.annotation.stages:
                    stage = AnnotationStage(**sc.model_dump())
                    res, requests = await self.annotate_stage(client, stage, {sid: recs[sid]["prompt"] for sid in alive}, retry, progress)
                    kept, means, drops = apply_thresholds(res, clusters, stage)
                    info = {"stage": stage.name, "endpoint": stage.endpoint, "input": len(alive), "requests": requests, "annotated_ok": sum(a.status == "ok" for a in res.values()), "kept": len(kept), "dropped": drops, "clusters_kept": len({clusters[s] for s in kept})}
                    self.log(f"stage {stage.name}: {info}")
                    summary["stages"].append(info)
                    alive = kept
            finally:
                await client.aclose()

        asyncio.run(run_all())
        summary["survivors"] = alive
        write_json(self.out / "annotation.json", summary)
        self.write_usage()
        summary["usage"] = self.ledger.to_frame()
        return summary

    async def annotate_stage(self, client: Any, stage: Any, prompts: dict[str, str], retry: bool, progress: Callable[[Any], None] | None) -> tuple[dict[str, Any], int]:
        """One stage's annotations of ``prompts`` (resumed from its file) and the calls it asked."""
        from benchbuilder.annotate import Annotator

        ann = Annotator(client, stage, self.out / "annotations" / f"{stage.name}.jsonl", retry=retry)
        res = await ann.arun(prompts, progress)
        return res, ann.requests_

    def _final_annotations(self):
        from benchbuilder.annotate import load_annotations

        stages = self.config.annotation.stages
        last = load_annotations(self.out / "annotations" / f"{stages[-1].name}.jsonl") if stages else {}
        first = load_annotations(self.out / "annotations" / f"{stages[0].name}.jsonl") if stages else {}
        return first, last

    def select(self) -> Path:
        from benchbuilder.cluster import load_assignments, load_categories
        from benchbuilder.select import Candidate, sample_evenly, write_questions

        s = self.config.selection
        recs = self.prompts()
        clusters, labels = load_assignments(self.out / "clusters.jsonl")
        summ_path = self.out / "annotation.json"
        if self.config.annotation.stages:
            if not summ_path.exists():
                raise InputError("no annotation results: run the annotate stage first", path=str(summ_path))
            survivors = json.loads(summ_path.read_text())["survivors"]
        else:
            survivors = [sid for sid in recs if sid in clusters]
        _, last = self._final_annotations()
        cands = [
            Candidate(sid, recs[sid]["prompt"], clusters[sid], last[sid].score if sid in last else None, last[sid].criteria if sid in last else None, recs[sid]["source"])
            for sid in survivors
        ]
        chosen = sample_evenly(cands, s.n, np.random.default_rng(s.seed), prefer_high_score=s.prefer_high_score)
        path = write_questions(self.out / "question.jsonl", chosen, labels, s.category, load_categories(self.out / "clusters.jsonl"))
        self.log(f"selected {len(chosen)} prompts from {len({c.cluster for c in chosen})} clusters -> {path}")
        return path

    def report(self) -> dict[str, Path]:
        from benchbuilder.cluster import load_assignments
        from benchbuilder.report import cluster_table, hierarchy_table, read_contamination_table, write_report

        recs = self.prompts()
        clusters, labels = load_assignments(self.out / "clusters.jsonl")
        first, _ = self._final_annotations()
        ok = {sid: a for sid, a in first.items() if a.status == "ok"}
        meta = json.loads((self.out / "topics.json").read_text())
        examples = {int(k): v for k, v in meta.get("examples", {}).items()}
        table = cluster_table(clusters, labels, {k: v["prompt"] for k, v in recs.items()}, {k: a.score for k, a in ok.items()}, examples=examples)
        extra: dict[str, object] = {}
        if (self.out / "ingest.json").exists():
            extra["ingest"] = json.loads((self.out / "ingest.json").read_text())
        if "stats" in meta:
            extra["clustering"] = meta["stats"]
        if first:
            extra["annotation stage used for Table 1 / Figure 2"] = self.config.annotation.stages[0].name
        sections = []
        hierarchy = meta.get("hierarchy") or {}
        if hierarchy.get("categories"):
            n = sum(k != "-1" for k in hierarchy["categories"])
            sections.append((f"Topic hierarchy: {n} broad categories and their topics",
                             hierarchy_table(hierarchy, labels, path=str(self.out / "topics.json"))))
        cont = self.out / "contamination.json"
        if cont.exists():
            summ = json.loads(cont.read_text())
            extra["contamination gate"] = {"flagged": f"{summ['flagged']} of {summ['checked']} prompts", "rule": f"cosine ≥ {summ['threshold']} or word overlap ≥ {summ['lexical']}",
                                           "action": summ["action"], "benchmark prompts": summ["references"], "flagged by reference": summ["flagged_by_reference"]}
            flags = read_contamination_table(self.out / "contamination.jsonl")
            if len(flags):
                sections.append(("Contamination gate: flagged prompts and their nearest benchmark prompts", flags.head(50)))
        return write_report(self.out / "report", table, [a.criteria for a in ok.values()], extra, sections)

    def build(self, progress: Callable[[Any], None] | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"ingest": self.ingest(), "cluster": self.cluster()}
        if self.config.annotation.stages:
            out["annotate"] = self.annotate(progress=progress)
        out["questions"] = self.select()
        out["report"] = self.report()
        return out


def make_pipeline(config: BuildConfig, engine: str | None = None, address: str | None = None, log: Log = _noop) -> Pipeline:
    """The pipeline for ``engine`` (default: the config's ``engine.kind``); Ray is imported only
    when asked for."""
    kind = engine or config.engine.kind
    if address is not None:
        config = config.model_copy(update={"engine": config.engine.model_copy(update={"address": address})})
    if kind == "ray":
        from benchbuilder.ray_engine import RayPipeline

        return RayPipeline(config, log=log)
    if kind != "local":
        raise InputError(f"unknown engine '{kind}' (local | ray)", field="--engine")
    return Pipeline(config, log=log)
