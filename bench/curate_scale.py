"""Curation at scale: ingest -> filter -> embed -> topics -> assign on N ShareGPT-derived prompts,
with the local engine and with the Ray engine, in one run.

Each run is a fresh subprocess with its own output folder and empty embedding cache, so every
stage computes. The parent samples the memory of the child's whole process tree every 0.5 s
(Ray's raylet, object store and workers are descendants of the driver when the driver starts
the cluster) and reports two peaks: of Σ PSS, which shares each shared page among the processes
that map it (what the tree really holds), and of Σ RSS, which counts a shared page once per
process (an over-count, never an under-count).

The corpus is the 9,126 ShareGPT prompts plus copies with 15% random word dropout (the 200k
bench's recipe, ``bench/curate_speed.py``), written once to a temporary JSONL file.

    python bench/curate_scale.py --n 1000000                       # both engines, 2 workers
    python bench/curate_scale.py --n 200000 --engines ray --workers 1 2   # scaling curve
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))


def write_corpus(n: int, path: Path) -> None:
    from curate_speed import load_prompts

    with path.open("w", encoding="utf-8") as f:
        for i, p in enumerate(load_prompts(n)):
            f.write(json.dumps({"id": f"p{i}", "prompt": p}, ensure_ascii=False) + "\n")


def _tree_memory_bytes(root: int) -> tuple[int, int]:
    """(Σ VmRSS, Σ Pss) over ``root`` and all its descendants, read from /proc (no psutil here).

    RSS counts a page once per process that maps it, so Ray's shared object store and the
    copy-on-write pages of forked workers are counted many times over; PSS divides each shared
    page among the processes that map it, so its sum is what the tree really holds.
    """
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(d))
    rss = pss = 0
    todo = [root]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Rss:"):
                        rss += int(line.split()[1]) * 1024
                    elif line.startswith("Pss:"):
                        pss += int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            continue  # the process ended between the listing and the read
    return rss, pss


CHILD = r"""
import json, sys, time
from benchbuilder.config import BuildConfig
from benchbuilder.pipeline import make_pipeline
cfg = BuildConfig(**json.loads(sys.argv[1]))
engine = sys.argv[2]
marks = []
t0 = time.perf_counter()
def log(msg):
    marks.append((time.perf_counter() - t0, msg))
p = make_pipeline(cfg, engine=engine, log=log)
ing = p.ingest()
t_ing = time.perf_counter() - t0
st = p.cluster()
t_all = time.perf_counter() - t0
json.dump({"ingest_done_s": t_ing, "total_s": t_all, "ingest": ing, "cluster": st, "marks": marks}, open(sys.argv[3], "w"))
"""


def run_one(engine: str, corpus: Path, work: Path, workers: int, fit_sample: int) -> dict:
    out = work / f"{engine}_{workers}w"
    shutil.rmtree(out, ignore_errors=True)  # an empty embedding cache: every stage computes
    cfg = {
        "output": str(out),
        "input": {"paths": [str(corpus)], "fields": {"prompt": "prompt", "id": "id"}},
        "embedding": {"cache": str(out / "emb.sqlite")},
        "clustering": {"fit_sample": fit_sample},
        # one embedding actor per worker CPU, so every stage can use what the cluster has
        "engine": {"kind": engine, "num_cpus": workers, "embed_actors": workers},
    }
    res_path = work / f"{engine}_{workers}w.json"
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(cfg), engine, str(res_path)], env=env, cwd=ROOT)
    peak = [0, 0]  # RSS, PSS
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[:] = [max(a, b) for a, b in zip(peak, _tree_memory_bytes(proc.pid))]
            stop.wait(0.5)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    t0 = time.perf_counter()
    rc = proc.wait()
    wall = time.perf_counter() - t0
    stop.set()
    th.join()
    if rc != 0:
        raise SystemExit(f"{engine} run failed with exit code {rc}")
    res = json.loads(res_path.read_text())
    res.update(engine=engine, workers=workers, wall_s=wall, peak_rss_gb=peak[0] / 1e9, peak_pss_gb=peak[1] / 1e9)
    eng = out / "engine.json"
    if eng.exists():
        res["stages"] = json.loads(eng.read_text())
    return res


def _stage_split(res: dict) -> dict[str, float]:
    """Seconds per stage from the pipeline's log marks: read, filter, embed, topics+assign."""
    marks = res["marks"]
    read_end = max((t for t, m in marks if m.startswith("read ")), default=0.0)
    emb_end = next((t for t, m in marks if m.startswith("embedded ")), res["ingest_done_s"])
    return {"read": read_end, "filter": res["ingest_done_s"] - read_end, "embed": emb_end - res["ingest_done_s"], "topics": res["total_s"] - emb_end}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--engines", nargs="+", default=["local", "ray"])
    ap.add_argument("--workers", nargs="+", type=int, default=[2], help="Ray CPUs per run (a scaling curve with 1 2)")
    ap.add_argument("--fit-sample", type=int, default=50_000)
    ap.add_argument("--work", default=None, help="folder for the corpus and outputs (default: a temporary one)")
    ap.add_argument("--json", default=None, help="write all results here")
    a = ap.parse_args()
    work = Path(a.work or tempfile.mkdtemp(prefix="curate_scale_"))
    work.mkdir(parents=True, exist_ok=True)
    corpus = work / f"sharegpt_{a.n}.jsonl"
    if not corpus.exists():
        t = time.perf_counter()
        write_corpus(a.n, corpus)
        print(f"corpus: {a.n} prompts, {corpus.stat().st_size / 1e6:.0f} MB, written in {time.perf_counter() - t:.0f} s", flush=True)
    results = []
    for engine in a.engines:
        for w in a.workers if engine == "ray" else [1]:
            r = run_one(engine, corpus, work, w, a.fit_sample)
            results.append(r)
            split = _stage_split(r)
            kept = r["ingest"]["kept"]
            print(f"{engine:5s} workers={w}: wall {r['wall_s'] / 60:.1f} min, peak PSS {r['peak_pss_gb']:.1f} GB (RSS sum {r['peak_rss_gb']:.1f} GB), kept {kept} of {r['ingest']['read']}, "
                  f"{r['cluster']['n_topics']} topics", flush=True)
            print("   " + ", ".join(f"{k} {v:.0f} s ({a.n / v if k in ('read', 'filter') else kept / max(v, 1e-9):,.0f}/s)" for k, v in split.items()), flush=True)
            if "stages" in r:
                print("   engine.json: " + json.dumps(r["stages"]), flush=True)
    by = {(r["engine"], r["workers"]): r for r in results}
    ray_runs = sorted(w for e, w in by if e == "ray")
    if len(ray_runs) >= 2:
        base = by[("ray", ray_runs[0])]["wall_s"]
        for w in ray_runs[1:]:
            print(f"ray scaling {ray_runs[0]} -> {w} workers: speed-up {base / by[('ray', w)]['wall_s']:.2f}x", flush=True)
    if ("local", 1) in by and ray_runs:
        print(f"ray ({ray_runs[-1]} workers) / local wall: {by[('ray', ray_runs[-1])]['wall_s'] / by[('local', 1)]['wall_s']:.2f}", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
