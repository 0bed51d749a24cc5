"""The curation config (YAML): it only picks and parameterises the pipeline's collaborators.

Relative paths are taken from the current directory (run from the repository root).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from arena.io.configfile import read_yaml, validation_error


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InputConfig(_M):
    paths: list[str]
    format: Literal["auto", "jsonl", "json", "csv", "parquet", "hf"] = "auto"
    fields: dict[str, str | None] = Field(default_factory=dict, description="prompt, conversation, id, role, content")
    multi_turn: Literal["first", "concat"] = "first"
    max_chars: int = 8000
    max_bytes: int = 1_000_000
    hf_split: str = "train"
    hf_config: str | None = None
    limit: int | None = None


class FilterConfig(_M):
    languages: list[str] | None = ["en"]
    exact_dedup: bool = True
    near_dedup: bool = True
    near_dedup_threshold: float = 0.8


class EmbeddingConfig(_M):
    # auto: all-MiniLM-L6-v2 up to `static_above` prompts (partner recall@10 on arena-hard v0.1
    # 46.6%; ~60 prompts/s on 2 cores, so 20k prompts in ~6 min), the static model2vec table
    # above (33.0%, ~70x faster: 1M prompts in ~4 min instead of ~5 h); bench/embedding_quality.py
    backend: Literal["auto", "model2vec", "minilm", "openai"] = "auto"
    static_above: int = Field(default=20_000, ge=0)
    cache: str = ".cache/benchbuilder/embeddings.sqlite"
    model_dir: str = ".cache/benchbuilder/models"
    pca_dims: int = 256
    max_seq_length: int = 256
    batch_size: int = 64
    endpoint: str | None = None


class ContaminationConfig(_M):
    """The freshness and contamination gate (see benchbuilder/contamination.py)."""

    enabled: bool = True
    # None: arena-hard v0.1/v2.0, MT-bench and AlpacaEval from ../shared/data/prompts (skipped
    # with a warning where absent); a list replaces them (add an earlier question.jsonl here)
    references: list[str] | None = None
    extra_references: list[str] = Field(default_factory=list)
    # None: the value calibrated for the embedding backend (bench/contamination_gate.py)
    threshold: float | None = Field(default=None, gt=0, le=1)
    lexical: float | None = Field(default=0.6, gt=0, le=1, description="word-set Jaccard with one of the 5 nearest references; null turns the lexical leg off")
    action: Literal["drop", "keep"] = "drop"


class ClusterConfig(_M):
    reducer: dict[str, Any] = Field(default_factory=dict)
    hdbscan: dict[str, Any] = Field(default_factory=dict)
    outlier_strategy: Literal["embeddings", "none"] = "embeddings"
    fit_sample: int | None = 50_000
    labeller: Literal["keywords", "llm"] = "keywords"
    label_endpoint: str | None = None
    seed: int = 0
    # mmr: KeyBERT-style keywords (top c-TF-IDF words reordered by MMR over their embeddings);
    # ctfidf: c-TF-IDF order
    keywords: Literal["mmr", "ctfidf"] = "mmr"
    # broad categories over the topics: the count is chosen in [min, max] by silhouette; null: none
    categories: tuple[int, int] | None = (8, 25)

    @field_validator("categories")
    @classmethod
    def _range(cls, v: tuple[int, int] | None) -> tuple[int, int] | None:
        if v is not None and not 2 <= v[0] <= v[1]:
            raise ValueError(f"need 2 <= min <= max, got {list(v)}")
        return v


class StageConfig(_M):
    name: str
    endpoint: str
    min_score: float = 0.0
    min_cluster_mean: float = 0.0
    template: str = "benchbuilder_annotate"
    params: dict[str, Any] = Field(default_factory=dict)


class AnnotationConfig(_M):
    stages: list[StageConfig] = Field(default_factory=list)
    retry_failed: bool = False


class SelectionConfig(_M):
    n: int = 500
    seed: int = 0
    # null: each prompt's broad topic category (the topic itself goes to `subcategory`); a
    # string: this one category for every prompt
    category: str | None = None
    prefer_high_score: bool = True


class EngineConfig(_M):
    """Where the pipeline runs. ``local``: this process. ``ray``: Ray Data on the cluster at
    ``address`` (``auto``: a running cluster; ``ray://HOST:PORT``: Ray Client; unset: a local
    cluster started for the run with ``num_cpus`` CPUs)."""

    kind: Literal["local", "ray"] = "local"
    address: str | None = None
    num_cpus: int | None = Field(default=None, ge=1)
    block_size: int = Field(default=20_000, ge=1, description="prompts per Ray block (read, filter, embed, annotate shards)")
    embed_actors: int = Field(default=1, ge=1)
    annotate_actors: int = Field(default=2, ge=1)
    object_store_mb: int = Field(default=2_000, ge=100, description="object store of a cluster started for the run")


class BuildConfig(_M):
    output: str = "runs/benchbuilder"
    input: InputConfig
    filters: FilterConfig = Field(default_factory=FilterConfig)
    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    clustering: ClusterConfig = Field(default_factory=ClusterConfig)
    contamination: ContaminationConfig = Field(default_factory=ContaminationConfig)
    annotation: AnnotationConfig = Field(default_factory=AnnotationConfig)
    selection: SelectionConfig = Field(default_factory=SelectionConfig)
    engine: EngineConfig = Field(default_factory=EngineConfig)
    endpoints: dict[str, Any] | None = None
    endpoints_file: str | None = None
    llm_cache: str | None = None  # default: <output>/llm_cache.sqlite


def load_config(path: str | Path) -> BuildConfig:
    raw = read_yaml(path)
    try:
        cfg = BuildConfig(**raw)
    except ValidationError as exc:
        raise validation_error(exc, path, model=BuildConfig) from None
    if cfg.endpoints:
        # checked now (zero concurrency, negative timeouts, unknown keys), not at the first call
        from arena.llm.endpoints import parse_endpoints

        parse_endpoints(cfg.endpoints, source=str(path))
    return cfg
