"""The `arena` command line: answers, judging, leaderboards, audits and the index suite."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator, List, Optional

import typer

# Only light modules at import time: `arena --help` must start fast. rich, pandas, numpy, openai
# and the audit/index internals are imported inside the commands that use them.
from typer.core import TyperGroup

from arena.audit.cli import audit_app, import_app
from arena.console import EXIT_CALLS_FAILED, cli_errors, fail, make_console
from arena.errors import InputError


class _LazyGroup(TyperGroup):
    """A sub-command group imported only when it is run: `arena index` pulls in numpy and the
    index tasks, which `arena --help` and every other command do not need."""

    def __init__(self, name: str, module: str, attr: str, help: str):
        super().__init__(name=name, help=help, short_help=help)
        self._where = (module, attr)
        self._real: TyperGroup | None = None

    def real(self) -> TyperGroup:
        if self._real is None:
            import importlib

            sub = getattr(importlib.import_module(self._where[0]), self._where[1])
            self._real = typer.main.get_group(sub)
            self._real.name = self.name
        return self._real

    def list_commands(self, ctx):
        return self.real().list_commands(ctx)

    def get_command(self, ctx, name):
        return self.real().get_command(ctx, name)

    def make_context(self, info_name, args, parent=None, **extra):
        return self.real().make_context(info_name, args, parent=parent, **extra)


class _ArenaGroup(TyperGroup):
    LAZY = {"index": _LazyGroup("index", "arena.index.cli", "app", "Fixed-answer evaluations and weighted indices.")}

    def list_commands(self, ctx):
        return [*super().list_commands(ctx), *self.LAZY]

    def get_command(self, ctx, name):
        return self.LAZY.get(name) or super().get_command(ctx, name)


app = typer.Typer(help="Rank language models on hard prompts with an LLM judge.", no_args_is_help=True, cls=_ArenaGroup)
app.add_typer(audit_app, name="audit")
app.add_typer(import_app, name="import")
from arena.report.cli import register as _register_report  # noqa: E402  (report and view)
_register_report(app)



def _out():
    """Console for results (stdout); built per use, never at import time."""
    return make_console(wide=True)


def _err():
    """Console for progress and notes (stderr)."""
    return make_console(stderr=True)


SMALL_MODEL_WARNING = (
    "[yellow]Note:[/] the embedded SmolLM2-135M model is far too small to judge anything; its verdicts "
    "are not meaningful. It only proves the pipeline works end to end. Point `endpoints:` at a real "
    "model (base_url + api_key_env) to get real results."
)


def df_table(df, title: str | None = None, floats: str = "{:.2f}"):
    from rich.table import Table

    from arena.console import clip

    t = Table(title=clip(title, 2000) if title is not None else None)
    for c in df.columns:
        # overflow="fold": a long model name wraps onto more lines, never cut with an ellipsis
        t.add_column(str(c), justify="right" if df[c].dtype.kind in "if" else "left", overflow="fold")
    for row in df.itertuples(index=False):
        # cells are data (model names): clipped and escaped so a huge or hostile name cannot hang rich
        t.add_row(*[floats.format(v) if isinstance(v, float) else clip(v, 500) for v in row])
    return t


@contextlib.contextmanager
def progress_bar(total: int, label: str) -> Iterator:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=_err(), disable=total == 0, transient=False,
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
        _err().print(f"starting the embedded model on {server.base_url} ...")
        server.start()
        _err().print(SMALL_MODEL_WARNING)
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
        _out().print(df_table(df[["stage", "endpoint", "calls", "cache_hits", "failures", "prompt_tokens", "completion_tokens", "cost"]], title="Usage", floats="{:.4f}"))


def _print_estimate(est) -> None:
    _out().print(df_table(est.to_frame(), title="Dry run: nothing was called", floats="{:.4f}"))
    _out().print(f"[bold]{est.calls}[/] calls, estimated cost [bold]${est.cost:.4f}[/] (output tokens assumed at max_tokens or expected_output_tokens)")


def _do_answers(cfg, client, dry_run: bool):
    from arena.console import clip
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
        import asyncio

        reports = asyncio.run(_with_close(client, generate_answers(client, cfg.answers.models, questions, cfg.answer_dir, system=system, params=cfg.answers.params, on_progress=tick)))
    for r in reports:
        msg = f"{r.model}: {r.written} written, {r.done_before} already done, {r.failed} failed"
        _out().print(msg + (" (rerun with --retry-failed to re-ask)" if r.failed else ""))
        if r.settings_note():
            _out().print(r.settings_note(), markup=False, highlight=False)
        for e in r.errors[:3]:
            _out().print(f"  [red]{clip(e, 500)}[/]")
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
        import asyncio

        reports = asyncio.run(_with_close(client, judge_models(
            client, j.endpoint, tpl, questions, answers, models, j.baseline, cfg.judgment_dir(),
            params=j.judge_params(), reask=j.reask, reask_params=j.reask_params, retry_failed=retry_failed, on_progress=tick,
            repeat_plan=j.repeat_plan(),
            notice=lambda line: _out().print(line, markup=False, highlight=False),
        )))
    for r in reports:
        _out().print(
            f"{r.model}: {r.judged} judged now, {r.done_before} already done, {r.games} games "
            f"({r.unparsed} unparsed, {r.failed} failed, {r.reasked} re-asked), {r.missing_answers} prompts lacking an answer"
        )
    return None


def _do_adaptive_judge(cfg, client, opts, retry_failed: bool) -> None:
    from arena.judge import load_judge_answers
    from arena.judge_adaptive import judge_adaptively

    questions, models, tpl = _judge_inputs(cfg)
    j = cfg.judge
    answers = load_judge_answers(questions, cfg.answer_dir, models, j.baseline)
    client.check_keys([j.endpoint])
    say = lambda line: _out().print(line, markup=False, highlight=False)  # noqa: E731
    rep = judge_adaptively(client, judge=j.endpoint, tpl=tpl, questions=questions, answers=answers, models=models, baseline=j.baseline,
                           out_dir=cfg.judgment_dir(), opts=opts, strong_weight=cfg.show.strong_weight, notice=say,
                           judge_kwargs=dict(params=j.judge_params(), reask=j.reask, reask_params=j.reask_params, retry_failed=retry_failed,
                                             repeat_plan=j.repeat_plan()))
    plan = j.repeat_plan()
    per_game = plan.max_repeats if plan.adaptive else plan.repeats
    for m, k in rep.judged.items():
        say(f"{m}: judged on {k} of {rep.n_prompts} prompts")
    uniform = rep.uniform_calls(2 * per_game)
    say(f"adaptive judging: {rep.calls} judge calls made ({rep.cached} from the cache) in {rep.rounds} rounds; "
        f"uniform judging of every prompt would take {uniform} calls" + (" (stopped by --budget)" if rep.stopped_by_budget else ""))


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
    _out().print(df_table(lb.table, title=f"Win rate against {baseline}{scope} (%; {ci:.0%} CI over {bootstrap} prompt-bootstrap rounds, {lb.method})"))
    unparsed = int(lb.table["n_unparsed"].sum())
    if unparsed:
        _out().print(f"[yellow]{unparsed} games had no usable verdict or failed; they are counted in n_unparsed and left out of the scores.[/]")
    from arena.soft_verdicts import soft_share

    soft = soft_share(judgments)
    if soft:
        _out().print(f"soft verdicts: {soft:.0%} of scored games are scored by the judge's label probabilities (arena/soft_verdicts.py)")
    from arena.show import verdict_warnings

    for line in verdict_warnings(judgments):  # model names are data: printed without markup
        _out().print(f"warning: {line}", style="yellow", markup=False, highlight=False)
    if by_category:
        import pandas as pd

        parts = []
        for cat, group in split_by_category(judgments).items():
            sub = compute_leaderboard(group, opts, answer_dirs).table
            _out().print(df_table(sub, title=f"Category: {cat}"))
            parts.append(sub.assign(category=cat))
        lb.table = pd.concat([lb.table.assign(category="(all)"), *parts], ignore_index=True)
    if output:
        write_leaderboard(lb, output)
        _out().print(f"wrote {output}")
    return lb


CONFIG_OPT = typer.Option(..., "--config", "-c", help="Run config (YAML).", exists=False)


DRY_RUN_OPT = typer.Option(False, "--dry-run", help="Count calls and estimate cost; call nothing.")
RETRY_OPT = typer.Option(False, "--retry-failed", help="Re-ask requests that failed before.")


def _run_stages(config: Path, dry_run: bool, retry_failed: bool, answers: bool, judge: bool, leaderboard: bool, adaptive=None) -> None:
    """Run the chosen stages with one client; a dry run only estimates them."""
    from arena.config import load_run_config

    failed = 0
    with cli_errors():
        try:
            cfg = load_run_config(config)
            with (_dry_context(cfg) if dry_run else run_context(cfg, retry_failed)) as client:
                if dry_run:
                    from arena.llm.cost import DryRunEstimate

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
                    if judge and adaptive is not None:
                        _do_adaptive_judge(cfg, client, adaptive, retry_failed)
                    elif judge:
                        _do_judge(cfg, client, False, retry_failed)
                    status = "ok"
                finally:  # a failed run is logged too, with what it spent
                    stages = [n for n, on in (("answers", answers), ("judge", judge)) if on]
                    write_run_log(cfg, client, command=" ".join(stages) + (" --retry-failed" if retry_failed else ""), stages=stages, started=started, status=status)
                _print_usage(client)
                calls = sum(t.calls for t in client.ledger.totals.values())
                failed = sum(t.failures for t in client.ledger.totals.values())
            if leaderboard:
                s = cfg.show
                _show([cfg.judgment_dir()], cfg.judge.baseline, s.bootstrap, s.seed, s.ci, s.strong_weight, cfg.output_dir / "leaderboard.csv", [cfg.answer_dir])
                if cfg.local_model:
                    _out().print(SMALL_MODEL_WARNING)
                from arena.report.cli import write_run_report

                _out().print(f"report: {write_run_report(cfg).resolve()}", markup=False, highlight=False, soft_wrap=True)
        except (RuntimeError, KeyError) as exc:
            fail(exc)
        except OSError as exc:  # a full or read-only disk, a cache that cannot store: one line, exit 2
            from arena.llm.cache import CacheWriteError

            if isinstance(exc, CacheWriteError):
                fail(exc)
            raise  # cli_errors names the path
    if failed:
        # Finished, but some paid calls failed: recorded as failures, exit 1 (bad input is 2).
        _err().print(f"{failed} of {calls} calls failed; rerun with --retry-failed", markup=False, highlight=False)
        raise typer.Exit(code=EXIT_CALLS_FAILED)


@app.command()
def answers(config: Path = CONFIG_OPT, dry_run: bool = DRY_RUN_OPT, retry_failed: bool = RETRY_OPT):
    """Generate model answers into OUTPUT_DIR/model_answer/<model>.jsonl (resumable)."""
    _run_stages(config, dry_run, retry_failed, answers=True, judge=False, leaderboard=False)


@app.command()
def judge(config: Path = CONFIG_OPT, dry_run: bool = DRY_RUN_OPT, retry_failed: bool = RETRY_OPT,
          target_ci: Optional[float] = typer.Option(None, "--target-ci", help="Adaptive judging: stop judging a model once its CI half-width is at most this (win-rate points) or it is separated from its neighbours."),
          target_elo: Optional[float] = typer.Option(None, "--target-elo", help="Adaptive judging: as --target-ci, with the half-width in Elo points on the Bradley–Terry scale (keeps judging models with extreme win rates)."),
          budget: Optional[int] = typer.Option(None, "--budget", help="Adaptive judging: stop after about this many judge calls."),
          batch: int = typer.Option(25, "--batch", min=1, help="Adaptive judging: prompts per model per round."),
          min_prompts: int = typer.Option(50, "--min-prompts", min=1, help="Adaptive judging: no model stops before this many prompts."),
          order_seed: int = typer.Option(0, "--order-seed", help="Adaptive judging: seed of the one prompt order shared by all models.")):
    """Judge every model against the baseline, two games per prompt (resumable); with
    --target-ci, --target-elo or --budget, adaptively (arena/judge_adaptive.py)."""
    adaptive = None
    if target_ci is not None or target_elo is not None or budget is not None:
        from arena.judge_adaptive import AdaptiveOptions

        try:
            adaptive = AdaptiveOptions(target_ci=target_ci, target_elo=target_elo, budget=budget, batch=batch,
                                       min_prompts=min_prompts, seed=order_seed)
        except ValueError as exc:
            fail(exc)
    _run_stages(config, dry_run, retry_failed, answers=False, judge=True, leaderboard=False, adaptive=adaptive)


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
    length_control: bool = typer.Option(False, "--length-control", help="Add AlpacaEval's length-controlled win rate (needs the answers)."),
):
    """Print (and write) the leaderboard: win rate against the baseline with bootstrap CIs."""
    with cli_errors():
        _show_cmd(judgments, baseline, bootstrap, seed, ci, strong_weight, output, answers_dir, ensemble, min_judges, style_control,
                  style_anchor, style_anchor_out, scores_jsonl, questions, category, by_category, length_control)


def _show_cmd(judgments, baseline, bootstrap, seed, ci, strong_weight, output, answers_dir, ensemble, min_judges, style_control,
              style_anchor, style_anchor_out, scores_jsonl, questions, category, by_category, length_control=False) -> None:
    try:
        if ensemble or min_judges > 1 or style_control or scores_jsonl or style_anchor or style_anchor_out or length_control:
            from arena.audit.cli import show_extras_cmd

            show_extras_cmd(judgments, baseline, bootstrap, seed, ci, strong_weight, output, answers_dir, ensemble, min_judges, style_control, scores_jsonl,
                            style_anchor=style_anchor, style_anchor_out=style_anchor_out, length_control=length_control)
            return
        _show(judgments, baseline, bootstrap, seed, ci, strong_weight, output, answers_dir, questions, category, by_category)
    except ValueError as exc:  # InputError included; OSError and decoding errors go to cli_errors
        fail(exc)


@app.command("serve-local")
def serve_local(port: int = typer.Option(8765, "--port")):
    """Serve the embedded SmolLM2 model on 127.0.0.1:PORT until interrupted."""
    from arena.local_model import LocalModelServer

    if not 0 < port < 65536:
        fail(InputError(f"port must be between 1 and 65535, got {port}", field="--port"))
    with cli_errors(), LocalModelServer(port=port) as srv:
        _out().print(f"serving {srv.alias} at {srv.base_url} (Ctrl-C to stop)")
        try:
            srv.proc.wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    app()
