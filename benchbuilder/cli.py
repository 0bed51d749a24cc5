"""The `benchbuilder` command line: the whole pipeline (`build`) or one stage at a time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from arena.errors import InputError

app = typer.Typer(help="Curate a hard, diverse prompt set from crowdsourced prompts.", no_args_is_help=True)
console = Console(stderr=True)
CONFIG = typer.Option(..., "--config", "-c", help="Curation config (YAML).")


@app.callback()
def main() -> None:
    """BenchBuilder curation pipeline."""


def _pipeline(config: Path):
    from benchbuilder.config import load_config
    from benchbuilder.pipeline import Pipeline

    return Pipeline(load_config(config), log=lambda m: console.print(f"[dim]{m}[/dim]"))


def _fail(exc: Exception) -> None:
    console.print(f"[red]error:[/red] {exc}")
    raise typer.Exit(2)


def _progress():
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console)


@app.command()
def ingest(config: Path = CONFIG) -> None:
    """Read, language-filter and de-duplicate prompts; every drop is counted by reason."""
    try:
        s = _pipeline(config).ingest()
    except InputError as exc:
        _fail(exc)
    console.print_json(json.dumps(s))


@app.command()
def embed(config: Path = CONFIG) -> None:
    """Embed the ingested prompts (cached on disk by text hash)."""
    try:
        x = _pipeline(config).embed()
    except InputError as exc:
        _fail(exc)
    console.print(f"embeddings: {x.shape}")


@app.command()
def cluster(config: Path = CONFIG, show: int = typer.Option(20, help="Topics to print.")) -> None:
    """Topic clustering (BERTopic: UMAP + HDBSCAN), outlier reduction and labels."""
    try:
        p = _pipeline(config)
        st = p.cluster()
    except InputError as exc:
        _fail(exc)
    console.print_json(json.dumps(st))
    _print_topics(p, show)


def _print_topics(p, show: int) -> None:
    from benchbuilder.cluster import load_assignments
    from benchbuilder.report import cluster_table

    clusters, labels = load_assignments(p.out / "clusters.jsonl")
    recs = p.prompts()
    meta = json.loads((p.out / "topics.json").read_text())
    t = cluster_table(clusters, labels, {k: v["prompt"] for k, v in recs.items()}, {}, examples={int(k): v for k, v in meta.get("examples", {}).items()})
    table = Table("topic", "label", "size", "examples")
    for r in t.head(show).itertuples():
        table.add_row(str(r.cluster), r.label, str(r.size), r.examples)
    console.print(table)


@app.command()
def annotate(
    config: Path = CONFIG,
    retry_failed: Optional[bool] = typer.Option(None, "--retry-failed/--no-retry-failed", help="Re-ask failed and malformed annotations."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print calls and cost of the first stage; call nothing."),
) -> None:
    """Multi-stage seven-criteria annotation; resumable and cost-tracked."""
    try:
        p = _pipeline(config)
        if dry_run:
            from benchbuilder.annotate import AnnotationStage, Annotator

            sc = p.config.annotation.stages[0]
            client = p.client()
            reqs, _ = Annotator(client, AnnotationStage(**sc.model_dump()), p.out / "annotations" / f"{sc.name}.jsonl").plan({k: v["prompt"] for k, v in p.prompts().items()})
            console.print(client.estimate(reqs).to_frame().to_string(index=False))
            return
        with _progress() as prog:
            task = prog.add_task("annotating", total=None)
            s = p.annotate(retry_failed=retry_failed, progress=lambda r: prog.advance(task))
    except InputError as exc:
        _fail(exc)
    for st in s["stages"]:
        console.print(st)
    console.print(s["usage"].to_string(index=False))


@app.command()
def select(config: Path = CONFIG) -> None:
    """Sample N prompts evenly across surviving clusters -> question.jsonl (arena-hard schema)."""
    try:
        path = _pipeline(config).select()
    except InputError as exc:
        _fail(exc)
    console.print(str(path))


@app.command()
def report(config: Path = CONFIG) -> None:
    """Cluster table, quality shares (Table 1) and mean score per cluster chart (Figure 2)."""
    try:
        paths = _pipeline(config).report()
    except InputError as exc:
        _fail(exc)
    for k, v in paths.items():
        console.print(f"{k}: {v}")


@app.command()
def build(config: Path = CONFIG) -> None:
    """The whole pipeline: ingest, embed, cluster, annotate, select, report."""
    try:
        p = _pipeline(config)
        with _progress() as prog:
            task = prog.add_task("annotating", total=None)
            out = p.build(progress=lambda r: prog.advance(task))
    except InputError as exc:
        _fail(exc)
    console.print_json(json.dumps({"ingest": out["ingest"], "cluster": out["cluster"], "questions": str(out["questions"])}))


@app.command()
def validate(
    target: Path = typer.Option(..., help="Annotations (jsonl) of the annotator to validate."),
    others: List[Path] = typer.Option(..., "--other", help="Annotations of the reference annotators (majority vote)."),
) -> None:
    """Accuracy of one annotator vs the majority of others, per criterion and overall."""
    from benchbuilder.annotate import annotator_accuracy, load_annotations, ok_criteria

    try:
        res = annotator_accuracy(ok_criteria(load_annotations(target).values()), [ok_criteria(load_annotations(o).values()) for o in others])
    except (InputError, ValueError) as exc:
        _fail(exc)
    table = Table("criterion", "accuracy")
    for k, v in res["per_criterion"].items():
        table.add_row(k, f"{v:.3f}")
    table.add_row("overall", f"{res['overall']:.3f}")
    table.add_row("exact match", f"{res['exact_match']:.3f}")
    console.print(table)
    console.print(f"prompts: {res['n_prompts']}, reference annotators: {res['n_others']}")


if __name__ == "__main__":
    app()
