"""Report speed at scale: 30 models x 500 prompts x 2 games with real-length texts.

Generates the run (tests/report/synthetic.py), builds the report with `arena report` (wall
time of the command, imports included), then drives headless Chromium (Playwright, the system
`chromium`) over file://:

* leaderboard interactive: page.goto -> leaderboard table rows and forest plot drawn (wall, with
  Playwright's round trips), and the browser's own mark (navigation start -> drawn);
* a model's battle list opens: choosing another model in the Battles page -> its rows shown
  (median over several models; each model's battles are a separate data file loaded on demand).

Targets (issue 10): build <= 30 s, leaderboard <= 1.5 s, battle list <= 1 s.

    python bench/report_speed.py [--models 30] [--prompts 500] [--words 500] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "report"))

from browser import Page, browser  # noqa: E402
from synthetic import make_arena_run  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", type=int, default=30)
    ap.add_argument("--prompts", type=int, default=500)
    ap.add_argument("--words", type=int, default=500, help="approximate words per answer")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--keep", type=Path, default=None, help="keep the run and site here")
    a = ap.parse_args()

    work = a.keep or Path(tempfile.mkdtemp(prefix="report_speed_"))
    run, site = work / "run", work / "site"
    if run.exists():
        shutil.rmtree(run)
    t = time.perf_counter()
    make_arena_run(run, n_models=a.models, n_questions=a.prompts, words=a.words, seed=0)
    size = sum(p.stat().st_size for p in run.rglob("*") if p.is_file()) / 1e6
    print(f"generated {a.models} models x {a.prompts} prompts x 2 games ({size:.0f} MB of run files) in {time.perf_counter() - t:.1f} s")

    t = time.perf_counter()
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = subprocess.run([sys.executable, "-m", "arena.cli", "report", str(run), "--output", str(site)], capture_output=True, text=True)
    build = time.perf_counter() - t
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    if res.returncode != 0:
        sys.exit(res.stderr)
    site_mb = sum(p.stat().st_size for p in site.rglob("*") if p.is_file()) / 1e6
    print(f"build: {build:.2f} s wall, {cpu:.2f} s CPU (arena report, imports included); site {site_mb:.1f} MB; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    lb_times, lb_marks, battle_times = [], [], []
    with browser() as b:
        for _ in range(a.repeats):
            p = Page(b)
            t = time.perf_counter()
            p.page.goto(f"file://{site}/index.html#/leaderboard")
            p.page.wait_for_selector("#leaderboard-table tbody tr")
            p.page.wait_for_selector("#forest .point")
            lb_times.append(time.perf_counter() - t)
            lb_marks.append(p.page.evaluate("performance.getEntriesByName('bbr-leaderboard-drawn')[0].startTime") / 1000)
            assert not p.errors, p.errors
            p.page.close()
        p = Page(b)
        p.page.goto(f"file://{site}/index.html#/battles/0/model-00")
        p.page.wait_for_selector("#battle-list .row")
        for k in range(1, a.repeats + 1):
            model = f"model-{k:02d}"
            t = time.perf_counter()
            p.page.select_option("select[aria-label=Model]", model)
            p.page.wait_for_function(
                "m => document.querySelector('#model-answer') === null && (document.querySelector('select[aria-label=Model]') || {}).value === m"
                " && document.querySelectorAll('#battle-list .row').length > 0", arg=model)
            battle_times.append(time.perf_counter() - t)
        assert not p.errors, p.errors
    print(f"leaderboard interactive: median {statistics.median(lb_times):.3f} s wall through Playwright (max {max(lb_times):.3f} s over {len(lb_times)} loads); "
          f"browser's own navigation start -> table and plot drawn: median {statistics.median(lb_marks):.3f} s")
    print(f"battle list opens: median {statistics.median(battle_times):.3f} s (max {max(battle_times):.3f} s over {len(battle_times)} models)")
    ok = build <= 30 and statistics.median(lb_times) <= 1.5 and statistics.median(battle_times) <= 1.0
    print("targets (30 s / 1.5 s / 1 s):", "met" if ok else "NOT met")
    if a.keep is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
