"""The LLM client cannot be fooled, cannot lose a paid call and never leaks a key (issue 8).

Every test runs against a real loopback server (tests/fake_llm_server.py)."""

from __future__ import annotations

import asyncio

from arena.llm import ChatRequest, Endpoint, LLMClient, ResponseCache


def _ep(server, name="m", model="fake-model", **kw):
    return Endpoint(name=name, model=model, base_url=server.url, max_concurrency=8, timeout=2.0, max_retries=2, **kw)


def _client(endpoints, cache_path, **kw):
    cache = ResponseCache(cache_path) if cache_path is not None else None
    return LLMClient({e.name: e for e in endpoints}, cache, backoff_base=0.001, backoff_max=0.01, seed=0, **kw)


def _reqs(n, endpoint="m"):
    return [ChatRequest(endpoint, [{"role": "user", "content": f"question {i}"}], stage="t") for i in range(n)]


def _run(client, reqs):
    async def go():
        try:
            return await client.chat_many(reqs)
        finally:
            await client.aclose()

    return asyncio.run(go())


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
