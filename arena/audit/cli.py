"""`arena audit ...` and `arena import ...` commands."""

import typer

audit_app = typer.Typer(help="Audit benchmarks and judges.", no_args_is_help=True)
import_app = typer.Typer(help="Import judgments from other tools.", no_args_is_help=True)
