"""Bench: HumanEval's 164 canonical solutions graded through the sandbox vs. plain subprocesses.

Sandboxed: :func:`grade_humaneval` per problem (a solution process and a harness process,
both jailed, calls relayed as plain data), ``workers`` problems at a time.
Reference method (same run): ``python -c program`` per problem in a bare subprocess pool
with the same worker count and no isolation (exit status as the verdict, as HumanEval's
own runner does). Target: sandbox <= 30 s on 2 cores.
Usage: python bench/index_sandbox.py [--workers 2]
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from arena.index.graders.code import grade_humaneval, humaneval_program
from arena.index.sandbox import Sandbox, SandboxLimits

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "index" / "humaneval" / "HumanEval.jsonl.gz"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args()
    with gzip.open(args.data, "rt", encoding="utf-8") as f:
        probs = [json.loads(line) for line in f.read().split("\n") if line]
    programs = [humaneval_program(p["prompt"], p["canonical_solution"], p["test"], p["entry_point"]) for p in probs]

    sb = Sandbox(SandboxLimits(cpu_seconds=10, wall_seconds=30), workers=args.workers)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(args.workers) as pool:
        results = list(pool.map(lambda p: grade_humaneval(sb, p["prompt"], p["canonical_solution"], p["test"], p["entry_point"],
                                                          tag=p["task_id"]), probs))
    t_sandbox = time.perf_counter() - t0
    passed = sum(r.passed for r in results)

    def bare(prog: str) -> bool:
        return subprocess.run([sys.executable, "-I", "-c", prog], capture_output=True, timeout=30).returncode == 0

    t0 = time.perf_counter()
    with ThreadPoolExecutor(args.workers) as pool:
        bare_ok = sum(pool.map(bare, programs))
    t_bare = time.perf_counter() - t0

    iso = results[0].runs[0]["isolation"]
    print(f"problems: {len(programs)}  workers: {args.workers}  isolation: {iso}")
    print(f"sandbox:   {passed}/{len(programs)} passed in {t_sandbox:.2f} s ({t_sandbox / len(programs) * 1000:.0f} ms/problem)")
    print(f"reference: {bare_ok}/{len(programs)} passed in {t_bare:.2f} s (bare subprocess, no isolation)")
    for r in results:
        if not r.passed:
            print(f"  not passed: {r.tag} {r.status} {r.detail} {[(x['role'], x['status'], x['wall_seconds']) for x in r.runs]}")
    print(f"ratio sandbox/reference: {t_sandbox / t_bare:.2f}x   target <= 30 s: {'OK' if t_sandbox <= 30 else 'MISSED'}")


if __name__ == "__main__":
    main()
