"""The single asynchronous LLM client used by every stage.

It owns, in one place: per-endpoint bounded concurrency and request-rate limits, retries
with exponential backoff and jitter that honour ``Retry-After``, timeouts, the persistent
content-addressed cache, usage/cost accounting, dry-run estimates, and key hygiene.
Callers describe *what* to ask with :class:`ChatRequest`; they never build API clients.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterable, Mapping, Sequence

import openai

try:  # the HTTP library the installed openai SDK is built on
    import httpx2 as _http
except ImportError:  # pragma: no cover - older SDKs use httpx
    import httpx as _http

from arena.llm.cache import DEFAULT_BASE_URL, CacheWriteError, ResponseCache, cache_key
from arena.llm.cost import DryRunEstimate, UsageLedger, estimate_tokens
from arena.llm.endpoints import Endpoint

REDACTED = "[REDACTED]"

# Status codes that a retry can fix; anything else 4xx is the caller's mistake.
RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529}


@dataclass(eq=False)
class ChatRequest:
    """One chat completion to make.

    ``params`` override the endpoint's own params. ``template_version`` is the content hash of
    the prompt template that produced ``messages``; with ``repeat`` (for repeated sampling of
    the same prompt) it is part of the cache key. ``meta`` travels with the result untouched.
    """

    endpoint: str
    messages: Sequence[Mapping[str, Any]]
    params: Mapping[str, Any] = field(default_factory=dict)
    template_version: str = ""
    stage: str = "default"
    repeat: int = 0
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class ChatResult:
    request: ChatRequest
    key: str
    ok: bool
    text: str | None
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    cost: float = 0.0
    cached: bool = False
    attempts: int = 0
    payload: dict[str, Any] = field(default_factory=dict)


def _logprobs(choice: Any) -> list[dict[str, Any]] | None:
    """``logprobs.content`` as plain data: token, logprob and the top alternatives."""
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if not content:
        return None
    out = []
    for t in content:
        top = [[a.token, float(a.logprob)] for a in (getattr(t, "top_logprobs", None) or [])]
        out.append({"token": t.token, "logprob": float(t.logprob), "top_logprobs": top})
    return out


class _RateLimiter:
    """Spaces request starts so that at most ``rpm`` start in any minute on average."""

    def __init__(self, rpm: float):
        self.interval = 60.0 / rpm
        self.next_start = 0.0
        self.lock = asyncio.Lock()

    async def wait(self) -> None:
        async with self.lock:
            now = time.monotonic()
            start = max(now, self.next_start)
            self.next_start = start + self.interval
        if start > now:
            await asyncio.sleep(start - now)


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class LLMClient:
    """Make chat completions through OpenAI-compatible endpoints, cached and accounted.

    Parameters
    ----------
    endpoints: the declared endpoints by name.
    cache: where responses (and failures) persist; ``None`` disables caching.
    ledger: usage accumulator; a fresh one is made if omitted.
    retry_failed: re-ask requests whose cached outcome is a failure.
    backoff_base, backoff_max: seconds for exponential backoff (``base * 2**attempt``, capped,
        with full jitter in [0.5, 1]).
    environ: where API keys are read from (defaults to ``os.environ``).
    seed: seeds the jitter so retry timing is reproducible in tests.
    gate: optional ``gate(endpoint_name)`` returning an async context manager held around every
        attempt, on top of this client's own limits: how several processes (the Ray engine's
        workers) share one endpoint's concurrency and rate limits.
    """

    def __init__(
        self,
        endpoints: Mapping[str, Endpoint],
        cache: ResponseCache | None = None,
        *,
        ledger: UsageLedger | None = None,
        retry_failed: bool = False,
        backoff_base: float = 1.0,
        backoff_max: float = 60.0,
        environ: Mapping[str, str] | None = None,
        seed: int | None = None,
        gate: Callable[[str], Any] | None = None,
    ):
        self.endpoints = dict(endpoints)
        self._gate = gate
        self.cache = cache
        self.ledger = ledger if ledger is not None else UsageLedger()
        self.retry_failed = retry_failed
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self._environ = os.environ if environ is None else environ
        self._rng = random.Random(seed)
        self._clients: dict[str, openai.AsyncOpenAI] = {}
        self._semaphores: dict[str, asyncio.Semaphore] = {}
        self._limiters: dict[str, _RateLimiter] = {}
        self._inflight: dict[str, asyncio.Future] = {}
        self._secrets = self._collect_secrets()
        # Set when the cache cannot store a response: from then on nothing is sent.
        self._halted: CacheWriteError | None = None
        self._attempts: set[asyncio.Task] = set()
        self._calls: set[asyncio.Future] = set()  # calls between asking and storing

    # ----------------------------------------------------------------- helpers
    def endpoint(self, name: str) -> Endpoint:
        try:
            return self.endpoints[name]
        except KeyError:
            known = ", ".join(sorted(self.endpoints)) or "none"
            raise KeyError(f"unknown endpoint '{name}' (declared: {known})") from None

    def _collect_secrets(self) -> list[str]:
        out = []
        for ep in self.endpoints.values():
            if ep.api_key_env and self._environ.get(ep.api_key_env):
                out.append(self._environ[ep.api_key_env])
        return [s for s in out if len(s) >= 4]

    def scrub(self, text: str) -> str:
        """Replace every configured API key value in ``text`` with ``[REDACTED]``. Everything the
        client stores, returns or raises passes through here: a server that echoes the key back
        (in an error or in a successful reply) must not plant it in caches, outputs or logs."""
        for s in self._secrets:
            text = text.replace(s, REDACTED)
        return text

    def _scrub_any(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, Mapping):
            return {self._scrub_any(k): self._scrub_any(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self._scrub_any(v) for v in value]
        return value

    def request_params(self, req: ChatRequest) -> dict[str, Any]:
        return {**self.endpoint(req.endpoint).params, **req.params}

    def key_for(self, req: ChatRequest) -> str:
        """The cache (and in-flight de-duplication) key: what was served, by which server."""
        ep = self.endpoint(req.endpoint)
        server = f"cache-id:{ep.cache_id}" if ep.cache_id else self._base_url(ep)
        return cache_key(ep.model, req.messages, self.request_params(req), req.template_version, req.repeat, server)

    def _base_url(self, ep: Endpoint) -> str:
        # Resolved here, not by the SDK, so the key names the server the call really goes to.
        return ep.base_url or self._environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL

    def check_keys(self, names: Iterable[str]) -> None:
        """Fail early, and without naming any value, when a declared key variable is unset."""
        for name in set(names):
            ep = self.endpoint(name)
            if ep.api_key_env and not self._environ.get(ep.api_key_env):
                raise RuntimeError(f"endpoint '{name}' needs the environment variable {ep.api_key_env}, which is not set")

    def _client(self, ep: Endpoint) -> openai.AsyncOpenAI:
        client = self._clients.get(ep.name)
        if client is None:
            key = self._environ.get(ep.api_key_env, "") if ep.api_key_env else ""
            client = openai.AsyncOpenAI(
                api_key=key or "EMPTY",
                base_url=self._base_url(ep),
                timeout=ep.timeout,
                max_retries=0,  # retries are ours: Retry-After, jitter and attempt caps live here
                http_client=_http_client(ep),
            )
            self._clients[ep.name] = client
            self._semaphores[ep.name] = asyncio.Semaphore(ep.max_concurrency)
            if ep.rpm:
                self._limiters[ep.name] = _RateLimiter(ep.rpm)
        return client

    async def aclose(self) -> None:
        for c in self._clients.values():
            await c.close()
        self._clients.clear()
        self._semaphores.clear()
        self._limiters.clear()

    def reject(self, result: ChatResult, reason: str) -> None:
        """Mark ``result``'s reply as rejected: it arrived, but the caller could not use it
        (an unparseable verdict, a grader reply with no answer in it).

        The reply stays in the cache. Without ``retry_failed`` it is served again on resume,
        so a rerun re-pays nothing and reaches the same outcome; with ``retry_failed`` (the
        ``--retry-failed`` flag) it is re-asked like a failed call, and the new reply replaces
        it (and is no longer rejected unless the caller rejects it again). Failed results and
        runs without a cache have nothing to mark; the call is then a no-op.
        """
        if self.cache is None or not result.ok:
            return
        try:
            self.cache.reject(result.key, self.scrub(reason))
        except CacheWriteError as exc:  # the disk is full here too: stop like a failed store
            self._halt(exc)
            raise

    # ----------------------------------------------------------------- dry run
    def estimate(self, requests: Iterable[ChatRequest], *, output_tokens: int | None = None) -> DryRunEstimate:
        """Count the calls a run would make and their cost, without calling anything."""
        est = DryRunEstimate()
        seen: set[str] = set()
        for req in requests:
            ep = self.endpoint(req.endpoint)
            key = self.key_for(req)
            hit = self.cache.get(key) if self.cache else None
            will_call = key not in seen and (hit is None or (not hit.usable and self.retry_failed))
            seen.add(key)
            ptok = sum(estimate_tokens(str(m.get("content", ""))) + 4 for m in req.messages)
            params = self.request_params(req)
            ctok = output_tokens or ep.expected_output_tokens or int(params.get("max_tokens") or params.get("max_completion_tokens") or 1024)
            est.add(req.stage, req.endpoint, call=will_call, prompt_tokens=ptok, completion_tokens=ctok, cost=ep.cost(ptok, ctok))
        return est

    # ----------------------------------------------------------------- calls
    def _check_halted(self) -> None:
        if self._halted is not None:
            raise self._halted

    def _halt(self, exc: CacheWriteError) -> None:
        """Stop the run: no new request (or retry) is sent. While the cache's reserve still
        had room (``exc.stored``), attempts in flight finish and are stored; once a reply is
        truly lost, the rest are cancelled (they could not be stored either)."""
        if self._halted is None:
            self._halted = exc
        if exc.stored:
            return
        current = asyncio.current_task()
        for task in list(self._attempts):
            if task is not current:
                task.cancel()

    async def chat(self, req: ChatRequest) -> ChatResult:
        """One request: from the cache if possible, else the API with retries; never raises
        for API trouble (the result says ``ok=False`` with the error).

        Raises :class:`CacheWriteError` when the cache cannot store a reply (disk full,
        read-only), since a reply that is not stored would be paid for again. The client then
        stops: no further request or retry is sent, replies already on their way are stored
        (into the cache's reserve) before the error reaches any caller, and this and every
        later ``chat`` raises it."""
        try:
            return await self._chat(req)
        except CacheWriteError:
            await self._quiet()
            raise

    async def _chat(self, req: ChatRequest) -> ChatResult:
        self._check_halted()
        ep = self.endpoint(req.endpoint)
        key = self.key_for(req)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None and (hit.usable or not self.retry_failed):
                self.ledger.record(req.stage, ep.name, cached=True, ok=hit.ok, cost=hit.cost)
                return ChatResult(
                    request=req, key=key, ok=hit.ok, text=hit.text, error=hit.error,
                    prompt_tokens=hit.prompt_tokens, completion_tokens=hit.completion_tokens,
                    reasoning_tokens=hit.reasoning_tokens, cost=hit.cost, cached=True,
                    attempts=hit.attempts, payload=hit.payload,
                )
        # Identical requests in flight at once share one call.
        pending = self._inflight.get(key)
        if pending is not None:
            res: ChatResult = await asyncio.shield(pending)
            return ChatResult(**{**res.__dict__, "request": req, "cached": True})
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._inflight[key] = fut
        try:
            res = await self._call(ep, req, key)
            fut.set_result(res)
            return res
        except BaseException as exc:  # cancelled: let waiters see it too
            fut.set_exception(exc)
            fut.exception()  # mark retrieved
            raise
        finally:
            self._inflight.pop(key, None)

    async def _retrying(
        self, ep: Endpoint, attempt: Callable[[], Awaitable[Any]], keep: Callable[[Any, int], None] | None = None
    ) -> tuple[Any, int, str | None]:
        """Run ``attempt`` under the endpoint's concurrency and rate limits, retrying what a retry
        can fix. Returns ``(value, attempts, None)`` or ``(None, attempts, error)``. If the caller
        is cancelled after a reply arrived but before it was handed back, ``keep`` still gets it."""
        attempts = 0
        async with self._semaphores[ep.name]:
            while True:
                attempts += 1
                limiter = self._limiters.get(ep.name)
                if limiter is not None:
                    await limiter.wait()
                self._check_halted()
                task = asyncio.ensure_future(self._gated(ep.name, attempt))
                self._attempts.add(task)
                try:
                    return await task, attempts, None
                except asyncio.CancelledError:
                    # Our own halt cancelled the attempt: report why; a cancel from outside
                    # (the caller gave up) stays a cancel.
                    me = asyncio.current_task()
                    outside = bool(getattr(me, "cancelling", lambda: 0)())  # Task.cancelling: 3.11+
                    if keep is not None and task.done() and not task.cancelled() and task.exception() is None:
                        keep(task.result(), attempts)  # paid for: store it before giving up
                    if self._halted is not None and not outside:
                        raise self._halted from None
                    raise
                except _Retryable as exc:
                    if attempts > ep.max_retries:
                        return None, attempts, self.scrub(str(exc))
                    await asyncio.sleep(self._backoff(attempts, exc.retry_after))
                except openai.APIStatusError as exc:  # non-retryable HTTP status
                    return None, attempts, self.scrub(f"HTTP {exc.status_code}: {exc.message}")
                finally:
                    self._attempts.discard(task)

    async def _gated(self, name: str, attempt: Callable[[], Awaitable[Any]]) -> Any:
        if self._gate is None:
            return await attempt()
        async with self._gate(name):
            return await attempt()

    async def _quiet(self) -> None:
        """Wait until no call is between asking and storing, so that when the run stops (the
        error reaches the caller, whose task group then cancels everything) every reply that
        is on its way has landed in the cache."""
        while self._calls:
            await asyncio.wait(set(self._calls))

    async def _call(self, ep: Endpoint, req: ChatRequest, key: str) -> ChatResult:
        done = asyncio.get_running_loop().create_future()
        self._calls.add(done)
        try:
            return await self._ask_and_store(ep, req, key)
        finally:
            self._calls.discard(done)
            done.set_result(None)

    async def _ask_and_store(self, ep: Endpoint, req: ChatRequest, key: str) -> ChatResult:
        client = self._client(ep)
        params = self.request_params(req)

        def build(value: Any, attempts: int, error: str | None = None) -> ChatResult:
            if value is None:
                return ChatResult(request=req, key=key, ok=False, text=None, error=error, attempts=attempts)
            text, payload, (ptok, ctok, rtok) = value
            if self._secrets:
                text, payload = self.scrub(text), self._scrub_any(payload)
            return ChatResult(
                request=req, key=key, ok=True, text=text, prompt_tokens=ptok, completion_tokens=ctok,
                reasoning_tokens=rtok, cost=ep.cost(ptok, ctok), attempts=attempts, payload=payload,
            )

        value, attempts, error = await self._retrying(
            ep, lambda: self._attempt(client, ep, req, params), keep=lambda v, n: self._store(build(v, n))
        )
        result = build(value, attempts, error)
        self._store(result)
        return result

    async def embed(self, endpoint: str, texts: Sequence[str], *, stage: str = "embed") -> list[list[float]]:
        """Embeddings of ``texts`` (one request) with the chat path's limits, retries, accounting
        and key hygiene. Vectors are cached by the caller's embedding cache, keyed by text, so
        they are not stored again here. Raises ``RuntimeError`` once retries are exhausted."""
        ep = self.endpoint(endpoint)
        client = self._client(ep)

        async def attempt() -> tuple[list[list[float]], int]:
            resp = await _sdk_call(client.embeddings.create(model=ep.model, input=list(texts)))
            data = sorted(getattr(resp, "data", None) or [], key=lambda d: d.index)
            if len(data) != len(texts):
                raise _Retryable(f"malformed response: {len(data)} embeddings for {len(texts)} inputs")
            return [d.embedding for d in data], int(getattr(getattr(resp, "usage", None), "prompt_tokens", 0) or 0)

        value, attempts, error = await self._retrying(ep, attempt)
        if value is None:
            self.ledger.record(stage, ep.name, cached=False, ok=False)
            raise RuntimeError(f"embedding endpoint '{ep.name}' failed after {attempts} attempts: {error}")
        vectors, ptok = value
        self.ledger.record(stage, ep.name, cached=False, ok=True, prompt_tokens=ptok, cost=ep.cost(ptok, 0))
        return vectors

    async def _attempt(
        self, client: openai.AsyncOpenAI, ep: Endpoint, req: ChatRequest, params: Mapping[str, Any]
    ) -> tuple[str, dict[str, Any], tuple[int, int, int]]:
        resp = await _sdk_call(client.chat.completions.create(model=ep.model, messages=list(req.messages), **params))
        choices = getattr(resp, "choices", None)
        if not choices or not hasattr(choices[0], "message"):
            raise _Retryable("malformed response: no choices")
        msg = choices[0].message
        text = msg.content
        if text is None:
            raise _Retryable(f"empty response (finish_reason={choices[0].finish_reason})")
        payload: dict[str, Any] = {"finish_reason": choices[0].finish_reason, "id": getattr(resp, "id", None)}
        reasoning = getattr(msg, "reasoning_content", None) or (msg.model_extra or {}).get("reasoning_content")
        if reasoning:
            payload["reasoning_content"] = reasoning
        logprobs = _logprobs(choices[0])
        if logprobs:  # soft verdicts read the label tokens' alternatives (arena/soft_verdicts.py)
            payload["logprobs"] = logprobs
        usage = getattr(resp, "usage", None)
        ptok = int(getattr(usage, "prompt_tokens", 0) or 0)
        ctok = int(getattr(usage, "completion_tokens", 0) or 0)
        details = getattr(usage, "completion_tokens_details", None)
        rtok = int(getattr(details, "reasoning_tokens", 0) or 0) if details is not None else 0
        return text, payload, (ptok, ctok, rtok)

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        delay = min(self.backoff_max, self.backoff_base * (2 ** (attempt - 1))) * self._rng.uniform(0.5, 1.0)
        if retry_after is not None:
            delay = max(delay, retry_after)
        return delay

    def _store(self, res: ChatResult) -> None:
        """Commit the outcome before anything else happens to it; if it cannot be committed,
        account the lost call and stop the run (see :meth:`chat`)."""
        req = res.request
        ep = self.endpoint(req.endpoint)
        try:
            if self.cache is not None:
                self.cache.put(
                    res.key, model=ep.model, endpoint=ep.name, stage=req.stage, ok=res.ok, text=res.text,
                    payload=res.payload, error=res.error, prompt_tokens=res.prompt_tokens,
                    completion_tokens=res.completion_tokens, reasoning_tokens=res.reasoning_tokens,
                    cost=res.cost, attempts=res.attempts,
                )
        except CacheWriteError as exc:
            self._halt(exc)
            raise
        finally:  # paid for either way, so it is on the ledger either way
            self.ledger.record(
                req.stage, ep.name, cached=False, ok=res.ok, prompt_tokens=res.prompt_tokens,
                completion_tokens=res.completion_tokens, reasoning_tokens=res.reasoning_tokens, cost=res.cost,
            )

    async def chat_many(
        self,
        requests: Sequence[ChatRequest],
        *,
        on_result: Callable[[ChatResult], Awaitable[None] | None] | None = None,
        progress: Callable[[ChatResult], None] | None = None,
    ) -> list[ChatResult]:
        """Run requests concurrently (bounded per endpoint); results come back in input order.

        ``on_result`` sees each result as soon as it is ready, so stages can append it to their
        output file at once and a kill loses nothing already paid for.
        """

        async def one(req: ChatRequest) -> ChatResult:
            res = await self.chat(req)
            if on_result is not None:
                maybe = on_result(res)
                if asyncio.iscoroutine(maybe):
                    await maybe
            if progress is not None:
                progress(res)
            return res

        return list(await asyncio.gather(*(one(r) for r in requests)))


async def _sdk_call(coro: Awaitable[Any]) -> Any:
    """Await an SDK call, sorting its failures into retryable ones and the caller's mistakes."""
    try:
        return await coro
    except openai.APIStatusError as exc:
        if exc.status_code in RETRYABLE_STATUS or exc.status_code >= 500:
            raise _Retryable(f"HTTP {exc.status_code}: {exc.message}", _retry_after(exc.response)) from None
        raise
    except (openai.APITimeoutError, openai.APIConnectionError) as exc:
        raise _Retryable(f"{type(exc).__name__}: {exc}") from None
    except Exception as exc:  # malformed body, protocol errors: the server's fault, retry
        raise _Retryable(f"malformed response: {type(exc).__name__}: {exc}") from None


def _http_client(ep: Endpoint) -> Any:
    """The SDK's aiohttp transport when installed (it costs about a third less CPU a call than
    the default, which matters at hundreds of calls a second), else its default transport with
    a pool sized to the endpoint: that pool scans every connection on each request."""
    try:
        return openai.DefaultAioHttpClient(timeout=ep.timeout)
    except RuntimeError:  # the SDK was installed without its aiohttp extra
        limits = _http.Limits(max_connections=ep.max_concurrency, max_keepalive_connections=ep.max_concurrency)
        return openai.DefaultAsyncHttpxClient(limits=limits, timeout=ep.timeout)


def _retry_after(response: Any) -> float | None:
    if response is None:
        return None
    value = response.headers.get("retry-after-ms")
    if value:
        try:
            return float(value) / 1000.0
        except ValueError:
            pass
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None
