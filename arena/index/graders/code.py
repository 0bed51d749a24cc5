"""Code grading: extract the program from a response, build the test harness, run it sandboxed.

Extraction uses the methodology's regex (the first fenced ``python`` block). Harnesses:
HumanEval (``check(entry_point)``), LiveCodeBench stdin/stdout and functional (LeetCode
``Solution`` class) tests, and SciCode sub-steps (the step's test cases against targets).
Each harness is plain Python text run by :class:`arena.index.sandbox.Sandbox`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

CODE_PATTERN = re.compile(r"(?<=```python\n)((?:\n|.)+?)(?=\n```)")


def extract_code(response: str | None) -> str | None:
    """The first ```python fenced block (methodology regex); ``None`` when there is none."""
    if not response:
        return None
    m = CODE_PATTERN.search(response)
    return m.group(1) if m else None


def humaneval_program(prompt: str, completion: str, test: str, entry_point: str) -> str:
    """HumanEval's own execution layout: prompt + completion + test + ``check(entry)``."""
    return f"{prompt}{completion}\n\n{test}\n\ncheck({entry_point})\n"


# --------------------------------------------------------------------------- LiveCodeBench
_STDIN_RUNNER = r'''
import io, sys, json, runpy, contextlib
_tests = json.loads(__TESTS__)
_src = __SRC__
_failed = 0
for _i, _t in enumerate(_tests):
    _out = io.StringIO()
    sys.stdin = io.StringIO(_t["input"])
    try:
        with contextlib.redirect_stdout(_out):
            exec(compile(_src, "solution.py", "exec"), {"__name__": "__main__"})
    except SystemExit:
        pass
    except BaseException as _e:
        print(f"test {_i}: error {type(_e).__name__}: {_e}", file=sys.stderr)
        _failed += 1
        break
    _got = [l.rstrip() for l in _out.getvalue().rstrip().splitlines()]
    _exp = [l.rstrip() for l in _t["output"].rstrip().splitlines()]
    if _got != _exp:
        print(f"test {_i}: wrong answer", file=sys.stderr)
        _failed += 1
        break
sys.exit(1 if _failed else 0)
'''

_FUNCTIONAL_RUNNER = r'''
import sys, json
_tests = json.loads(__TESTS__)
_ns = {"__name__": "solution"}
_prelude = "from typing import *\nfrom collections import *\nimport math, heapq, bisect, itertools, functools\n"
exec(compile(_prelude + __SRC__, "solution.py", "exec"), _ns)
_sol = _ns["Solution"]() if "Solution" in _ns else None
_fn = getattr(_sol, __FN__) if _sol is not None else _ns[__FN__]
for _i, _t in enumerate(_tests):
    _args = [json.loads(a) for a in _t["input"].split("\n") if a.strip()]
    _exp = json.loads(_t["output"])
    _got = _fn(*_args)
    if isinstance(_got, tuple):
        _got = list(_got)
    if _got != _exp:
        print(f"test {_i}: wrong answer", file=sys.stderr)
        sys.exit(1)
'''


def lcb_program(code: str, tests: list[dict], *, testtype: str, fn_name: str | None = None) -> str:
    """LiveCodeBench harness: ``stdin`` tests feed input and compare stripped output lines;
    ``functional`` tests call ``Solution().fn_name`` with JSON-decoded arguments, one per line."""
    src = json.dumps(code)
    payload = json.dumps(json.dumps(tests))
    if testtype == "stdin":
        return _STDIN_RUNNER.replace("__TESTS__", payload).replace("__SRC__", src)
    if testtype == "functional":
        if not fn_name:
            raise ValueError("functional LiveCodeBench tests need fn_name (from the problem metadata)")
        return _FUNCTIONAL_RUNNER.replace("__TESTS__", payload).replace("__SRC__", src).replace("__FN__", json.dumps(fn_name))
    raise ValueError(f"unknown LiveCodeBench testtype {testtype!r}")


# --------------------------------------------------------------------------- SciCode
@dataclass(frozen=True)
class SciCodeStepCheck:
    """One SciCode sub-step: its tests, and the Python literal of each test's ``target``."""

    step_number: str
    dependencies: str
    prior_code: str
    test_cases: tuple[str, ...]
    targets: tuple[str, ...] | None  # None: no numeric targets available -> not gradable


def scicode_program(check: SciCodeStepCheck, code: str) -> str | None:
    """The step's test program: dependencies, previous steps' code, this step's code, then
    each test case with ``target`` bound. ``None`` when the targets are unavailable (the
    official ones live in SciCode's ``test_data.h5``)."""
    if check.targets is None or len(check.targets) != len(check.test_cases):
        return None
    parts = [check.dependencies, "from numpy import array, inf, nan", check.prior_code, code]
    for test, target in zip(check.test_cases, check.targets):
        parts.append(f"target = {target}\n{test}")
    return "\n\n".join(p for p in parts if p)
