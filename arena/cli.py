"""The `arena` command line: answers, judging, leaderboards, audits and the index suite."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Iterator, List, Optional

import typer
from rich.console import Console
from rich.markup import escape as rich_escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from arena.audit.cli import audit_app, import_app
from arena.errors import InputError
from arena.llm.cost import DryRunEstimate
from arena.index.cli import app as index_app

app = typer.Typer(help="Rank language models on hard prompts with an LLM judge.", no_args_is_help=True)
app.add_typer(index_app, name="index")
app.add_typer(audit_app, name="audit")
app.add_typer(import_app, name="import")
from arena.report.cli import register as _register_report  # noqa: E402  (report and view)
_register_report(app)

console = Console()
err_console = Console(stderr=True)

SMALL_MODEL_WARNING = (
    "[yellow]Note:[/] the embedded SmolLM2-135M model is far too small to judge anything; its verdicts "
    "are not meaningful. It only proves the pipeline works end to end. Point `endpoints:` at a real "
    "model (base_url + api_key_env) to get real results."
)


def fail(exc: Exception) -> None:
    # soft_wrap: a file path in an error must stay on one line to be copied and grepped
    err_console.print("[bold red]error:[/] " + rich_escape(str(exc)), soft_wrap=True)
    raise typer.Exit(code=2)


def df_table(df, title: str | None = None, floats: str = "{:.2f}") -> Table:
    t = Table(title=title)
    for c in df.columns:
        # overflow="fold": a long model name wraps onto more lines, never cut with an ellipsis
        t.add_column(str(c), justify="right" if df[c].dtype.kind in "if" else "left", overflow="fold")
    for row in df.itertuples(index=False):
        t.add_row(*[floats.format(v) if isinstance(v, float) else str(v) for v in row])
    return t


@contextlib.contextmanager
def progress_bar(total: int, label: str) -> Iterator:
    with Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err_console, disable=total == 0, transient=False,
    ) as prog:
        task = prog.add_task(label, total=total)
        yield lambda *a: prog.advance(task)


@contextlib.contextmanager
def run_context(cfg, retry_failed: bool) -> Iterator:
    """Start the embedded model if asked, and build the one client for the run."""
    from arena.llm import LLMClient, ResponseCache
    from arena.local_model import LocalModelServer

    server = None
    if cfg.local_model:
        if cfg.local_model.lower() not in {"smollm2", "smollm2-135m"}:
            raise InputError(f"unknown local model '{cfg.local_model}' (available: smollm2)", path=cfg.source, field="local_model")
        server = LocalModelServer(log_path=cfg.output_dir / "local_model.log")
        cfg.output_dir.mkdir(parents=True, exist_ok=True)
        err_console.print(f"starting the embedded model on {server.base_url} ...")
        server.start()
        err_console.print(SMALL_MODEL_WARNING)
    try:
        endpoints = cfg.load_endpoints(server.base_url if server else None)
        cache = ResponseCache(cfg.cache_path)
        client = LLMClient(endpoints, cache, retry_failed=retry_failed, backoff_base=cfg.backoff_base, backoff_max=cfg.backoff_max)
        try:
            yield client
        finally:
            cache.close()
    finally:
        if server:
            server.stop()


def _print_usage(client) -> None:
    df = client.ledger.to_frame()
    if not df.empty:
        console.print(df_table(df[["stage", "endpoint", "calls", "cache_hits", "failures", "prompt_tokens", "completion_tokens", "cost"]], title="Usage", floats="{:.4f}"))


def _print_estimate(est) -> None:
    console.print(df_table(est.to_frame(), title="Dry run: nothing was called", floats="{:.4f}"))
    console.print(f"[bold]{est.calls}[/] calls, estimated cost [bold]${est.cost:.4f}[/] (output tokens assumed at max_tokens or expected_output_tokens)")


def _do_answers(cfg, client, dry_run: bool):
    from arena.answers import estimate_answers, generate_answers
    from arena.io.formats import read_questions
    from arena.prompts import load_template

    if cfg.answers is None:
        raise InputError("the config has no 'answers' section", path=cfg.source, field="answers")
    questions = read_questions(cfg.questions)
    system = load_template(cfg.answers.system_prompt) if cfg.answers.system_prompt else None
    if dry_run:
        return estimate_answers(client, cfg.answers.models, questions, cfg.answer_dir, system, cfg.answers.params)
    client.check_keys(cfg.answers.models)
    total = len(questions) * len(cfg.answers.models)
    with progress_bar(total, "answers") as tick:
        reports = asyncio.run(_with_close(client, generate_answers(client, cfg.answers.models, questions, cfg.answer_dir, system=system, params=cfg.answers.params, on_progress=tick)))
    for r in reports:
        msg = f"{r.model}: {r.written} written, {r.done_before} already done, {r.failed} failed"
        console.print(msg + (" (rerun with --retry-failed to re-ask)" if r.failed else ""))
        if r.settings_note():
            console.print(r.settings_note(), markup=False, highlight=False)
        for e in r.errors[:3]:
            console.print(f"  [red]{e}[/]")
    return None


def _judge_inputs(cfg):
    from arena.io.formats import read_questions
    from arena.judge import JudgeTemplates

    if cfg.judge is None:
        raise InputError("the config has no 'judge' section", path=cfg.source, field="judge")
    j = cfg.judge
    questions = read_questions(cfg.questions)
    models = j.models or [m for m in (cfg.answers.models if cfg.answers else []) if m != j.baseline]
    if not models:
        raise InputError("no models to judge: list them under judge.models", path=cfg.source, field="judge.models")
    tpl = JudgeTemplates.load(j.system_prompt, j.template, j.reask_prompt)
    return questions, models, tpl


def _do_judge(cfg, client, dry_run: bool, retry_failed: bool):
    from arena.answers import answers_by_model
    from arena.judge import estimate_judging, judge_models, load_judge_answers

    questions, models, tpl = _judge_inputs(cfg)
    j = cfg.judge
    if dry_run:
        answers = answers_by_model(cfg.answer_dir, [j.baseline, *models])
        return estimate_judging(client, j.endpoint, tpl, questions, answers, models, j.baseline, j.judge_params())
    answers = load_judge_answers(questions, cfg.answer_dir, models, j.baseline)
    client.check_keys([j.endpoint])
    with progress_bar(len(questions) * len(models), f"judge ({j.endpoint})") as tick:
        reports = asyncio.run(_with_close(client, judge_models(
            client, j.endpoint, tpl, questions, answers, models, j.baseline, cfg.judgment_dir(),
            params=j.judge_params(), reask=j.reask, reask_params=j.reask_params, retry_failed=retry_failed, on_progress=tick,
            repeat_plan=j.repeat_plan(),
            notice=lambda line: console.print(line, markup=False, highlight=False),
        )))
    for r in reports:
        console.print(
            f"{r.model}: {r.judged} judged now, {r.done_before} already done, {r.games} games "
            f"({r.unparsed} unparsed, {r.failed} failed, {r.reasked} re-asked), {r.missing_answers} prompts lacking an answer"
        )
    return None


async def _with_close(client, coro):
    try:
        return await coro
    finally:
        await client.aclose()


def _show(judgment_dirs: List[Path], baseline: str, bootstrap: int, seed: int, ci: float, strong_weight: float, output: Optional[Path], answer_dirs: List[Path],
          questions: Optional[Path] = None, category: Optional[str] = None, by_category: bool = False):
    from arena.show import ShowOptions, attach_categories, compute_leaderboard, load_judgments, locate_answer_dir, split_by_category, write_leaderboard

    judgments = attach_categories(load_judgments(judgment_dirs), questions)
    if category is not None:
        judgments = [j for j in judgments if j.category == category]
        if not judgments:
            raise InputError(f"no judgment has category '{category}'", field="--category")
    if not answer_dirs:
        answer_dirs = [d for d in (locate_answer_dir(p) for p in judgment_dirs) if d is not None]
    opts = ShowOptions(baseline, bootstrap, seed, ci, strong_weight)
    lb = compute_leaderboard(judgments, opts, answer_dirs)
    scope = f" [{category}]" if category else ""
    console.print(df_table(lb.table, title=f"Win rate against {baseline}{scope} (%; {ci:.0%} CI over {bootstrap} prompt-bootstrap rounds, {lb.method})"))
    unparsed = int(lb.table["n_unparsed"].sum())
    if unparsed:
        console.print(f"[yellow]{unparsed} games had no usable verdict or failed; they are counted in n_unparsed and left out of the scores.[/]")
    from arena.soft_verdicts import soft_share

    soft = soft_share(judgments)
    if soft:
        console.print(f"soft verdicts: {soft:.0%} of scored games are scored by the judge's label probabilities (arena/soft_verdicts.py)")
    from arena.show import verdict_warnings

    for line in verdict_warnings(judgments):  # model names are data: printed without markup
        console.print(f"warning: {line}", style="yellow", markup=False, highlight=False)
    if by_category:
        import pandas as pd

        parts = []
        for cat, group in split_by_category(judgments).items():
            sub = compute_leaderboard(group, opts, answer_dirs).table
            console.print(df_table(sub, title=f"Category: {cat}"))
            parts.append(sub.assign(category=cat))
        lb.table = pd.concat([lb.table.assign(category="(all)"), *parts], ignore_index=True)
    if output:
        write_leaderboard(lb, output)
        console.print(f"wrote {output}")
    return lb


CONFIG_OPT = typer.Option(..., "--config", "-c", help="Run config (YAML).", exists=False)


DRY_RUN_OPT = typer.Option(False, "--dry-run", help="Count calls and estimate cost; call nothing.")
RETRY_OPT = typer.Option(False, "--retry-failed", help="Re-ask requests that failed before.")


def _run_stages(config: Path, dry_run: bool, retry_failed: bool, answers: bool, judge: bool, leaderboard: bool) -> None:
    """Run the chosen stages with one client; a dry run only estimates them."""
    from arena.config import load_run_config

    try:
        cfg = load_run_config(config)
        with (_dry_context(cfg) if dry_run else run_context(cfg, retry_failed)) as client:
            if dry_run:
                est = DryRunEstimate()
                if answers:
                    est.merge(_do_answers(cfg, client, True))
                if judge:
                    est.merge(_do_judge(cfg, client, True, retry_failed))
                _print_estimate(est)
                return
            from arena.provenance import now, write_run_log

            started, status = now(), "failed"
            try:
                if answers:
                    _do_answers(cfg, client, False)
                if judge:
                    _do_judge(cfg, client, False, retry_failed)
                status = "ok"
            finally:  # a failed run is logged too, with what it spent
                stages = [n for n, on in (("answers", answers), ("judge", judge)) if on]
                write_run_log(cfg, client, command=" ".join(stages) + (" --retry-failed" if retry_failed else ""), stages=stages, started=started, status=status)
            _print_usage(client)
        if leaderboard:
            s = cfg.show
            _show([cfg.judgment_dir()], cfg.judge.baseline, s.bootstrap, s.seed, s.ci, s.strong_weight, cfg.output_dir / "leaderboard.csv", [cfg.answer_dir])
            if cfg.local_model:
                console.print(SMALL_MODEL_WARNING)
            from arena.report.cli import write_run_report

            console.print(f"report: {write_run_report(cfg).resolve()}", markup=False, highlight=False, soft_wrap=True)
    except (InputError, RuntimeError, FileNotFoundError, KeyError) as exc:
        fail(exc)
    except OSError as exc:  # a full or read-only disk, a cache that cannot store: one line, exit 2
        from arena.llm.cache import CacheWriteError

        if isinstance(exc, CacheWriteError):
            fail(exc)
        from arena.console import describe_os_error

        fail(describe_os_error(exc))


@app.command()
def answers(config: Path = CONFIG_OPT, dry_run: bool = DRY_RUN_OPT, retry_failed: bool = RETRY_OPT):
    """Generate model answers into OUTPUT_DIR/model_answer/<model>.jsonl (resumable)."""
    _run_stages(config, dry_run, retry_failed, answers=True, judge=False, leaderboard=False)


@app.command()
def judge(config: Path = CONFIG_OPT, dry_run: bool = DRY_RUN_OPT, retry_failed: bool = RETRY_OPT):
    """Judge every model against the baseline, two games per prompt (resumable)."""
    _run_stages(config, dry_run, retry_failed, answers=False, judge=True, leaderboard=False)


@app.command()
def run(config: Path = CONFIG_OPT, dry_run: bool = DRY_RUN_OPT, retry_failed: bool = RETRY_OPT):
    """Answers, judging and the leaderboard in one go."""
    _run_stages(config, dry_run, retry_failed, answers=True, judge=True, leaderboard=True)


@contextlib.contextmanager
def _dry_context(cfg) -> Iterator:
    """A client that only reads the cache: a dry run starts no server and calls nothing."""
    from arena.llm import LLMClient, ResponseCache

    endpoints = cfg.load_endpoints("http://127.0.0.1:0/v1" if cfg.local_model else None)
    cache = ResponseCache(cfg.cache_path) if cfg.cache_path.exists() else None
    try:
        yield LLMClient(endpoints, cache)
    finally:
        if cache:
            cache.close()


@app.command()
def show(
    judgments: List[Path] = typer.Option(..., "--judgments", "-j", help="Judgment directory or file (repeatable)."),
    baseline: str = typer.Option(..., "--baseline", "-b"),
    bootstrap: int = typer.Option(100, "--bootstrap", min=0, help="Bootstrap rounds (prompts resampled)."),
    seed: int = typer.Option(0, "--seed"),
    ci: float = typer.Option(0.95, "--ci", min=0.5, max=0.9999, help="Confidence level."),
    strong_weight: float = typer.Option(3.0, "--strong-weight", help="How many wins a >> verdict counts for."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write FILE.csv or FILE.json."),
    answers_dir: List[Path] = typer.Option([], "--answers", help="Answer directory for avg_tokens (default: found next to the judgments)."),
    # --- audit extras (arena/audit/show_extras.py): ensembles, style control, scores JSONL ---
    ensemble: Optional[str] = typer.Option(None, "--ensemble", help="Combine judges: pool | mean | majority."),
    min_judges: int = typer.Option(1, "--min-judges", min=1, help="Only games parsed by at least K judges."),
    style_control: Optional[str] = typer.Option(None, "--style-control", help="Style covariates, e.g. length,markdown,emoji."),
    style_anchor: Optional[Path] = typer.Option(None, "--style-anchor", help="Frozen style normalisation and coefficients (JSON from --style-anchor-out) to reuse."),
    style_anchor_out: Optional[Path] = typer.Option(None, "--style-anchor-out", help="Write the fitted style normalisation and coefficients as an anchor JSON."),
    scores_jsonl: Optional[Path] = typer.Option(None, "--scores-jsonl", help="Write model, score, lower, upper, results (bootstrap replicates)."),
    questions: Optional[Path] = typer.Option(None, "--questions", help="Question file giving each prompt's category."),
    category: Optional[str] = typer.Option(None, "--category", help="Only prompts of this category."),
    by_category: bool = typer.Option(False, "--by-category", help="Also one leaderboard per category."),
):
    """Print (and write) the leaderboard: win rate against the baseline with bootstrap CIs."""
    try:
        if ensemble or min_judges > 1 or style_control or scores_jsonl or style_anchor or style_anchor_out:
            from arena.audit.cli import show_extras_cmd

            show_extras_cmd(judgments, baseline, bootstrap, seed, ci, strong_weight, output, answers_dir, ensemble, min_judges, style_control, scores_jsonl,
                            style_anchor=style_anchor, style_anchor_out=style_anchor_out)
            return
        _show(judgments, baseline, bootstrap, seed, ci, strong_weight, output, answers_dir, questions, category, by_category)
    except (InputError, ValueError) as exc:
        fail(exc)


@app.command("serve-local")
def serve_local(port: int = typer.Option(8765, "--port")):
    """Serve the embedded SmolLM2 model on 127.0.0.1:PORT until interrupted."""
    from arena.local_model import LocalModelServer

    with LocalModelServer(port=port) as srv:
        console.print(f"serving {srv.alias} at {srv.base_url} (Ctrl-C to stop)")
        try:
            srv.proc.wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    app()
