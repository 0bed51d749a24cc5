"""The `benchbuilder` command line: the whole pipeline (`build`) or one stage at a time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer

from arena.console import clip, cli_errors, fail, make_console
from arena.errors import InputError

app = typer.Typer(help="Curate a hard, diverse prompt set from crowdsourced prompts.", no_args_is_help=True)
CONFIG = typer.Option(..., "--config", "-c", help="Curation config (YAML).")
ENGINE = typer.Option(None, "--engine", help="local | ray (default: the config's engine.kind, else local).")
ADDRESS = typer.Option(None, "--address", help="Ray cluster: auto, HOST:PORT or ray://HOST:PORT (default: a local cluster for the run).")


@app.callback()
def main() -> None:
    """BenchBuilder curation pipeline."""


def _pipeline(config: Path, engine: Optional[str] = None, address: Optional[str] = None):
    from benchbuilder.config import load_config
    from benchbuilder.pipeline import make_pipeline

    # log lines carry prompts and paths (data): printed without markup
    return make_pipeline(load_config(config), engine, address, log=lambda m: _out().print(clip(m, 2000), style="dim", highlight=False))


def _con():
    """stderr console (progress, errors), built per use (no module-level console)."""
    return make_console(stderr=True)


def _out():
    """stdout console for results and the pipeline's narrative: stderr carries only progress
    bars and errors, so bad input is the one line there."""
    return make_console(wide=True)


def _exit_if_calls_failed(p) -> None:
    """A finished run with failed calls (recorded as failures) ends with exit 1; bad input is 2."""
    from arena.console import EXIT_CALLS_FAILED

    calls = sum(t.calls for t in p.ledger.totals.values())
    failed = sum(t.failures for t in p.ledger.totals.values())
    if failed:
        _con().print(f"{failed} of {calls} calls failed; rerun with --retry-failed", markup=False, highlight=False)
        raise typer.Exit(code=EXIT_CALLS_FAILED)


def _progress():
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=_con())


@app.command()
@cli_errors()
def ingest(config: Path = CONFIG, engine: Optional[str] = ENGINE, address: Optional[str] = ADDRESS) -> None:
    """Read, language-filter and de-duplicate prompts; every drop is counted by reason."""
    try:
        s = _pipeline(config, engine, address).ingest()
    except InputError as exc:
        fail(exc)
    _out().print_json(json.dumps(s))


@app.command()
@cli_errors()
def embed(config: Path = CONFIG, engine: Optional[str] = ENGINE, address: Optional[str] = ADDRESS) -> None:
    """Embed the ingested prompts (cached on disk by text hash)."""
    try:
        x = _pipeline(config, engine, address).embed()
    except InputError as exc:
        fail(exc)
    _out().print(f"embeddings: {x.shape}")


@app.command()
@cli_errors()
def cluster(config: Path = CONFIG, show: int = typer.Option(20, help="Topics to print."), engine: Optional[str] = ENGINE, address: Optional[str] = ADDRESS) -> None:
    """Topic clustering (BERTopic: UMAP + HDBSCAN), outlier reduction and labels."""
    try:
        p = _pipeline(config, engine, address)
        st = p.cluster()
    except InputError as exc:
        fail(exc)
    _out().print_json(json.dumps(st))
    _print_topics(p, show)


def _print_topics(p, show: int) -> None:
    from benchbuilder.cluster import load_assignments
    from benchbuilder.report import cluster_table

    clusters, labels = load_assignments(p.out / "clusters.jsonl")
    recs = p.prompts()
    meta = json.loads((p.out / "topics.json").read_text())
    t = cluster_table(clusters, labels, {k: v["prompt"] for k, v in recs.items()}, {}, examples={int(k): v for k, v in meta.get("examples", {}).items()})
    from rich.table import Table

    table = Table("topic", "label", "size", "examples")
    for r in t.head(show).itertuples():
        table.add_row(str(r.cluster), clip(r.label), str(r.size), clip(r.examples, 500))
    _out().print(table)


@app.command()
@cli_errors()
def annotate(
    config: Path = CONFIG,
    retry_failed: Optional[bool] = typer.Option(None, "--retry-failed/--no-retry-failed", help="Re-ask failed and malformed annotations."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print calls and cost of the first stage; call nothing."),
    engine: Optional[str] = ENGINE,
    address: Optional[str] = ADDRESS,
) -> None:
    """Multi-stage seven-criteria annotation; resumable and cost-tracked."""
    try:
        p = _pipeline(config, engine, address)
        if dry_run:
            from benchbuilder.annotate import AnnotationStage, Annotator

            sc = p.config.annotation.stages[0]
            client = p.client()
            reqs, _ = Annotator(client, AnnotationStage(**sc.model_dump()), p.out / "annotations" / f"{sc.name}.jsonl").plan({k: v["prompt"] for k, v in p.prompts().items()})
            _out().print(client.estimate(reqs).to_frame().to_string(index=False), markup=False, highlight=False)
            return
        if not p.config.annotation.stages:  # before the progress bar: the error stays the only line
            raise InputError("no annotation stages configured", path=str(config), field="annotation.stages")
        with _progress() as prog:
            task = prog.add_task("annotating", total=None)
            s = p.annotate(retry_failed=retry_failed, progress=lambda r: prog.advance(task))
    except InputError as exc:
        fail(exc)
    for st in s["stages"]:
        _out().print(st, markup=False, highlight=False)
    _out().print(s["usage"].to_string(index=False), markup=False, highlight=False)
    _exit_if_calls_failed(p)


@app.command()
@cli_errors()
def select(config: Path = CONFIG) -> None:
    """Sample N prompts evenly across surviving clusters -> question.jsonl (arena-hard schema)."""
    try:
        path = _pipeline(config).select()
    except InputError as exc:
        fail(exc)
    _out().print(str(path))


@app.command()
@cli_errors()
def report(config: Path = CONFIG) -> None:
    """Cluster table, quality shares (Table 1), topic hierarchy, contamination flags and the mean score
    per cluster chart (Figure 2): report/index.html (open it in a browser) and report/report.md."""
    try:
        paths = _pipeline(config).report()
    except InputError as exc:
        fail(exc)
    for k, v in paths.items():
        _out().print(f"{k}: {v}")


@app.command()
@cli_errors()
def build(config: Path = CONFIG, engine: Optional[str] = ENGINE, address: Optional[str] = ADDRESS) -> None:
    """The whole pipeline: ingest, embed, cluster, annotate, select, report (``--engine ray``: on Ray Data)."""
    try:
        p = _pipeline(config, engine, address)
        with _progress() as prog:
            task = prog.add_task("annotating", total=None)
            out = p.build(progress=lambda r: prog.advance(task))
    except InputError as exc:
        fail(exc)
    _out().print_json(json.dumps({"ingest": out["ingest"], "cluster": out["cluster"], "questions": str(out["questions"]),
                                  "report": str(out["report"]["html"])}))
    _exit_if_calls_failed(p)


@app.command()
@cli_errors()
def validate(
    target: Path = typer.Option(..., help="Annotations (jsonl) of the annotator to validate."),
    others: List[Path] = typer.Option(..., "--other", help="Annotations of the reference annotators (majority vote)."),
) -> None:
    """Accuracy of one annotator vs the majority of others, per criterion and overall."""
    from benchbuilder.annotate import annotator_accuracy, load_annotations, ok_criteria

    for p in (target, *others):  # load_annotations reads a missing log as empty (a stage not run yet); here it is a typo
        if not p.exists():
            raise InputError("no such file", path=str(p))
    try:
        res = annotator_accuracy(ok_criteria(load_annotations(target).values()), [ok_criteria(load_annotations(o).values()) for o in others])
    except (InputError, ValueError) as exc:
        fail(exc)
    from rich.table import Table

    table = Table("criterion", "accuracy")
    for k, v in res["per_criterion"].items():
        table.add_row(clip(k), f"{v:.3f}")
    table.add_row("overall", f"{res['overall']:.3f}")
    table.add_row("exact match", f"{res['exact_match']:.3f}")
    _out().print(table)
    _out().print(f"prompts: {res['n_prompts']}, reference annotators: {res['n_others']}")


if __name__ == "__main__":
    app()
