"""Code grading needs positive proof: a corpus of wrong solutions that try to fake a pass
(tests/index/attacks/, one file each, named ``<kind>__<attack>.py``) must all fail, across
LiveCodeBench stdin and functional, HumanEval and SciCode; correct solutions that look
suspicious (printing "MemoryError" to stderr) must pass; and the sandbox must not leak
between runs or workers, nor fill the host disk."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from arena.index.graders.code import (
    SciCodeStepCheck, grade_humaneval, grade_lcb, grade_scicode, strict_equal, wire_decode, wire_encode,
)
from arena.index.sandbox import Sandbox, SandboxJob, SandboxLimits

ATTACKS = Path(__file__).with_name("attacks")
ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data" / "index"

LCB_STDIN_TESTS = [{"input": "3\n", "output": "6\n"}, {"input": "21\n", "output": "42\n"}, {"input": "-4\n", "output": "-8\n"}]
LCB_FUNC_TESTS = [{"input": "1\n2", "output": "3"}, {"input": "-5\n5", "output": "0"}, {"input": "40\n2", "output": "42"},
                  {"input": "1\n0", "output": "1"}]
HE_PROMPT = 'def add(x: int, y: int):\n    """Add two numbers x and y\n    >>> add(2, 3)\n    5\n    """\n'
HE_TEST = ("METADATA = {}\n\n\ndef check(candidate):\n    assert candidate(0, 1) == 1\n    assert candidate(2, 3) == 5\n"
           "    assert candidate(5, 7) == 12\n    assert candidate(7, 5) == 12\n")
SCI_CHECK = SciCodeStepCheck("S1.1", "import numpy as np", "",
                             ("assert np.allclose(square(np.array([1.0, 2.0])), target)", "assert np.allclose(square(np.array([-3.0])), target)"),
                             ("np.array([1.0, 4.0])", "np.array([9.0])"))

CORRECT = {
    "lcb_stdin": "import sys\nprint('MemoryError: just a word', file=sys.stderr)\nprint(int(input()) * 2)\n",
    "lcb_func": "import sys\nclass Solution:\n    def addTwo(self, a, b):\n        print('MemoryError', file=sys.stderr)\n        return a + b\n",
    "humaneval": "import sys\nprint('MemoryError', file=sys.stderr)\ndef add(x, y):\n    print('Cannot allocate memory', file=sys.stderr)\n    return x + y\n",
    "scicode": "import sys\ndef square(x):\n    print('MemoryError', file=sys.stderr)\n    return x * x\n",
}


@pytest.fixture(scope="module")
def sandbox():
    return Sandbox(SandboxLimits(cpu_seconds=3, wall_seconds=8, memory_bytes=1024**3), workers=2)


def grade(sandbox: Sandbox, kind: str, code: str):
    if kind == "lcb_stdin":
        return grade_lcb(sandbox, code, LCB_STDIN_TESTS, testtype="stdin")
    if kind == "lcb_func":
        return grade_lcb(sandbox, code, LCB_FUNC_TESTS, testtype="functional", fn_name="addTwo")
    if kind == "humaneval":
        return grade_humaneval(sandbox, "", code, HE_TEST, "add")
    if kind == "scicode":
        return grade_scicode(sandbox, SCI_CHECK, code)
    raise AssertionError(kind)


CORPUS = sorted(ATTACKS.glob("*.py"))


def test_corpus_covers_every_kind_and_class():
    kinds = {p.name.split("__")[0] for p in CORPUS}
    assert kinds == {"lcb_stdin", "lcb_func", "humaneval", "scicode"}
    assert len(CORPUS) >= 25
    text = "\n".join(p.read_text() for p in CORPUS)
    for needle in ("os._exit(0)", "sys.exit(0)", "atexit", "sys.exit = ", "signal.alarm", "json.loads =", "builtins.print",
                   "def __eq__", "sys.modules[\"__main__\"]", "_getframe", "os.environ", "sys.argv", "PASS", "output.txt",
                   "os.getppid()", "os.fork()", "os.close(1)"):
        assert needle in text, needle


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_attack_is_not_graded_correct(sandbox, path):
    kind = path.name.split("__")[0]
    g = grade(sandbox, kind, path.read_text())
    assert not g.passed, g.to_dict()
    assert g.status != "passed" and g.tests_passed < g.tests_total


@pytest.mark.parametrize("kind", sorted(CORRECT))
def test_correct_solution_printing_memoryerror_passes(sandbox, kind):
    g = grade(sandbox, kind, CORRECT[kind])
    assert g.passed, g.to_dict()
    assert g.tests_passed == g.tests_total > 0
    assert "MemoryError" in g.stderr or "Cannot allocate" in g.stderr  # it did print it


def test_real_memory_failure_is_classified_from_the_exception_not_text(sandbox):
    hog = "class Solution:\n    def addTwo(self, a, b):\n        return len(bytearray(8 * 1024**3))\n"
    assert grade_lcb(sandbox, hog, LCB_FUNC_TESTS, testtype="functional", fn_name="addTwo").status == "memory_limit"
    hog_stdin = "x = bytearray(8 * 1024**3)\nprint(6)\n"
    assert grade_lcb(sandbox, hog_stdin, LCB_STDIN_TESTS, testtype="stdin").status == "memory_limit"
    r = sandbox.run("import sys\nprint('MemoryError', file=sys.stderr)\nprint('fine')\n")
    assert r.status == "ok" and r.stdout == "fine\n"


def test_wrong_but_plain_answers_fail_and_partial_credit_is_counted(sandbox):
    off_by_one = "class Solution:\n    def addTwo(self, a, b):\n        return a + b if a != 40 else 41\n"
    g = grade_lcb(sandbox, off_by_one, LCB_FUNC_TESTS, testtype="functional", fn_name="addTwo")
    assert (g.status, g.tests_passed, g.detail) == ("wrong_answer", 2, "test 2: wrong answer")
    g = grade_humaneval(sandbox, HE_PROMPT, "    return x + y if x != 5 else 0\n", HE_TEST, "add")
    assert (g.status, g.detail) == ("wrong_answer", "case 0: AssertionError")


def test_humaneval_harness_never_called_is_no_evidence(sandbox):
    g = grade_humaneval(sandbox, HE_PROMPT, "    return x + y\n", "def check(candidate):\n    pass\n", "add")
    assert (g.status, g.detail) == ("no_evidence", "the tests never called the solution")


def test_strict_equality_and_wire_format():
    assert not strict_equal(True, 1) and not strict_equal(0, False) and strict_equal(True, True)
    assert strict_equal(2, 2.0) and not strict_equal([1, 2], (1, 2)) and not strict_equal([1], [1, None])
    nan = float("nan")
    assert not strict_equal(nan, nan) and strict_equal(nan, nan, nan_equal=True)
    assert strict_equal(1.0, 1.0 + 1e-12, rel_tol=1e-9) and not strict_equal(1.0, 1.0 + 1e-12)
    value = {"a": (1, [2.5, None, True]), 3: {frozenset({1}), }, "big": 2**80, "c": 1 + 2j, "b": b"\x00"}
    value[3] = {frozenset({1})}
    assert wire_decode(json.loads(json.dumps(wire_encode(value)))) == value

    class Sub(int):
        pass
    for bad in (Sub(1), object(), [lambda: 0]):
        with pytest.raises(TypeError):
            wire_encode(bad)
    for bad in ({"$": "eval", "v": "1"}, {"x": 1}, 1.5, {"$": "ndarray", "dtype": "|O", "shape": [1], "v": [1]}):
        with pytest.raises(ValueError):
            wire_decode(bad)


# --------------------------------------------------------------------------- leaks
LOCK_WRITER = """
import ctypes, os, time
open('/run/lock/arena-leak', 'w').write('secret')
open('/var/lock/arena-leak2', 'w').write('secret')
open('/dev/shm/arena-leak', 'w').write('secret')
libc = ctypes.CDLL(None, use_errno=True)
shm = libc.shmget(0x41524E41, 4096, 0o1666)
print('wrote', shm >= 0, flush=True)
time.sleep(%s)
"""
LOCK_READER = """
import ctypes, os, time
time.sleep(%s)
libc = ctypes.CDLL(None, use_errno=True)
seen = [p for p in ('/run/lock/arena-leak', '/var/lock/arena-leak2', '/dev/shm/arena-leak') if os.path.exists(p)]
if libc.shmget(0x41524E41, 0, 0) >= 0:
    seen.append('sysv-shm')
print('seen', seen)
"""


def test_run_lock_and_ipc_do_not_survive_or_leak_to_a_concurrent_worker(sandbox):
    host_before = set(Path("/run/lock").iterdir()) if Path("/run/lock").is_dir() else set()
    jobs = [SandboxJob(LOCK_WRITER % 3), SandboxJob(LOCK_READER % 1.5)]
    writer, concurrent = sandbox.run_many(jobs)
    if not writer.isolation.get("ipc_ns"):
        pytest.skip("no namespaces on this kernel")
    assert writer.passed and writer.stdout.startswith("wrote True"), writer.stderr
    assert concurrent.passed and concurrent.stdout.strip() == "seen []", concurrent.stdout
    later = sandbox.run(LOCK_READER % 0)
    assert later.stdout.strip() == "seen []"
    host_after = set(Path("/run/lock").iterdir()) if Path("/run/lock").is_dir() else set()
    assert host_after == host_before
    assert {"/run", "/dev/shm", "/tmp"} <= set(writer.isolation["tmpfs"]) and writer.isolation["read_only"] is True


def test_writing_700_mb_fails_inside_and_does_not_touch_the_host_disk(sandbox):
    prog = """
import os
chunk = b'x' * (8 * 1024**2)
written = 0
try:
    for i in range(100):
        with open(f'big{i}.bin', 'wb') as f:
            for _ in range(3):
                f.write(chunk)
                f.flush()
                written += len(chunk)
except OSError as e:
    print('refused', e.errno, written // 1024**2)
else:
    print('wrote', written // 1024**2)
"""
    free_before = shutil.disk_usage(tempfile.gettempdir()).free
    r = sandbox.run(prog)
    free_after = shutil.disk_usage(tempfile.gettempdir()).free
    if r.isolation.get("work_tmpfs") is None:
        pytest.skip("no mount namespace: the work directory is not capped")
    word, errno, mb = r.stdout.split()
    assert word == "refused" and int(errno) == 28 and int(mb) < 200, r.stdout  # ENOSPC at the tmpfs cap
    assert free_before - free_after < 100 * 1024**2
    assert not r.passed or word == "refused"


# --------------------------------------------------------------------------- end to end
def test_exit_zero_model_scores_zero_through_arena_index_run(tmp_path, fake_server):
    from arena.index.cli import app

    cheat = "```python\nimport os\nprint(0); os._exit(0)\n```"
    server = fake_server({"rules": [{"match": r".", "reply": cheat}]})
    cfg = {
        "endpoints": {"cheat": {"model": "cheat-model", "base_url": server.url, "max_retries": 1}},
        "model": "cheat", "output": str(tmp_path / "out"), "cache": str(tmp_path / "cache.sqlite"),
        "evals": {
            "livecodebench": {"source": str(DATA / "livecodebench_sample.jsonl"), "repeats": 1},
            "scicode": {"source": str(DATA / "scicode_sample.jsonl"), "targets": str(DATA / "scicode_sample_targets.json"), "repeats": 1},
        },
    }
    path = tmp_path / "index.yaml"
    path.write_text(yaml.safe_dump(cfg))
    res = CliRunner().invoke(app, ["run", "--config", str(path)])
    assert res.exit_code == 0, res.output
    for name, n in (("livecodebench", 2), ("scicode", 2)):
        recs = [json.loads(line) for line in (tmp_path / "out" / "cheat" / f"{name}.jsonl").read_text().splitlines() if line]
        assert len(recs) == n
        assert [r["correct"] for r in recs] == [False] * n, [(r["item_id"], r["method"]) for r in recs]
        assert all(r["method"].startswith("sandbox:") and r["method"] != "sandbox:passed" for r in recs)
    shown = CliRunner().invoke(app, ["show", "--output", str(tmp_path / "out"), "--model", "cheat"])
    assert shown.exit_code == 0, shown.output
    for row in ("livecodebench", "scicode", "Coding Index"):
        assert re.search(rf"{row}\s*\S\s*0\.0\s", shown.output), shown.output


def test_large_outputs_over_several_tests_are_compared_whole(sandbox):
    # ~0.9 MB per test, three tests: more than one output cap in total on the channel.
    n = 150000
    tests = [{"input": f"{n}\n", "output": "\n".join(map(str, range(n))) + "\n"} for _ in range(3)]
    code = "n = int(input())\nprint('\\n'.join(map(str, range(n))))\n"
    g = grade_lcb(sandbox, code, tests, testtype="stdin")
    assert (g.status, g.tests_passed) == ("passed", 3), g.detail
    tests[2] = {"input": f"{n}\n", "output": tests[2]["output"].replace("149999", "149998")}
    assert grade_lcb(sandbox, code, tests, testtype="stdin").detail == "test 2: wrong answer"


def test_threaded_stdin_solution_is_waited_for(sandbox):
    # Competitive-programming idiom: the work happens in a thread with a bigger stack.
    code = ("import sys, threading\nthreading.stack_size(1 << 26)\n"
            "def main():\n    import time\n    time.sleep(0.2)\n    print(int(input()) * 2)\n"
            "threading.Thread(target=main).start()\n")
    assert grade_lcb(sandbox, code, LCB_STDIN_TESTS, testtype="stdin").passed
