"""The LLM client cannot be fooled, cannot lose a paid call and never leaks a key (issue 8).

Every test runs against a real loopback server (tests/fake_llm_server.py)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest
import yaml

from arena.errors import InputError
from arena.llm import ChatRequest, Endpoint, LLMClient, ResponseCache
from arena.llm.endpoints import load_endpoints
from tests.test_llm_client import _run


def _ep(server, name="m", model="fake-model", **kw):
    return Endpoint(name=name, model=model, base_url=server.url, max_concurrency=8, timeout=2.0, max_retries=2, **kw)


def _client(endpoints, cache_path, **kw):
    cache = ResponseCache(cache_path) if cache_path is not None else None
    return LLMClient({e.name: e for e in endpoints}, cache, backoff_base=0.001, backoff_max=0.01, seed=0, **kw)


def _reqs(n, endpoint="m"):
    return [ChatRequest(endpoint, [{"role": "user", "content": f"question {i}"}], stage="t") for i in range(n)]




# ------------------------------------------------------------------ reject()
def test_rejected_reply_is_served_on_resume_and_reasked_with_retry_failed(fake_server, tmp_path):
    srv = fake_server({})
    cache = tmp_path / "cache.sqlite"
    client = _client([_ep(srv)], cache)
    first = _run(client, _reqs(3))
    client.reject(first[1], "no verdict in reply")
    assert srv.stats()["hits"] == 3
    # Resume without --retry-failed: the paid reply is served again, nothing re-paid.
    again = _run(_client([_ep(srv)], cache), _reqs(3))
    assert all(r.cached for r in again) and again[1].text == first[1].text
    assert srv.stats()["hits"] == 3
    # --retry-failed re-asks only the rejected one; the new reply replaces it and is usable.
    srv.configure({"rules": [{"match": "question 1", "reply": "a better reply"}]})
    retried = _run(_client([_ep(srv)], cache, retry_failed=True), _reqs(3))
    assert srv.stats()["hits"] == 4
    assert [r.cached for r in retried] == [True, False, True]
    assert retried[1].text == "a better reply" != first[1].text
    stored = ResponseCache(cache).get(retried[1].key)
    assert stored.rejected is None and stored.text == retried[1].text
    # ... and a further --retry-failed run has nothing left to re-ask.
    _run(_client([_ep(srv)], cache, retry_failed=True), _reqs(3))
    assert srv.stats()["hits"] == 4


def test_reject_of_a_failure_or_without_cache_is_a_no_op(fake_server, tmp_path):
    srv = fake_server({"faults": {"persistent": 1.0}})
    client = _client([_ep(srv)], tmp_path / "cache.sqlite")
    res = _run(client, _reqs(1))
    assert not res[0].ok
    client.reject(res[0], "x")
    assert ResponseCache(tmp_path / "cache.sqlite").get(res[0].key).rejected is None
    _client([_ep(srv)], None).reject(res[0], "x")


# ------------------------------------------------------------------ cache keys
def test_same_model_name_on_two_servers_never_shares_answers(fake_server, tmp_path):
    a = fake_server({"rules": [{"match": ".", "reply": "from server A"}]})
    b = fake_server({"rules": [{"match": ".", "reply": "from server B"}]})
    eps = [_ep(a, name="a", model="llama"), _ep(b, name="b", model="llama")]
    cache = tmp_path / "cache.sqlite"
    # Sequential runs (the observed collision) ...
    first = _run(_client(eps, cache), _reqs(20, "a"))
    second = _run(_client(eps, cache), _reqs(20, "b"))
    assert a.stats()["ok_unique"] == 20 and b.stats()["ok_unique"] == 20
    assert {r.text for r in first} == {"from server A"} and {r.text for r in second} == {"from server B"}
    assert not any(r.cached for r in second)
    # ... and concurrent ones (in-flight de-duplication uses the same key).
    a.reset(), b.reset()
    cache2 = tmp_path / "cache2.sqlite"
    both = _run(_client(eps, cache2), [r for pair in zip(_reqs(20, "a"), _reqs(20, "b")) for r in pair])
    assert a.stats()["hits"] == 20 and b.stats()["hits"] == 20
    assert [r.text for r in both] == ["from server A", "from server B"] * 20


def test_base_url_spellings_of_one_server_share_the_cache(fake_server, tmp_path):
    srv = fake_server({})
    eps1 = [Endpoint(name="m", model="x", base_url=srv.url, timeout=2.0, max_retries=0)]
    eps2 = [Endpoint(name="m", model="x", base_url=srv.url.replace("http://", "HTTP://") + "/", timeout=2.0, max_retries=0)]
    _run(_client(eps1, tmp_path / "c.sqlite"), _reqs(3))
    again = _run(_client(eps2, tmp_path / "c.sqlite"), _reqs(3))
    assert all(r.cached for r in again) and srv.stats()["hits"] == 3


def test_a_cache_id_keeps_a_moving_server_cached_and_apart(fake_server, tmp_path):
    # The embedded model listens on a new port each run: its cache_id, not the port, keys it.
    first, second = fake_server({}), fake_server({})
    cache = tmp_path / "c.sqlite"
    _run(_client([Endpoint(name="m", model="x", base_url=first.url, cache_id="embedded:a.gguf", timeout=2.0, max_retries=0)], cache), _reqs(3))
    again = _run(_client([Endpoint(name="m", model="x", base_url=second.url, cache_id="embedded:a.gguf", timeout=2.0, max_retries=0)], cache), _reqs(3))
    assert all(r.cached for r in again) and second.stats()["hits"] == 0
    # Another model file is another server.
    _run(_client([Endpoint(name="m", model="x", base_url=second.url, cache_id="embedded:b.gguf", timeout=2.0, max_retries=0)], cache), _reqs(3))
    assert second.stats()["hits"] == 3


def test_params_that_change_the_reply_are_part_of_the_key(fake_server, tmp_path):
    srv = fake_server({})
    cache = tmp_path / "cache.sqlite"
    variants = [
        {},
        {"extra_body": {"grammar": "root ::= \"A\""}},
        {"extra_body": {"grammar": "root ::= \"B\""}},
        {"response_format": {"type": "json_object"}},
        {"temperature": 0.7},
    ]
    for i, params in enumerate(variants, 1):
        req = ChatRequest("m", [{"role": "user", "content": "q"}], params=params)
        _run(_client([_ep(srv)], cache), [req])
        assert srv.stats()["hits"] == i, params
    # The endpoint's own params count too, as do the template version and the repeat index.
    _run(_client([_ep(srv, params={"extra_body": {"top_k": 5}})], cache), _reqs(1))
    _run(_client([_ep(srv)], cache), [ChatRequest("m", [{"role": "user", "content": "question 0"}], template_version="v2")])
    _run(_client([_ep(srv)], cache), [ChatRequest("m", [{"role": "user", "content": "question 0"}], repeat=1)])
    assert srv.stats()["hits"] == len(variants) + 3


# ------------------------------------------------------------------ keys
SECRET = "sk-live-SECRET-0123456789abcdef"


def test_a_reply_that_echoes_the_key_is_stored_and_returned_redacted(fake_server, tmp_path):
    srv = fake_server({"echo_auth_200": True})
    ep = _ep(srv, api_key_env="MY_KEY")
    client = _client([ep], tmp_path / "cache.sqlite", environ={"MY_KEY": SECRET})
    res = _run(client, _reqs(3))
    assert all(r.ok for r in res)
    assert all(r.text == "Sure. Your header was: Bearer [REDACTED] (that is all)." for r in res)
    assert all(r.payload["reasoning_content"] == "The caller authenticated with Bearer [REDACTED]." for r in res)
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("cache.sqlite*"))
    assert SECRET.encode() not in raw and b"[REDACTED]" in raw
    again = _run(_client([ep], tmp_path / "cache.sqlite", environ={"MY_KEY": SECRET}), _reqs(3))
    assert all(r.cached and SECRET not in r.text for r in again)


@pytest.mark.parametrize(
    "params, field",
    [
        ({"extra_headers": {"Authorization": "Bearer abc"}}, "params.extra_headers.Authorization"),
        ({"extra_headers": {"api-key": "abc"}}, "params.extra_headers.api-key"),
        ({"extra_headers": {"X-API-Key": "abc"}}, "params.extra_headers.X-API-Key"),
        ({"extra_headers": {"X-Custom": "Bearer abcdefghijkl"}}, "params.extra_headers.X-Custom"),
        ({"extra_headers": {"X-Custom": SECRET}}, "params.extra_headers.X-Custom"),
        ({"api_key": "abc"}, "params.api_key"),
        ({"default_headers": {"X-Trace": "1"}}, "params.default_headers"),
        ({"extra_body": {"nested": {"openai_api_key": "abc"}}}, "params.extra_body.nested.openai_api_key"),
    ],
)
def test_credentials_outside_api_key_env_are_refused_without_echo(tmp_path, params, field):
    p = tmp_path / "endpoints.yaml"
    p.write_text(yaml.safe_dump({"endpoints": {"x": {"model": "m", "params": params}}}))
    with pytest.raises(InputError) as info:
        load_endpoints(p)
    msg = str(info.value)
    assert msg.startswith(f"{p}: field 'endpoints.x.{field}': ")
    assert "api_key_env" in msg and "abc" not in msg and SECRET not in msg and "\n" not in msg


def test_harmless_params_and_headers_are_accepted(tmp_path):
    p = tmp_path / "endpoints.yaml"
    params = {"max_tokens": 64, "extra_body": {"top_k": 5, "grammar": 'root ::= "A"'}, "extra_headers": {"X-Trace": "run-7"}}
    p.write_text(yaml.safe_dump({"endpoints": {"x": {"model": "m", "api_key_env": "OPENAI_API_KEY", "params": params}}}))
    assert load_endpoints(p)["x"].params == params


@pytest.mark.parametrize("field", ["api_key", "default_headers", "extra_headers"])
def test_top_level_keys_and_headers_are_refused(tmp_path, field):
    p = tmp_path / "endpoints.yaml"
    p.write_text(yaml.safe_dump({"endpoints": {"x": {"model": "m", field: SECRET}}}))
    with pytest.raises(InputError) as info:
        load_endpoints(p)
    assert str(info.value).startswith(f"{p}: field 'endpoints.x.{field}': ") and SECRET not in str(info.value)


def test_a_key_typed_where_its_variable_name_belongs_is_not_printed(tmp_path):
    p = tmp_path / "endpoints.yaml"
    p.write_text("endpoints:\n  x:\n    model: m\n    api_key_env: sk-live-abc123\n")
    with pytest.raises(InputError) as info:
        load_endpoints(p)
    assert str(info.value) == (
        f"{p}: field 'endpoints.x.api_key_env': expected an environment variable NAME (looks like a key; value not shown)"
    )
    # Built directly (not from YAML) the endpoint refuses it too, still without the value.
    with pytest.raises(ValueError) as info2:
        Endpoint(name="x", model="m", api_key_env="sk-live-abc123")
    assert "abc123" not in str(info2.value) and "expected an environment variable NAME" in str(info2.value)


# ------------------------------------------------------------------ no paid call lost
def _arena(*args, **kw):
    return subprocess.run([sys.executable, "-m", "arena.cli", *args], capture_output=True, text=True, timeout=600, **kw)


def _answers_config(tmp_path, url, cache, n=400, concurrency=8):
    q = tmp_path / "question.jsonl"
    q.write_text("".join(json.dumps({"question_id": f"q{i:04d}", "turns": [{"content": f"Explain topic {i} at length."}]}) + "\n" for i in range(n)))
    cfg = {
        "questions": str(q),
        "output_dir": str(tmp_path / "run"),
        "cache": str(cache),
        "backoff_base": 0.01,
        "backoff_max": 0.05,
        "endpoints": {"m": {"model": "m", "base_url": url, "max_concurrency": concurrency, "timeout": 5.0, "max_retries": 1}},
        "answers": {"models": ["m"]},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture
def small_disk(tmp_path):
    """A real 512 KiB file system (tmpfs), so SQLite meets a genuinely full disk."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mnt)], capture_output=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.decode().strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def _cache_rows(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return dict(db.execute("SELECT status, COUNT(*) FROM responses GROUP BY status").fetchall())
    finally:
        db.close()


def test_full_disk_stops_the_run_at_once_with_one_line(fake_server, tmp_path, small_disk):
    srv = fake_server({"latency": 0.01})
    cache = small_disk / "cache.sqlite"
    cfg = _answers_config(tmp_path, srv.url, cache)
    res = _arena("answers", "--config", str(cfg))
    assert res.returncode == 2, res.stderr
    err = res.stderr.strip().splitlines()[-1]  # the lines before it are the progress bar
    assert err == f"error: {cache}: cannot store responses in the cache: disk full; stopped before sending more requests"
    assert "Traceback" not in res.stderr
    st, rows = srv.stats(), _cache_rows(cache)
    answered, stored = st["ok"], rows.get("ok", 0)
    print(f"server answered {answered} (hits {st['hits']}), cache holds {stored}, lost {answered - stored} of 400 planned")
    assert 0 < stored < 400
    assert answered - stored == 0, "every reply the server sent is in the cache"
    # Every answer written to the (roomy) output folder is backed by a stored reply; and once
    # the disk has room again, the resume re-pays nothing that was answered before.
    answers = (tmp_path / "run" / "model_answer" / "m.jsonl").read_text().splitlines()
    assert len(answers) <= stored
    subprocess.run(["mount", "-o", "remount,size=8m", str(small_disk)], check=True)
    again = _arena("answers", "--config", str(cfg))
    assert again.returncode == 0, again.stderr
    st2 = srv.stats()
    assert st2["ok_repeated"] == 0 and st2["ok"] == 400
    assert len((tmp_path / "run" / "model_answer" / "m.jsonl").read_text().splitlines()) == 400


@pytest.fixture
def tmpfs(tmp_path):
    """Mount a small tmpfs (so it can be made read-only for real: root ignores chmod)."""
    mounts = []

    def make(name, size="8m"):
        mnt = tmp_path / name
        mnt.mkdir()
        res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)], capture_output=True)
        if res.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {res.stderr.decode().strip()}")
        mounts.append(mnt)
        return mnt

    yield make
    for m in mounts:
        subprocess.run(["umount", "-l", str(m)], check=False)


def _read_only(mnt):
    subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)


def test_read_only_output_folder_is_one_line_for_answers(fake_server, tmp_path, tmpfs):
    srv = fake_server({})
    out = tmpfs("out")
    _read_only(out)
    cfg = _answers_config(tmp_path, srv.url, out / "run" / "cache.sqlite", n=5)
    cfg.write_text(cfg.read_text().replace(str(tmp_path / "run"), str(out / "run")))
    res = _arena("answers", "--config", str(cfg))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines() == [f"error: {out / 'run'}: read-only file system (EROFS)"]
    assert srv.stats()["hits"] == 0


def test_read_only_cache_folder_names_the_cache(fake_server, tmp_path, tmpfs):
    srv = fake_server({})
    ro = tmpfs("ro")
    (ro / "cache").mkdir()
    _read_only(ro)
    cfg = _answers_config(tmp_path, srv.url, ro / "cache" / "cache.sqlite", n=5)
    res = _arena("answers", "--config", str(cfg))
    assert res.returncode == 2 and srv.stats()["hits"] == 0
    assert res.stderr.strip().splitlines() == [
        f"error: {ro / 'cache' / 'cache.sqlite'}: cannot store responses in the cache: read-only file system; stopped before sending more requests"
    ]


def test_judging_into_a_read_only_folder_is_one_line_and_loses_nothing(fake_server, tmp_path, tmpfs):
    srv = fake_server({})
    out = tmpfs("out")
    cfg = _answers_config(tmp_path, srv.url, tmp_path / "cache.sqlite", n=5)
    data = yaml.safe_load(cfg.read_text())
    data["output_dir"] = str(out / "run")
    data["answers"]["models"] = ["m", "base"]
    data["endpoints"]["base"] = {**data["endpoints"]["m"], "model": "base"}
    data["endpoints"]["judge"] = {**data["endpoints"]["m"], "model": "judge"}
    data["judge"] = {"endpoint": "judge", "baseline": "base", "models": ["m"]}
    cfg.write_text(yaml.safe_dump(data))
    assert _arena("answers", "--config", str(cfg)).returncode == 0
    before = {p: p.read_bytes() for p in (out / "run").rglob("*.jsonl")}
    _read_only(out)
    res = _arena("judge", "--config", str(cfg))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: {out / 'run'}") and last.endswith("read-only file system (EROFS)")
    assert {p: p.read_bytes() for p in (out / "run").rglob("*.jsonl")} == before


def test_no_key_reaches_any_output_of_a_cli_run(fake_server, tmp_path):
    srv = fake_server({"echo_auth_200": True})
    cfg = _answers_config(tmp_path, srv.url, tmp_path / "cache.sqlite", n=5)
    data = yaml.safe_load(cfg.read_text())
    data["endpoints"]["m"]["api_key_env"] = "TRUST_TEST_KEY"
    cfg.write_text(yaml.safe_dump(data))
    res = _arena("answers", "--config", str(cfg), env={**os.environ, "TRUST_TEST_KEY": SECRET})
    assert res.returncode == 0, res.stderr
    assert srv.stats()["ok"] == 5
    written = [p for p in tmp_path.rglob("*") if p.is_file() and "fake_server" not in p.name]
    assert any(p.name == "run_log.jsonl" for p in written)
    for p in written:
        assert SECRET.encode() not in p.read_bytes(), p
    assert SECRET not in res.stdout + res.stderr
    answers = (tmp_path / "run" / "model_answer" / "m.jsonl").read_text()
    assert answers.count("Bearer [REDACTED]") == 5


def test_a_key_in_extra_headers_is_refused_before_any_call(fake_server, tmp_path):
    srv = fake_server({"echo_auth_200": True})
    cfg = _answers_config(tmp_path, srv.url, tmp_path / "cache.sqlite", n=5)
    data = yaml.safe_load(cfg.read_text())
    data["endpoints"]["m"]["params"] = {"extra_headers": {"Authorization": f"Bearer {SECRET}"}}
    cfg.write_text(yaml.safe_dump(data))
    res = _arena("answers", "--config", str(cfg))
    assert res.returncode == 2 and srv.stats()["hits"] == 0
    assert SECRET not in res.stdout + res.stderr
    line = " ".join(res.stderr.split())
    assert "endpoints.m.params.extra_headers.Authorization" in line and "api_key_env" in line


# ------------------------------------------------------------------ one ledger per run
def test_curation_run_has_one_ledger_with_embeddings_labels_and_annotation(fake_server, tmp_path):
    import pandas as pd

    from arena.io.jsonl import write_jsonl
    from benchbuilder.cluster import save_assignments
    from benchbuilder.config import BuildConfig
    from benchbuilder.pipeline import Pipeline

    srv = fake_server({"embedding_dim": 8, "rules": [
        {"match": "Keywords:", "reply": "Topic: Sorting"},
        {"match": "Criteria Satisfied", "reply": "Criteria Satisfied: [1, 2, 3]"},
    ]})
    ep = {"base_url": srv.url, "max_retries": 0, "price": {"input": 1.0, "output": 2.0}}
    cfg = BuildConfig(
        output=str(tmp_path / "run"),
        input={"paths": ["unused.jsonl"]},
        embedding={"backend": "openai", "endpoint": "emb", "cache": str(tmp_path / "emb.sqlite"), "batch_size": 2},
        clustering={"labeller": "llm", "label_endpoint": "lab"},
        annotation={"stages": [{"name": "s1", "endpoint": "ann"}]},
        endpoints={"emb": {"model": "e", **ep}, "lab": {"model": "l", **ep}, "ann": {"model": "a", **ep}},
    )
    p = Pipeline(cfg)
    prompts = {f"p{i}": f"sort a list of {i} numbers" for i in range(4)}
    write_jsonl(p.out / "prompts.jsonl", ({"source_id": k, "prompt": v, "source": "t"} for k, v in prompts.items()))
    p.embedder().embed(list(prompts.values()))
    labels = p.topic_model().labeller.label({0: ["sort", "list"]}, {0: ["sort a list"]})
    save_assignments(p.out / "clusters.jsonl", list(prompts), [0] * 4, labels, {0: ["sort"]})
    p.annotate()
    usage = pd.read_csv(p.out / "usage.csv").set_index("stage")
    assert usage.loc["embed", "calls"] == 2 and usage.loc["cluster_label", "calls"] == 1
    assert usage.loc["annotate:s1", "calls"] == 4
    assert usage["calls"].sum() == srv.stats()["ok"] == 7


@pytest.mark.parametrize(
    "url",
    [
        f"https://user:{SECRET}@api.example.com/v1",
        f"https://api.example.com/v1?api_key={SECRET}",
        f"https://api.example.com/v1?key={SECRET}",
        f"https://api.example.com/{SECRET}/v1",
    ],
)
def test_a_key_inside_base_url_is_refused_without_echo(tmp_path, url):
    p = tmp_path / "endpoints.yaml"
    p.write_text(yaml.safe_dump({"endpoints": {"x": {"model": "m", "base_url": url}}}))
    with pytest.raises(InputError) as info:
        load_endpoints(p)
    assert str(info.value) == (
        f"{p}: field 'endpoints.x.base_url': credentials in the URL are not accepted (value not shown); "
        "name the key's variable in api_key_env"
    )


def test_cache_reserve_is_freed_on_close_and_after_a_killed_process(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout.strip()
    stale = tmp_path / f"cache.sqlite-reserve.{dead}.abc"
    stale.write_bytes(b"\0" * 1024)
    cache = ResponseCache(tmp_path / "cache.sqlite")
    reserves = list(tmp_path.glob("cache.sqlite-reserve.*"))
    assert stale not in reserves and len(reserves) == 1 and reserves[0].stat().st_size > 0
    cache.close()
    assert not list(tmp_path.glob("cache.sqlite-reserve.*"))


def test_without_a_reserve_the_client_stops_sending_at_the_first_unstorable_reply(fake_server, tmp_path, tmpfs, monkeypatch):
    import arena.llm.cache as cache_mod

    monkeypatch.setattr(cache_mod, "RESERVE_MAX_BYTES", 0)  # the worst case: nothing held back
    srv = fake_server({"latency": 0.02})
    disk = tmpfs("tiny", size="256k")
    client = _client([_ep(srv)], disk / "cache.sqlite")
    with pytest.raises(cache_mod.CacheWriteError) as info:
        _run(client, _reqs(400))
    assert info.value.reason == "disk full" and not info.value.stored
    st, stored = srv.stats(), _cache_rows(disk / "cache.sqlite").get("ok", 0)
    print(f"no reserve: server answered {st['ok']} (hits {st['hits']}), cache holds {stored}")
    # Only the replies already on their way (at most max_concurrency=8) can be lost, and the
    # client sends nothing more: not even to a fresh request.
    assert 0 < stored < 400 and st["hits"] <= stored + 8
    with pytest.raises(cache_mod.CacheWriteError):
        _run(client, _reqs(1))
    assert srv.stats()["hits"] == st["hits"]


def test_full_output_folder_is_one_line_and_the_resume_repays_nothing(fake_server, tmp_path, tmpfs):
    srv = fake_server({"latency": 0.01})
    out = tmpfs("out", size="64k")
    cfg = _answers_config(tmp_path, srv.url, tmp_path / "cache.sqlite", n=400)
    cfg.write_text(cfg.read_text().replace(str(tmp_path / "run"), str(out / "run")))
    res = _arena("answers", "--config", str(cfg))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: {out / 'run'}") and last.endswith(": disk full (ENOSPC)")
    answered, stored = srv.stats()["ok"], _cache_rows(tmp_path / "cache.sqlite")["ok"]
    print(f"full output folder: server answered {answered}, cache holds {stored}")
    # The stage gave up on a write error, so the calls it abandoned mid-reply (at most
    # max_concurrency=8) may be lost; every reply the client had received is stored.
    assert answered < 400 and answered - 8 <= stored <= answered
    subprocess.run(["mount", "-o", "remount,size=8m", str(out)], check=True)
    again = _arena("answers", "--config", str(cfg))
    assert again.returncode == 0, again.stderr
    assert srv.stats()["ok_repeated"] == answered - stored and srv.stats()["ok"] == 400 + answered - stored
