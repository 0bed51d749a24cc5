"""The Ray engine on a two-node cluster started with ``ray start`` on this machine (a head and
a worker node, one CPU each), driven through the CLI with ``--address``: the same files as the
local engine."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parents[2]
SHAREGPT = ROOT.parent / "shared" / "data" / "prompts" / "sharegpt_en.jsonl.gz"
PORT = 6381
RAY = str(Path(sys.executable).with_name("ray"))


def _ray(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    return subprocess.run([RAY, *args], capture_output=True, text=True, timeout=180, env=env, check=check)


@pytest.fixture
def two_nodes(tmp_path):
    if not Path(RAY).exists():
        pytest.skip("the ray CLI is not installed beside this Python")
    common = ["--num-cpus", "1", "--disable-usage-stats", "--object-store-memory", str(150 * 1024**2)]
    _ray("start", "--head", "--port", str(PORT), "--node-ip-address", "127.0.0.1", "--include-dashboard=false", *common)
    try:
        _ray("start", "--address", f"127.0.0.1:{PORT}", "--node-ip-address", "127.0.0.1", *common)
        # the worker node registers with the head asynchronously
        deadline = time.time() + 90
        while "2.0 CPU" not in _ray("status", "--address", f"127.0.0.1:{PORT}", check=False).stdout:
            assert time.time() < deadline, "the second node never joined"
            time.sleep(2)
        yield f"127.0.0.1:{PORT}"
    finally:
        _ray("stop", "--force", check=False)


def test_two_node_cluster_builds_what_the_local_engine_builds(two_nodes, tmp_path):
    if not SHAREGPT.exists():
        pytest.skip("needs ../shared/data")
    import gzip

    rows = [json.loads(l) for l in gzip.open(SHAREGPT, "rt", encoding="utf-8")][:600]
    rows += [{**r, "id": r["id"] + "-copy"} for r in rows[::25]]
    corpus = tmp_path / "in.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    status = _ray("status", "--address", two_nodes).stdout
    assert status.count(" node_") == 2, status  # two nodes, one CPU each
    outs = {}
    for engine in ("local", "ray"):
        # model2vec: bit-identical embeddings on both engines (MiniLM agrees to float tolerance only)
        cfg = {"output": str(tmp_path / engine), "input": {"paths": [str(corpus)]}, "embedding": {"backend": "model2vec", "cache": str(tmp_path / f"{engine}.sqlite")},
               "clustering": {"fit_sample": 300}, "selection": {"n": 40}, "engine": {"block_size": 100}}
        (tmp_path / f"{engine}.yaml").write_text(yaml.safe_dump(cfg))
        cmd = [sys.executable, "-m", "benchbuilder.cli", "build", "-c", str(tmp_path / f"{engine}.yaml"), "--engine", engine]
        if engine == "ray":
            cmd += ["--address", two_nodes]
        t = time.time()
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT, env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"})
        assert r.returncode == 0, r.stderr[-3000:]
        outs[engine] = time.time() - t
    for f in ("prompts.jsonl", "drops.jsonl", "clusters.jsonl", "question.jsonl"):
        assert (tmp_path / "local" / f).read_bytes() == (tmp_path / "ray" / f).read_bytes(), f
    eng = json.loads((tmp_path / "ray" / "engine.json").read_text())
    assert eng["stages"]["read+prepare"]["rows"] == len(rows)
    shutil.rmtree(tmp_path / "ray", ignore_errors=True)
