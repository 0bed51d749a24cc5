"""`arena report` (write the static site) and `arena view` (serve it on 127.0.0.1)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from arena.console import cli_errors, fail, make_console


def register(app: typer.Typer) -> None:
    """Add `report` and `view` to the `arena` command line."""
    app.command("report")(report)
    app.command("view")(view)


def report(
    runs: List[Path] = typer.Argument(..., help="Run folders: arena runs, judgment folders, curation runs, index outputs."),
    output: Path = typer.Option(Path("report"), "--output", "-o", help="Folder for the site (index.html)."),
    baseline: Optional[str] = typer.Option(None, "--baseline", "-b", help="Baseline model (default: named in the judgments)."),
    answers: List[Path] = typer.Option([], "--answers", help="Answer folder (default: model_answer/ next to the judgments)."),
    questions: Optional[Path] = typer.Option(None, "--questions", help="Question file: prompts and categories."),
    bootstrap: int = typer.Option(100, "--bootstrap", min=0),
    seed: int = typer.Option(0, "--seed"),
    ci: float = typer.Option(0.95, "--ci", min=0.5, max=0.9999),
    no_style: bool = typer.Option(False, "--no-style-control", help="Skip the style-controlled boards."),
    index_config: Optional[Path] = typer.Option(None, "--index-config", help="The index run's config, to show each item's prompt."),
):
    """Write a self-contained static report (works from file://, no network)."""
    from arena.report.builder import ReportOptions, build_report

    console = make_console(stderr=True)
    with cli_errors():
        try:
            opts = ReportOptions(baseline=baseline, answers=tuple(answers), questions=questions, n_bootstrap=bootstrap, seed=seed, ci=ci,
                                 style_control=not no_style, index_config=index_config)
            index = build_report(runs, output, opts, log=lambda s: console.print(s, markup=False, highlight=False))
        except ValueError as exc:
            fail(exc)
    make_console().print(f"report: {index.resolve()}", markup=False, highlight=False, soft_wrap=True)


def view(
    directory: Path = typer.Argument(Path("report"), help="A folder written by `arena report`."),
    port: int = typer.Option(8000, "--port"),
):
    """Serve a report on http://127.0.0.1:PORT until interrupted."""
    import functools
    import http.server

    if not (directory / "index.html").is_file():
        fail(f"{directory}: no index.html here (write one with `arena report RUN_DIR --output {directory}`)")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(directory))
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as srv:
        make_console().print(f"serving {directory} at http://127.0.0.1:{srv.server_address[1]}/ (Ctrl-C to stop)", markup=False)
        try:
            srv.serve_forever()
        except KeyboardInterrupt:
            pass


def write_run_report(cfg) -> Path:
    """The report `arena run` writes beside its leaderboard (``<output>/report/index.html``)."""
    from arena.report.builder import ReportOptions, build_report

    s = cfg.show
    opts = ReportOptions(baseline=cfg.judge.baseline, answers=(cfg.answer_dir,), questions=cfg.questions,
                         n_bootstrap=s.bootstrap, seed=s.seed, ci=s.ci, strong_weight=s.strong_weight)
    return build_report([cfg.output_dir], cfg.output_dir / "report", opts)
