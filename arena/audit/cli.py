"""`arena audit ...` and `arena import ...` commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from arena.errors import InputError

audit_app = typer.Typer(help="Audit benchmarks and judges.", no_args_is_help=True)
import_app = typer.Typer(help="Import judgments from other tools.", no_args_is_help=True)

console = Console()


def _fail(exc: Exception) -> None:
    console.print(f"[red]error:[/red] {exc}")
    raise typer.Exit(code=2)


def _fmt(v) -> str:
    return f"{v:.4f}" if isinstance(v, float) else str(v)


@audit_app.command("benchmark")
def benchmark_cmd(
    scores: Path = typer.Option(..., "--scores", help="Leaderboard JSONL: model, score, lower, upper[, results]."),
    reference: Path = typer.Option(..., "--reference", help="Human-preference CSV: model, rating, lower, upper."),
    names: Optional[Path] = typer.Option(None, "--names", help="JSON map from benchmark names to reference names."),
    ci: float = typer.Option(0.95, "--ci", help="CI level used with bootstrap replicates."),
    output: Optional[Path] = typer.Option(None, "--output", help="Write the metrics as JSON."),
    random_baseline: int = typer.Option(0, "--random-baseline", help="K random prompt subsets of the benchmark's size from --pool."),
    pool: Optional[list[Path]] = typer.Option(None, "--pool", help="Judgment dirs (or AlpacaEval preference CSV) holding the prompt pool."),
    subset_size: int = typer.Option(0, "--subset-size", help="Prompts per random subset (default: all prompts of the pool / the benchmark)."),
    rounds: int = typer.Option(100, "--rounds", help="Bootstrap rounds for each random subset."),
    seed: int = typer.Option(0, "--seed"),
) -> None:
    """Separability, agreement (paper / reference variants), Brier, Spearman, Kendall vs a human reference."""
    from arena.audit.benchmark import BenchmarkAudit, audit_benchmark
    from arena.audit.io import read_names, read_reference, read_scores

    try:
        score_frame = read_scores(scores)
        ref = read_reference(reference)
        mapping = read_names(names)
        result = audit_benchmark(score_frame, ref, mapping, ci=ci)
        columns = {"benchmark": result.to_dict()}
        if random_baseline:
            if not pool:
                raise InputError("--random-baseline needs --pool", field="pool")
            from arena.audit.random_baseline import random_subset_audits

            frame = random_subset_audits(
                pool, ref, mapping, k=random_baseline, subset_size=subset_size or None, rounds=rounds, ci=ci, seed=seed
            )
            columns["random_mean"] = frame[list(BenchmarkAudit.METRICS)].mean().to_dict()
            columns["random_sd"] = frame[list(BenchmarkAudit.METRICS)].std(ddof=1).to_dict()
    except InputError as exc:
        _fail(exc)
    table = Table(title=f"Benchmark audit: {result.n_models} models, {result.n_pairs} pairs")
    table.add_column("metric")
    for name in columns:
        table.add_column(name, justify="right")
    for metric in ("n_models", "n_pairs", *BenchmarkAudit.METRICS):
        table.add_row(metric, *(_fmt(columns[c].get(metric, "")) for c in columns))
    console.print(table)
    if result.unmatched_benchmark:
        console.print(f"unmatched benchmark models ({len(result.unmatched_benchmark)}): {', '.join(result.unmatched_benchmark)}")
    if output:
        output.write_text(json.dumps(columns, indent=2))


@import_app.command("alpaca-eval")
def import_alpaca_eval_cmd(
    files: list[Path] = typer.Argument(..., help="AlpacaEval annotations.json(.gz) files or the flat preference CSV."),
    output: Path = typer.Option(..., "--output", help="Judgment directory to write (<output>/<model>.jsonl)."),
    baseline: Optional[str] = typer.Option(None, "--baseline", help="Baseline model (default: generator_1 of each row)."),
    instructions: Optional[Path] = typer.Option(
        None, "--instructions", help="JSONL of instructions in official order; line k gets question id k."
    ),
    judge: Optional[str] = typer.Option(None, "--judge", help="Annotator name where the file does not say (CSV)."),
) -> None:
    """Convert AlpacaEval annotations (soft preference in [1, 2]) into our judgment format."""
    from arena.alpaca_eval import read_annotations, to_judgments, write_judgment_dir
    from arena.formats import read_jsonl

    try:
        ids = None
        if instructions is not None:
            ids = {}
            for k, (line, rec) in enumerate(read_jsonl(instructions)):
                if not isinstance(rec.get("instruction"), str):
                    raise InputError("missing instruction", path=str(instructions), line=line, field="instruction")
                ids.setdefault(rec["instruction"], str(k))
        annotations = [a for f in files for a in read_annotations(f, instruction_ids=ids, annotator=judge)]
        counts = write_judgment_dir(to_judgments(annotations, baseline), output)
    except InputError as exc:
        _fail(exc)
    failed = sum(a.preference is None for a in annotations)
    console.print(f"wrote {sum(counts.values())} judgments for {len(counts)} models to {output} ({failed} failed annotations kept as failed games)")
