"""The `arena` command line: answers, judging, leaderboards, audits and the index suite."""

from __future__ import annotations

import typer

from arena.audit.cli import audit_app, import_app
from arena.index.cli import app as index_app

app = typer.Typer(help="Rank language models on hard prompts with an LLM judge.", no_args_is_help=True)
app.add_typer(index_app, name="index")
app.add_typer(audit_app, name="audit")
app.add_typer(import_app, name="import")
