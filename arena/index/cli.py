"""`arena index ...` commands."""

import typer

app = typer.Typer(help="Fixed-answer evaluations and weighted indices.", no_args_is_help=True)
