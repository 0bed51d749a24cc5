"""`arena index ...` commands: run the suite, show the index table."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(help="Fixed-answer evaluations and weighted indices.", no_args_is_help=True)
console = Console()


def _fmt(v: float) -> str:
    return "—" if v is None or (isinstance(v, float) and np.isnan(v)) else f"{100 * v:.1f}"


@app.command("run")
def run(
    config: Path = typer.Option(..., "--config", "-c", help="Index config YAML."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Count calls and cost; call nothing."),
    retry_failed: bool = typer.Option(False, "--retry-failed", help="Re-ask requests whose cached outcome is a failure."),
) -> None:
    """Ask the model every configured eval, grade, and write per-item records (resumable)."""
    from arena.errors import InputError
    from arena.index.runner import IndexRunner, load_config
    from arena.index.sandbox import Sandbox
    from arena.llm import LLMClient, ResponseCache

    try:
        cfg = load_config(config)
    except InputError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2)
    cache = ResponseCache(cfg.cache)
    client = LLMClient(cfg.endpoints, cache, retry_failed=retry_failed)
    runner = IndexRunner(cfg, client, Sandbox(workers=cfg.sandbox_workers), retry_failed=retry_failed)

    if dry_run:
        try:
            reqs = [q for spec in cfg.evals for *_, q in runner.plan(spec)]
        except InputError as exc:
            console.print(f"[red]error:[/] {exc}")
            raise typer.Exit(2)
        console.print(client.estimate(reqs).to_frame().to_string())
        console.print("(judge and equality-checker calls depend on the answers and are not included)")
        cache.close()
        return

    async def go() -> None:
        try:
            for spec in cfg.evals:
                n = await runner.run_eval(spec)
                console.print(f"{spec.name}: {n} new records")
        finally:
            await client.aclose()

    try:
        with console.status("running index evals"):
            asyncio.run(go())
    except InputError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2)
    console.print(client.ledger.to_frame().to_string())
    cache.close()
    _show(cfg.output, cfg.model, seed=cfg.seed)


@app.command("show")
def show(
    output: Path = typer.Option(Path("index_results"), "--output", "-o", help="Results folder of `arena index run`."),
    model: str = typer.Option(..., "--model", "-m", help="Model (endpoint name) to show."),
    seed: int = typer.Option(0, help="Seed of the bootstrap Generator."),
    rounds: int = typer.Option(1000, help="Bootstrap rounds."),
) -> None:
    """Print per-eval scores and the indices with 95% CIs from stored records (no model calls)."""
    _show(output, model, seed=seed, rounds=rounds)


def _show(output: Path, model: str, *, seed: int = 0, rounds: int = 1000) -> None:
    from arena.index.report import hle_details, summarize
    from arena.index.runner import read_records

    records = read_records(output, model)
    if not records:
        console.print(f"[red]no records for model {model!r} under {output}[/]")
        raise typer.Exit(1)
    evals, indices = summarize(records, rng=np.random.default_rng(seed), rounds=rounds)
    t = Table(title=f"Evals — {model}")
    for col in ("eval", "score", "95% CI", "items", "unanswered", "failures", "output tok", "reasoning tok", "cost $"):
        t.add_column(col, justify="left" if col == "eval" else "right")
    for r in evals.itertuples():
        t.add_row(r.eval, _fmt(r.score), f"{_fmt(r.low)}–{_fmt(r.high)}", str(r.items), str(r.unanswered), str(r.failures),
                  str(r.output_tokens), str(r.reasoning_tokens), f"{r.cost:.4f}")
    console.print(t)
    t = Table(title=f"Indices — {model}")
    for col in ("index", "value", "95% CI", "missing evals"):
        t.add_column(col)
    for r in indices.itertuples():
        t.add_row(r.index, _fmt(r.value), f"{_fmt(r.low)}–{_fmt(r.high)}", r.missing)
    console.print(t)
    if "hle" in records:
        cerr, bins = hle_details(records["hle"])
        console.print(f"HLE RMS calibration error: {_fmt(cerr)}%")
        if not bins.empty:
            console.print(bins.to_string(index=False))
