"""The `benchbuilder` command line."""

import typer

app = typer.Typer(help="Curate a hard, diverse prompt set from crowdsourced prompts.", no_args_is_help=True)


@app.callback()
def main() -> None:
    """BenchBuilder curation pipeline."""
