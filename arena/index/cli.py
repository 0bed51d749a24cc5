"""`arena index ...` commands: run the suite, show the index table.

Bad input (config, dataset files, stored records) ends in one line and exit code 2; a run
whose calls or grading failed ends with a summary line and exit code 1 (the failed items
are recorded and redone with ``--retry-failed``).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import numpy as np
import typer

from arena.console import EXIT_CALLS_FAILED, clip, cli_errors, make_console

app = typer.Typer(help="Fixed-answer evaluations and weighted indices.", no_args_is_help=True)


def _fmt(v: float) -> str:
    return "—" if v is None or (isinstance(v, float) and np.isnan(v)) else f"{100 * v:.1f}"


@app.command("run")
def run(
    config: Path = typer.Option(..., "--config", "-c", help="Index config YAML."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Count calls and cost; call nothing."),
    retry_failed: bool = typer.Option(False, "--retry-failed", help="Re-ask requests whose cached outcome is a failure."),
    trust_remote_code: bool = typer.Option(False, "--trust-remote-code",
                                           help="Let Hugging Face datasets run a hub repository's loading script."),
) -> None:
    """Ask the model every configured eval, grade, and write per-item records (resumable)."""
    from arena.index.runner import FAILED, IndexRunner, load_config, read_records
    from arena.index.sandbox import Sandbox
    from arena.llm import LLMClient, ResponseCache

    console = make_console(wide=True)
    with cli_errors():
        cfg = load_config(config, trust_remote_code=trust_remote_code)
        if dry_run:
            # Plan before opening the cache: a bad dataset file must not leave anything behind.
            runner = IndexRunner(cfg, None, None, retry_failed=retry_failed)  # type: ignore[arg-type]
            planned = [runner.plan(spec) for spec in cfg.evals]
            cache = ResponseCache(cfg.cache)
            try:
                client = LLMClient(cfg.endpoints, cache, retry_failed=retry_failed)
                console.print(client.estimate([q for plan in planned for *_, q in plan]).to_frame().to_string())
                console.print("(judge and equality-checker calls depend on the answers and are not included)")
            finally:
                cache.close()
            return
        cache = ResponseCache(cfg.cache)
        client = LLMClient(cfg.endpoints, cache, retry_failed=retry_failed)
        runner = IndexRunner(cfg, client, Sandbox(workers=cfg.sandbox_workers), retry_failed=retry_failed)

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
        finally:
            runner.close()
            cache.close()
        console.print(client.ledger.to_frame().to_string())
        _show(console, cfg.output, cfg.model, seed=cfg.seed)
        names = {spec.name for spec in cfg.evals}
        records = read_records(cfg.output, cfg.model)
        failed = Counter(r.get("status") for name, recs in records.items() if name in names
                         for r in recs if r.get("status") in FAILED)
        failed_calls = sum(t.failures for t in client.ledger.totals.values())
    if failed or failed_calls:
        detail = ", ".join(f"{k}: {v}" for k, v in sorted(failed.items())) or "none"
        make_console(stderr=True).print(
            f"failed: {sum(failed.values())} items ({detail}), {failed_calls} calls; "
            "they are recorded and not scored — rerun with --retry-failed", soft_wrap=True)
        raise typer.Exit(EXIT_CALLS_FAILED)


@app.command("show")
def show(
    output: Path = typer.Option(Path("index_results"), "--output", "-o", help="Results folder of `arena index run`."),
    model: str = typer.Option(..., "--model", "-m", help="Model (endpoint name) to show."),
    seed: int = typer.Option(0, help="Seed of the bootstrap Generator."),
    rounds: int = typer.Option(1000, min=1, help="Bootstrap rounds."),
) -> None:
    """Print per-eval scores and the indices with 95% CIs from stored records (no model calls)."""
    with cli_errors():
        _show(make_console(wide=True), output, model, seed=seed, rounds=rounds)


def _show(console, output: Path, model: str, *, seed: int = 0, rounds: int = 1000) -> None:
    from rich.table import Table

    from arena.console import fail
    from arena.index.report import summarize
    from arena.index.runner import read_records
    from arena.index.tasks import REGISTRY, get_task

    records = read_records(output, model)
    if not records:
        fail(f"{output}: no records for model {model!r}")
    evals, indices = summarize(records, rng=np.random.default_rng(seed), rounds=rounds)
    t = Table(title=f"Evals — {clip(model)}")
    for col in ("eval", "score", "95% CI", "items", "unanswered", "failures", "output tok", "reasoning tok", "cost $"):
        t.add_column(col, justify="left" if col == "eval" else "right")
    for r in evals.itertuples():
        t.add_row(clip(r.eval), _fmt(r.score), f"{_fmt(r.low)}–{_fmt(r.high)}", str(r.items), str(r.unanswered), str(r.failures),
                  str(r.output_tokens), str(r.reasoning_tokens), f"{r.cost:.4f}")
    console.print(t)
    t = Table(title=f"Indices — {clip(model)}")
    for col in ("index", "value", "95% CI", "missing evals"):
        t.add_column(col)
    for r in indices.itertuples():
        t.add_row(r.index, _fmt(r.value), f"{_fmt(r.low)}–{_fmt(r.high)}", r.missing)
    console.print(t)
    for name, recs in records.items():
        if name in REGISTRY:
            for line in get_task(name).details(recs):
                console.print(line, markup=False)
