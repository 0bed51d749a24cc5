"""The index evals, one task module each, registered in ONE table.

Adding an eval: write ``arena/index/tasks/<name>.py`` defining an :class:`EvalTask` subclass
(dataset loader, prompt, scorer, default repeats, index weights) and a ``TASK`` instance,
then add one line to :data:`REGISTRY`. Nothing else names evals.
"""

from __future__ import annotations

import difflib
import importlib
from functools import lru_cache

from arena.errors import InputError
from arena.index.tasks.base import EvalTask, GradeContext, Sample, Score

# eval name -> module under arena.index.tasks (imported on first use: task modules pull in graders)
REGISTRY: dict[str, str] = {
    "mmlu_pro": "mmlu_pro",
    "hle": "hle",
    "gpqa_diamond": "gpqa_diamond",
    "math500": "math500",
    "aime2024": "aime",
    "scicode": "scicode",
    "livecodebench": "livecodebench",
    "mmmlu": "mmmlu",
    "mgsm": "mgsm",
    "humaneval": "humaneval",
}


def suggest(name: str, known) -> str:
    """`` (did you mean 'x'?)`` for the closest known name, or ``""``."""
    known = list(known)
    # difflib misses a short prefix of a long name ('gpqa' -> 'gpqa_diamond'); try that second.
    close = difflib.get_close_matches(str(name), known, n=1, cutoff=0.6) or [k for k in known if str(name) and k.startswith(str(name))][:1]
    return f" (did you mean {close[0]!r}?)" if close else ""


@lru_cache(maxsize=None)
def get_task(name: str) -> EvalTask:
    if name not in REGISTRY:
        raise InputError(f"unknown eval {name!r}{suggest(name, REGISTRY)}", field="eval")
    task = importlib.import_module(f"arena.index.tasks.{REGISTRY[name]}").TASK
    assert task.name == name, f"task module {REGISTRY[name]} defines {task.name!r}, registered as {name!r}"
    return task


def index_definitions() -> dict[str, dict[str, float]]:
    """Index name -> {eval: weight}, collected from the tasks in registry order."""
    out: dict[str, dict[str, float]] = {}
    for name in REGISTRY:
        for index, weight in get_task(name).indices.items():
            out.setdefault(index, {})[name] = weight
    return out


__all__ = ["REGISTRY", "EvalTask", "GradeContext", "Sample", "Score", "get_task", "index_definitions", "suggest"]
