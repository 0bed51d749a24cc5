"""The shared LLM client against a real loopback HTTP server with injected faults."""

from __future__ import annotations

import asyncio
import time

import pytest

from arena.llm import ChatRequest, Endpoint, LLMClient, ResponseCache
from arena.llm.endpoints import load_endpoints
from arena.errors import InputError


def _client(server, tmp_path, *, retries=5, timeout=2.0, retry_failed=False, rpm=None, cache=True, environ=None, api_key_env=None, concurrency=16):
    ep = Endpoint(name="m", model="fake-model", base_url=server.url, max_concurrency=concurrency, timeout=timeout,
                  max_retries=retries, rpm=rpm, api_key_env=api_key_env, price={"input": 1.0, "output": 2.0})
    c = ResponseCache(tmp_path / "cache.sqlite") if cache else None
    return LLMClient({"m": ep}, c, backoff_base=0.001, backoff_max=0.01, seed=0, retry_failed=retry_failed, environ=environ)


def _reqs(n, stage="t", version=""):
    return [ChatRequest("m", [{"role": "user", "content": f"question {i}"}], stage=stage, template_version=version) for i in range(n)]


def _run(client, reqs):
    async def go():
        try:
            return await client.chat_many(reqs)
        finally:
            await client.aclose()
    return asyncio.run(go())


def test_transient_faults_are_retried_until_success(fake_server, tmp_path):
    srv = fake_server({"faults": {"429": 0.2, "500": 0.2, "malformed": 0.1, "hang": 0.05}, "hang_seconds": 3, "retry_after": 0.01})
    res = _run(_client(srv, tmp_path, timeout=0.5), _reqs(200))
    assert all(r.ok for r in res)
    st = srv.stats()
    assert st["status"].get("429", 0) > 0 and st["status"].get("500", 0) > 0 and st["status"].get("malformed", 0) > 0 and st["status"].get("hang", 0) > 0
    assert st["ok"] == 200 and st["ok_repeated"] == 0
    assert sum(r.attempts > 1 for r in res) == st["hits"] - 200


def test_retry_after_is_honoured(fake_server, tmp_path):
    srv = fake_server({"faults": {"429": 1.0}, "retry_after": 0.6})
    t0 = time.monotonic()
    res = _run(_client(srv, tmp_path), _reqs(1))
    assert res[0].ok and res[0].attempts == 2
    # backoff alone would wait at most 10 ms; the server asked for 600 ms
    assert time.monotonic() - t0 >= 0.6


def test_failures_are_cached_as_failures_and_retried_on_request(fake_server, tmp_path):
    srv = fake_server({"faults": {"persistent": 1.0}})
    res = _run(_client(srv, tmp_path, retries=2), _reqs(3))
    assert not any(r.ok for r in res) and all(r.attempts == 3 for r in res)
    assert all(r.text is None and "500" in r.error for r in res)
    assert srv.stats()["hits"] == 9
    # A rerun returns the recorded failures without calling ...
    again = _run(_client(srv, tmp_path, retries=2), _reqs(3))
    assert not any(r.ok for r in again) and all(r.cached for r in again)
    assert srv.stats()["hits"] == 9
    # ... and --retry-failed re-asks them; once the server recovers they become answers.
    srv.configure({})
    fixed = _run(_client(srv, tmp_path, retries=2, retry_failed=True), _reqs(3))
    assert all(r.ok and not r.cached for r in fixed)
    assert srv.stats()["hits"] == 12
    assert ResponseCache(tmp_path / "cache.sqlite").stats() == {"ok": 3}


def test_rerun_costs_zero_calls_and_template_change_is_not_stale(fake_server, tmp_path):
    srv = fake_server({})
    first = _run(_client(srv, tmp_path), _reqs(50, version="v1"))
    client = _client(srv, tmp_path)
    second = _run(client, _reqs(50, version="v1"))
    assert srv.stats()["hits"] == 50
    assert [r.text for r in first] == [r.text for r in second] and all(r.cached for r in second)
    assert client.ledger.calls == 0 and client.ledger.totals[("t", "m")].cache_hits == 50
    _run(_client(srv, tmp_path), _reqs(50, version="v2"))
    assert srv.stats()["hits"] == 100


def test_usage_and_cost_are_tracked(fake_server, tmp_path):
    srv = fake_server({})
    client = _client(srv, tmp_path)
    res = _run(client, _reqs(10))
    df = client.ledger.to_frame()
    row = df.iloc[0]
    assert row["calls"] == 10
    assert row["prompt_tokens"] == sum(r.prompt_tokens for r in res) > 0
    expected = (row["prompt_tokens"] * 1.0 + row["completion_tokens"] * 2.0) / 1e6
    assert row["cost"] == pytest.approx(expected)


def test_dry_run_counts_uncached_calls_without_calling(fake_server, tmp_path):
    srv = fake_server({})
    _run(_client(srv, tmp_path), _reqs(4))
    client = _client(srv, tmp_path)
    est = client.estimate(_reqs(10))
    assert est.calls == 6 and est.rows[("t", "m")]["cached"] == 4 and est.cost > 0
    assert srv.stats()["hits"] == 4


def test_identical_requests_in_flight_share_one_call(fake_server, tmp_path):
    srv = fake_server({"latency": 0.1})
    res = _run(_client(srv, tmp_path), _reqs(1) * 5)
    assert all(r.ok for r in res) and srv.stats()["hits"] == 1


def test_api_key_never_reaches_cache_or_errors(fake_server, tmp_path):
    secret = "sk-test-SECRET-0123456789abcdef"
    srv = fake_server({"echo_auth_401": True})
    client = _client(srv, tmp_path, environ={"MY_KEY": secret}, api_key_env="MY_KEY")
    res = _run(client, _reqs(2))
    assert not any(r.ok for r in res)
    assert all("401" in r.error and secret not in r.error and "[REDACTED]" in r.error for r in res)
    assert srv.stats()["hits"] == 2  # 401 is not retried
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("cache.sqlite*"))
    assert secret.encode() not in raw


def test_missing_key_variable_fails_early(fake_server, tmp_path):
    srv = fake_server({})
    client = _client(srv, tmp_path, environ={}, api_key_env="NOT_SET_ANYWHERE")
    with pytest.raises(RuntimeError, match="NOT_SET_ANYWHERE"):
        client.check_keys(["m"])


def test_requests_per_minute_limit(fake_server, tmp_path):
    srv = fake_server({})
    t0 = time.monotonic()
    _run(_client(srv, tmp_path, rpm=600, cache=False), _reqs(6))
    assert time.monotonic() - t0 >= 0.5  # 6 starts spaced 0.1 s apart


def test_endpoint_yaml_errors_name_file_and_field(tmp_path):
    p = tmp_path / "endpoints.yaml"
    p.write_text("endpoints:\n  gpt:\n    model: gpt-4o\n    api_key: sk-literal\n")
    with pytest.raises(InputError, match=r"endpoints.yaml.*endpoints.gpt.api_key"):
        load_endpoints(p)
    p.write_text("endpoints:\n  gpt:\n    model: gpt-4o\n    max_concurrency: 0\n")
    with pytest.raises(InputError, match=r"endpoints.gpt.max_concurrency"):
        load_endpoints(p)
    p.write_text("endpoints:\n  gpt: {model: gpt-4o, price: {input: 2.5, output: 10}, rpm: 60}\n")
    ep = load_endpoints(p)["gpt"]
    assert ep.cost(1_000_000, 1_000_000) == pytest.approx(12.5)


def test_embeddings_go_through_the_same_retries_and_ledger(fake_server, tmp_path):
    srv = fake_server({"faults": {"429": 0.5, "500": 0.3}, "retry_after": 0.01, "embedding_dim": 8})
    client = _client(srv, tmp_path)

    async def go():
        try:
            return await asyncio.gather(*(client.embed("m", [f"text {i}", f"other {i}"]) for i in range(20)))
        finally:
            await client.aclose()

    out = asyncio.run(go())
    assert all(len(v) == 2 and len(v[0]) == 8 for v in out)
    st = srv.stats()
    assert st["ok"] == 20 and st["hits"] > 20
    row = client.ledger.to_frame().set_index("stage").loc["embed"]
    assert row["calls"] == 20 and row["prompt_tokens"] > 0 and row["cost"] > 0
    srv.configure({"faults": {"persistent": 1.0}})
    failing = _client(srv, tmp_path, retries=1)
    with pytest.raises(RuntimeError, match="failed after 2 attempts"):
        asyncio.run(failing.embed("m", ["x"]))
