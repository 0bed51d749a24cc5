"""The Ray engine on a real local Ray cluster (``ray.init``, 2 CPUs): the same files and
decisions as the local engine, bad input reported the same way, and annotation with limits
shared across workers that survives kill -9 of a worker and of the driver."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

ray = pytest.importorskip("ray")

from benchbuilder.annotate import load_annotations  # noqa: E402
from benchbuilder.config import BuildConfig  # noqa: E402
from benchbuilder.pipeline import make_pipeline  # noqa: E402
from tests.curate.annotation_run import write_annotation_run  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SHAREGPT = ROOT.parent / "shared" / "data" / "prompts" / "sharegpt_en.jsonl.gz"
SAME_FILES = ("prompts.jsonl", "drops.jsonl", "ingest.json", "clusters.jsonl", "question.jsonl")


@pytest.fixture(scope="module")
def ray_cluster():
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.init(num_cpus=2, object_store_memory=200 * 1024**2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield ray
    ray.shutdown()


def _corpus(path: Path, n: int) -> Path:
    """ShareGPT prompts with planted exact duplicates, near-duplicates far from their originals
    (other blocks), a non-English prompt and an unusable row."""
    rows = [json.loads(l) for l in gzip.open(SHAREGPT, "rt", encoding="utf-8")][:n]
    out = list(rows)
    for i in range(0, n, 37):
        out.append({**rows[i], "id": f"{rows[i]['id']}-copy"})
    for i in range(0, n, 41):
        words = rows[i]["prompt"].split()
        if len(words) > 30:
            out.append({**rows[i], "id": f"{rows[i]['id']}-near", "prompt": " ".join(words[:-1]) + " thanks"})
    out.insert(n // 2, {"id": "fr-1", "prompt": "Bonjour, pourriez-vous m'expliquer comment fonctionne la photosynthèse chez les plantes vertes ?"})
    out.insert(n // 3, {"id": "bad-1", "prompt": 42})
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in out)
    return path


def _config(tmp: Path, engine: str, corpus: Path, **over) -> BuildConfig:
    cfg = {
        "output": str(tmp / engine), "input": {"paths": [str(corpus)]},
        # model2vec embeds each text on its own, so both engines get bit-identical vectors;
        # MiniLM batches (padding) differ between engines: see test_minilm_embeddings_agree
        "embedding": {"backend": over.pop("backend", "model2vec"), "cache": str(tmp / f"{engine}_emb.sqlite")},
        "clustering": {"fit_sample": over.pop("fit_sample", None)},
        "selection": {"n": 60, "seed": 3},
        "engine": {"kind": engine, "block_size": over.pop("block_size", 150)},
    }
    cfg.update(over)
    return BuildConfig(**cfg)


def _run(cfg: BuildConfig) -> tuple[np.ndarray, object]:
    p = make_pipeline(cfg)
    p.ingest()
    x = p.embed()
    p.cluster()
    p.select()
    return x, p


def _same_outputs(a: Path, b: Path) -> None:
    for f in SAME_FILES:
        assert (a / f).read_bytes() == (b / f).read_bytes(), f"{f} differs between engines"
    ta, tb = (json.loads((d / "topics.json").read_text()) for d in (a, b))
    assert ta["labels"] == tb["labels"] and ta["keywords"] == tb["keywords"] and ta["hierarchy"] == tb["hierarchy"]


def test_engines_agree_with_remote_topic_assignment(ray_cluster, tmp_path):
    if not SHAREGPT.exists():
        pytest.skip("needs ../shared/data")
    corpus = _corpus(tmp_path / "in.jsonl", 900)
    # fit on 400 prompts: the other ~500 are assigned by map_batches on the cluster
    x_local, _ = _run(_config(tmp_path, "local", corpus, fit_sample=400))
    x_ray, p = _run(_config(tmp_path, "ray", corpus, fit_sample=400))
    np.testing.assert_allclose(x_ray, x_local, atol=1e-5)
    _same_outputs(tmp_path / "local", tmp_path / "ray")
    ing = json.loads((tmp_path / "ray" / "ingest.json").read_text())
    # every planted kind of drop happened, across blocks of 150 lines
    assert ing["dropped"]["duplicate"] >= 24 and ing["dropped"]["near_duplicate"] >= 10 and ing["dropped"]["language"] >= 1 and ing["dropped"]["non_string"] == 1
    eng = json.loads((tmp_path / "ray" / "engine.json").read_text())
    assert {"read+prepare", "embed", "topics+assign"} <= set(eng["stages"])


def test_minilm_embeddings_agree_to_float_tolerance(ray_cluster, tmp_path):
    """The default backend for small corpora (auto -> MiniLM): the Ray engine's actor pool embeds
    in other batches than the local engine, so vectors agree to float tolerance, not bit for bit;
    filter decisions stay identical."""
    if not SHAREGPT.exists():
        pytest.skip("needs ../shared/data")
    corpus = _corpus(tmp_path / "in.jsonl", 300)
    xs = []
    for engine in ("local", "ray"):
        p = make_pipeline(_config(tmp_path, engine, corpus, backend="auto", block_size=70))
        p.ingest()
        xs.append(p.embed())
        assert json.loads((tmp_path / engine / "ingest.json").read_text())["embedding_backend"] == "minilm"
    for f in ("prompts.jsonl", "drops.jsonl"):
        assert (tmp_path / "local" / f).read_bytes() == (tmp_path / "ray" / f).read_bytes(), f
    assert xs[0].shape == xs[1].shape and xs[0].shape[1] == 384
    np.testing.assert_allclose(xs[1], xs[0], atol=1e-4)


def test_engines_select_identically_on_sharegpt(ray_cluster, tmp_path):
    """All 9,126 ShareGPT prompts, default settings: identical selections."""
    if not SHAREGPT.exists():
        pytest.skip("needs ../shared/data")
    for engine in ("local", "ray"):
        _run(_config(tmp_path, engine, SHAREGPT, block_size=2000, selection={"n": 500, "seed": 0}))
    _same_outputs(tmp_path / "local", tmp_path / "ray")
    assert len((tmp_path / "ray" / "question.jsonl").read_text().splitlines()) == 500


def test_bad_input_in_a_later_block_is_the_local_message(ray_cluster, tmp_path):
    lines = [json.dumps({"id": f"p{i}", "prompt": f"prompt number {i} about something"}) for i in range(400)]
    lines[311] = '{"id": "p311", "prompt": "broken'
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n")
    from arena.errors import InputError

    msgs = []
    for engine in ("local", "ray"):
        with pytest.raises(InputError) as ei:
            make_pipeline(_config(tmp_path, engine, tmp_path / "in.jsonl", block_size=100)).ingest()
        msgs.append(str(ei.value))
        assert not (tmp_path / engine / "prompts.jsonl").exists()
    assert msgs[0] == msgs[1] and "line 312" in msgs[0]


def test_unreachable_address_is_one_line(tmp_path):
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({"input": {"paths": [str(tmp_path / "in.jsonl")]}, "output": str(tmp_path / "o")}))
    (tmp_path / "in.jsonl").write_text('{"prompt": "hello there"}\n')
    t = time.time()
    r = subprocess.run([sys.executable, "-m", "benchbuilder.cli", "ingest", "-c", str(tmp_path / "c.yaml"), "--engine", "ray", "--address", "127.0.0.1:1"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 2 and time.time() - t < 60
    assert r.stderr.strip() == "error: field '--address': cannot reach the Ray cluster at 127.0.0.1:1: Connection refused"


# ----------------------------------------------------------------------------- annotation
def _annotation_run(tmp_path: Path, url: str, n: int, *, max_concurrency: int = 2, actors: int = 2, block_size: int = 8) -> Path:
    out = tmp_path / "run"
    write_annotation_run(out, n, n_topics=4)
    cfg = {
        "output": str(out), "input": {"paths": ["unused.jsonl"]},
        "endpoints": {"ann": {"model": "fake-annotator", "base_url": url, "max_concurrency": max_concurrency, "timeout": 20, "price": {"input": 1.0, "output": 2.0}}},
        "annotation": {"stages": [{"name": "s1", "endpoint": "ann"}]},
        "engine": {"kind": "ray", "annotate_actors": actors, "block_size": block_size, "num_cpus": 2, "object_store_mb": 200},
    }
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(cfg))
    return tmp_path / "cfg.yaml"


def _load_cfg(path: Path) -> BuildConfig:
    from benchbuilder.config import load_config

    return load_config(path)


RULES = [{"match": "Criteria Satisfied", "replies": ["Criteria Satisfied: [1, 2, 3, 4]", "Criteria Satisfied: [1, 2, 3, 4, 5, 6]", "Criteria Satisfied: [1]"]}]


def _check_one_record_each(out: Path, n: int) -> dict:
    lines = (out / "annotations" / "s1.jsonl").read_text().splitlines()
    ids = [json.loads(l)["source_id"] for l in lines]
    assert len(ids) == n and len(set(ids)) == n, "one record per prompt in the merged file"
    shard_ids = [json.loads(l)["source_id"] for p in sorted((out / "annotations" / "s1").glob("shard-*.jsonl")) for l in p.read_text().splitlines()]
    assert len(shard_ids) == len(set(shard_ids)) == n, "no prompt recorded twice across shards"
    return load_annotations(out / "annotations" / "s1.jsonl")


def _duplicates(out: Path) -> int:
    """Records beyond one per prompt, in the merged file and across the shards (for the log)."""
    merged_ids = [json.loads(l)["source_id"] for l in (out / "annotations" / "s1.jsonl").read_text().splitlines()]
    shard_ids = [json.loads(l)["source_id"] for p in (out / "annotations" / "s1").glob("shard-*.jsonl") for l in p.read_text().splitlines()]
    return len(merged_ids) - len(set(merged_ids)) + len(shard_ids) - len(set(shard_ids))


def test_ray_annotation_shares_limits_and_resumes_for_free(ray_cluster, fake_server, tmp_path):
    n = 40
    srv = fake_server({"latency": 0.2, "rules": RULES})
    cfg = _load_cfg(_annotation_run(tmp_path, srv.url, n, max_concurrency=2, actors=3))
    p = make_pipeline(cfg)
    s = p.annotate()
    st = srv.stats()
    # three workers, each with its own client allowing 2, but the endpoint's 2 held across them
    assert st["peak_inflight"] <= 2 and p.limiter_stats_["peak"] <= 2
    assert st["hits"] == n and s["stages"][0]["requests"] == n
    anns = _check_one_record_each(tmp_path / "run", n)
    assert all(a.status == "ok" for a in anns.values())
    usage = p.ledger.to_frame().set_index("stage")
    assert usage.loc["annotate:s1", "calls"] == n and usage.loc["annotate:s1", "cost"] > 0
    # a rerun asks nothing
    make_pipeline(_load_cfg(tmp_path / "cfg.yaml")).annotate()
    assert srv.stats()["hits"] == n


def test_kill_minus_9_of_a_worker_is_survived(ray_cluster, fake_server, tmp_path):
    n = 48
    srv = fake_server({"latency": 0.25, "rules": RULES})
    cfg = _load_cfg(_annotation_run(tmp_path, srv.url, n, max_concurrency=3, actors=2, block_size=12))
    p = make_pipeline(cfg)
    result: dict = {}
    th = threading.Thread(target=lambda: result.update(s=p.annotate()), daemon=True)
    th.start()
    deadline = time.time() + 120
    while time.time() < deadline and (srv.stats()["hits"] < 10 or not getattr(p, "workers_", None)):
        time.sleep(0.05)
    victim = ray.get(p.workers_[0].pid.remote())
    os.kill(victim, signal.SIGKILL)
    th.join(300)
    assert not th.is_alive() and "s" in result, "the stage finished after the worker was killed"
    anns = _check_one_record_each(tmp_path / "run", n)
    assert all(a.status == "ok" for a in anns.values())
    st = srv.stats()
    # a reply paid for and cached is never asked again; only calls in flight in the killed
    # worker (at most the endpoint's 3) can have been asked twice
    assert st["ok_repeated"] <= 3, st["ok_repeated"]
    assert st["hits"] <= n + 3
    print(f"\nworker kill: {n} prompts, {st['hits']} server hits, {st['ok_repeated']} answered twice (in flight at the kill), {_duplicates(tmp_path / 'run')} duplicate records")


def test_kill_minus_9_of_the_driver_then_resume(fake_server, tmp_path):
    n = 48
    srv = fake_server({"latency": 0.25, "rules": RULES})
    cfg_path = _annotation_run(tmp_path, srv.url, n, max_concurrency=3, actors=2, block_size=6)
    cmd = [sys.executable, "-m", "benchbuilder.cli", "annotate", "--config", str(cfg_path)]
    shard_dir = tmp_path / "run" / "annotations" / "s1"
    log = open(tmp_path / "first.log", "w")
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=log, start_new_session=True, env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"})
    deadline = time.time() + 180

    def recorded() -> int:
        return sum(len(p.read_text().splitlines()) for p in shard_dir.glob("shard-*.jsonl")) if shard_dir.exists() else 0

    while time.time() < deadline and proc.poll() is None and recorded() < 12:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)  # the driver only
    proc.wait()
    time.sleep(2.0)
    try:  # then the cluster it had started, which would otherwise outlive the test
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    time.sleep(0.5)
    before = recorded()
    assert 12 <= before < n, (tmp_path / "first.log").read_text()[-2000:]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"})
    assert r.returncode == 0, r.stderr[-2000:]
    anns = _check_one_record_each(tmp_path / "run", n)
    assert all(a.status == "ok" for a in anns.values())
    st = srv.stats()
    assert st["ok_repeated"] <= 3, st["ok_repeated"]
    print(f"\ndriver kill: {n} prompts, {before} recorded before the kill, {st['hits']} server hits, {st['ok_repeated']} answered twice (in flight at the kill), {_duplicates(tmp_path / 'run')} duplicate records")
    hits = st["hits"]
    subprocess.run(cmd, cwd=ROOT, capture_output=True, timeout=300, check=True)
    assert srv.stats()["hits"] == hits
