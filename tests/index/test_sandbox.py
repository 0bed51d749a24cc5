"""Sandbox: HumanEval canonical solutions pass, mutants fail, attacks are contained."""

from __future__ import annotations

import gzip
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from arena.index.graders.code import extract_code, grade_humaneval, grade_lcb
from arena.index.sandbox import Sandbox, SandboxLimits


@pytest.fixture(scope="module")
def sandbox():
    return Sandbox(SandboxLimits(cpu_seconds=5, wall_seconds=8, memory_bytes=1024**3), workers=2)


def _humaneval(shared_data):
    with gzip.open(shared_data / "index" / "humaneval" / "HumanEval.jsonl.gz", "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f.read().split("\n") if line]


def _grade_all(sandbox, cases):
    with ThreadPoolExecutor(sandbox.workers) as pool:
        return list(pool.map(lambda c: grade_humaneval(sandbox, *c[:4], tag=c[5]), cases))


def test_all_humaneval_canonical_solutions_pass(shared_data, sandbox):
    probs = _humaneval(shared_data)
    assert len(probs) == 164
    results = _grade_all(sandbox, [(p["prompt"], p["canonical_solution"], p["test"], p["entry_point"], None, p["task_id"]) for p in probs])
    failed = [(r.tag, r.status, r.detail, r.stderr[-200:]) for r in results if not r.passed]
    assert failed == []
    assert sum(r.passed for r in results) == 164


def _mutate_return(solution: str) -> str:
    """Wrap every returned value so that it is wrong (ints +1, strings +'x', bools negated...)."""
    return re.sub(r"(?m)^(\s*)return (.+)$", r"\1return __mutant(\2)", solution)


MUTANT_HELPER = '''
def __mutant(v):
    if isinstance(v, bool):
        return not v
    if isinstance(v, (int, float)):
        return v + 1
    if isinstance(v, str):
        return v + "x"
    if isinstance(v, (list, tuple)):
        return type(v)(list(v) + [None])
    return None
'''


def test_mutated_solutions_fail(shared_data, sandbox):
    probs = _humaneval(shared_data)[:40]
    cases = []
    for p in probs:
        mutated = _mutate_return(p["canonical_solution"])
        assert mutated != p["canonical_solution"]
        prompt = MUTANT_HELPER + p["prompt"]
        cases.append((prompt, mutated, p["test"], p["entry_point"], None, p["task_id"]))
    # Second kind: drop the solution body entirely (returns None).
    for p in probs[:10]:
        cases.append((p["prompt"], "    pass\n", p["test"], p["entry_point"], None, p["task_id"] + "/pass"))
    results = _grade_all(sandbox, cases)
    survivors = [r.tag for r in results if r.passed]
    assert survivors == []
    assert all(r.status in ("wrong_answer", "runtime_error") for r in results), [(r.tag, r.status, r.detail) for r in results if r.status not in ("wrong_answer", "runtime_error")]


def test_infinite_loop_is_stopped(sandbox):
    r = sandbox.run("while True:\n    pass\n")
    assert r.status in {"timeout", "cpu_limit"}
    assert r.wall_seconds < sandbox.limits.wall_seconds + 5


def test_fork_bomb_is_contained_and_suite_continues(sandbox):
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    r = sandbox.run(bomb)
    assert r.status in {"timeout", "cpu_limit", "killed"}
    if os.geteuid() == 0:  # per-slot uid: nothing may survive the run
        uid = r.isolation["uid"]
        left = [p for p in os.listdir("/proc") if p.isdigit() and _uid_of(p) == uid]
        assert left == []
    after = sandbox.run("print(sum(range(10)))")
    assert after.passed and after.stdout.strip() == "45"


def _uid_of(pid: str) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def test_huge_allocation_is_refused(sandbox):
    r = sandbox.run("x = bytearray(10 * 1024**3)\nprint('allocated')\n")
    assert r.status == "memory_limit"
    assert "allocated" not in r.stdout


def test_write_outside_workdir_is_contained(sandbox, tmp_path):
    target = tmp_path / "escaped.txt"
    home_target = os.path.expanduser("~/arena_sandbox_escape.txt")
    prog = (
        "import os\n"
        "open('inside.txt', 'w').write('ok')\n"
        "for path in (%r, %r, '/tmp/arena_escape.txt'):\n"
        "    try:\n"
        "        open(path, 'w').write('escaped')\n"
        "        print('wrote', path)\n"
        "    except OSError as e:\n"
        "        print('blocked', path, type(e).__name__)\n"
    ) % (str(target), home_target)
    r = sandbox.run(prog)
    assert r.passed, r.stderr
    assert not target.exists()
    assert not os.path.exists(home_target)
    assert not os.path.exists("/tmp/arena_escape.txt")


def test_parent_api_key_is_not_reachable(sandbox, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-parent-secret-0123")
    prog = (
        "import os\n"
        "found = [k for k, v in os.environ.items() if 'secret' in v or 'KEY' in k]\n"
        "for pid in os.listdir('/proc'):\n"
        "    if pid.isdigit():\n"
        "        try:\n"
        "            if b'parent-secret' in open(f'/proc/{pid}/environ', 'rb').read():\n"
        "                found.append(pid)\n"
        "        except OSError:\n"
        "            pass\n"
        "try:\n"
        "    if b'parent-secret' in open(f'/proc/{os.getppid()}/environ', 'rb').read():\n"
        "        found.append('ppid')\n"
        "except OSError:\n"
        "    pass\n"
        "print('FOUND' if found else 'CLEAN', found)\n"
    )
    r = sandbox.run(prog)
    assert r.passed, r.stderr
    assert r.stdout.startswith("CLEAN")
    assert "sk-test" not in r.stdout + r.stderr


def test_network_is_off_where_namespaces_work(sandbox):
    r = sandbox.run("import socket\ns = socket.socket()\ns.settimeout(2)\ns.connect(('1.1.1.1', 80))\n")
    if not r.isolation.get("net_ns"):
        pytest.skip("no network namespace on this kernel (documented: network not isolated)")
    assert r.status == "failed" and ("unreachable" in r.stderr or "OSError" in r.stderr)


def test_extract_code_and_lcb_harnesses(sandbox):
    resp = "Here:\n```python\nn = int(input())\nprint(n * 2)\n```\nDone."
    code = extract_code(resp)
    assert code == "n = int(input())\nprint(n * 2)"
    assert extract_code("no code") is None
    ok = grade_lcb(sandbox, code, [{"input": "3\n", "output": "6\n"}, {"input": "5\n", "output": "10"}], testtype="stdin")
    assert ok.passed and ok.tests_passed == 2, ok.to_dict()
    bad = grade_lcb(sandbox, code, [{"input": "3\n", "output": "7\n"}], testtype="stdin")
    assert bad.status == "wrong_answer"
    fn = "class Solution:\n    def twoSum(self, nums: List[int], target: int) -> List[int]:\n        seen = {}\n        for i, x in enumerate(nums):\n            if target - x in seen:\n                return [seen[target - x], i]\n            seen[x] = i\n"
    tests = [{"input": "[2,7,11,15]\n9", "output": "[0, 1]"}, {"input": "[3,2,4]\n6", "output": "[1, 2]"}]
    assert grade_lcb(sandbox, fn, tests, testtype="functional", fn_name="twoSum").passed
    wrong = fn.replace("return [seen[target - x], i]", "return [i, seen[target - x]]")
    assert grade_lcb(sandbox, wrong, tests, testtype="functional", fn_name="twoSum").status == "wrong_answer"


def test_two_sandboxes_never_share_uids_nor_kill_each_others_runs():
    if os.geteuid() != 0:
        pytest.skip("per-slot uids are used only as root")
    from arena.index.sandbox import UID_BLOCK

    limits = SandboxLimits(cpu_seconds=5, wall_seconds=10)
    a, b = Sandbox(limits, workers=1), Sandbox(limits, workers=1)
    assert abs(a.base_uid - b.base_uid) >= UID_BLOCK
    with ThreadPoolExecutor(1) as pool:
        slow = pool.submit(a.run, "import time\ntime.sleep(2)\nprint('alive')\n")
        others = [b.run("print(1)") for _ in range(4)]  # each ends with a sweep of b's uid
        r = slow.result()
    assert [o.stdout for o in others] == ["1\n"] * 4
    assert r.passed and r.stdout == "alive\n", (r.status, r.stderr)
    assert r.isolation["uid"] != others[0].isolation["uid"]
