"""BenchBuilder: curate hard, diverse prompt sets from crowdsourced prompts."""

__version__ = "0.1.0"
