"""The task registry is the one place evals are named; index weights come from the tasks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from arena.index.tasks import REGISTRY, get_task, index_definitions
from arena.errors import InputError

ROOT = Path(__file__).resolve().parents[2]


def test_index_definitions_follow_the_methodology():
    defs = index_definitions()
    assert list(defs) == ["Intelligence Index", "Math Index", "Coding Index", "Multilingual Index"]
    assert defs["Intelligence Index"] == pytest.approx({"mmlu_pro": 1 / 6, "hle": 1 / 6, "gpqa_diamond": 1 / 6, "math500": 1 / 8,
                                                        "aime2024": 1 / 8, "scicode": 1 / 8, "livecodebench": 1 / 8})
    assert sum(defs["Intelligence Index"].values()) == pytest.approx(1.0)
    assert defs["Math Index"] == {"math500": 0.5, "aime2024": 0.5}
    assert defs["Coding Index"] == {"scicode": 0.5, "livecodebench": 0.5}
    assert defs["Multilingual Index"] == {"mmmlu": 0.5, "mgsm": 0.5}


@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_task_is_complete(name):
    task = get_task(name)
    assert task.name == name and task.default_repeats >= 1 and task.hub.get("path")
    assert all(w > 0 for w in task.indices.values())


def test_unknown_eval_suggests_the_closest():
    with pytest.raises(InputError) as e:
        get_task("gpqa")
    assert str(e.value) == "field 'eval': unknown eval 'gpqa' (did you mean 'gpqa_diamond'?)"


def test_no_eval_is_named_outside_its_task_module():
    """Runner, CLI, report, indices, prompts and datasets dispatch through the registry only."""
    names = "|".join(re.escape(n) for n in REGISTRY)
    pattern = re.compile(rf"""["']({names})["']""")
    offenders = {p.name: pattern.findall(p.read_text()) for p in (ROOT / "arena" / "index").glob("*.py")}
    assert {k: v for k, v in offenders.items() if v} == {}
