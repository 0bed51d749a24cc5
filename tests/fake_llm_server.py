"""A small OpenAI-compatible HTTP server for tests and benchmarks (loopback only).

It answers ``POST /v1/chat/completions`` and ``POST /v1/embeddings`` with scripted,
deterministic replies, injects faults, and counts hits so tests can prove what was (not)
called. Run it as ``python tests/fake_llm_server.py --port 0 --config cfg.json``; it prints
``READY <port>`` once listening.

Control endpoints: ``GET /stats`` (hit counts), ``POST /control`` (replace the config),
``POST /reset`` (zero the counters).

Config (all optional)::

    {
      "latency": 0.2,                 # seconds added to every reply
      "faults": {"429": 0.05, "500": 0.05, "hang": 0.01, "malformed": 0.02,
                 "no_verdict": 0.05, "conflict": 0.02},
      "fault_attempts": 1,            # transport faults hit the first N attempts of a request
      "faults": {"persistent": p}     # 500 on every attempt: the request ends as a failure
      "echo_auth_401": false,         # answer 401 quoting the Authorization header (key-leak tests)
      "echo_auth_200": false,         # a normal 200 whose text and reasoning quote that header
      "retry_after": 0.05,            # seconds, sent with 429s
      "hang_seconds": 30,
      "rules": [{"match": "regex", "reply": "text"} or {"match": "...", "replies": [...]}],
                                      # "expand": true makes "reply" a template over the match's groups; "param": "name" matches
                                      # only requests whose body has that top-level param
      "default": "auto",              # auto | echo
      "scripted_judge": {             # a judge with known behaviour (judge stability, soft verdicts, adaptive judging)
        "strength": {"good": 4.0, "base": 1.0},   # answers carry "[model=NAME]"; P(A wins) = s_A / (s_A + s_B)
        "p_flip": 0.2,                # per reply: the game's true label with prob 1-p, else one of the other 4 at random
        "seed": 7,                    # the draw hashes seed, prompt, request body and how often it was asked
        "strong": false               # true labels are strong (A>>B / B>>A) instead of A>B / B>A
      },
      "logprobs": false               # with the request's logprobs: true, return one token per character and,
                                      # at the label, top_logprobs giving the scripted label distribution
    }

Fault selection hashes the request body, so a given request always meets the same fate.
``no_verdict``/``conflict`` are content faults for judge prompts: the reply is a normal
200 whose text has no verdict, or two different verdicts. A re-ask (a request whose
messages end with the judge's earlier reply and a "continue" turn) gets a verdict unless
``no_verdict_reask`` selects it.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import sys
import time
from collections import Counter

VERDICTS = ["A>>B", "A>B", "A=B", "B>A", "B>>A"]


def _h(text: str, salt: str = "") -> float:
    """Deterministic uniform in [0, 1) from text."""
    d = hashlib.sha256((salt + text).encode()).digest()
    return int.from_bytes(d[:8], "big") / 2**64


class State:
    def __init__(self, config: dict):
        self.config = config
        self.hits = 0
        self.by_key: Counter[str] = Counter()
        self.ok_by_key: Counter[str] = Counter()
        self.status_counts: Counter[str] = Counter()
        self.compiled = [(re.compile(r["match"], re.S), r) for r in config.get("rules", [])]
        self.last_auth = ""
        self.last_dist = None
        self.inflight = 0
        self.peak_inflight = 0

    def stats(self) -> dict:
        return {
            "hits": self.hits,
            "unique": len(self.by_key),
            "ok": sum(self.ok_by_key.values()),
            "ok_unique": len(self.ok_by_key),
            "ok_repeated": sum(1 for v in self.ok_by_key.values() if v > 1),
            "status": dict(self.status_counts),
            "by_key": dict(self.by_key),
            "ok_by_key": dict(self.ok_by_key),
            "peak_inflight": self.peak_inflight,
        }


def _last_user(messages: list) -> str:
    for m in reversed(messages):
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def _system(messages: list) -> str:
    return "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")


_MODEL_MARK = re.compile(r"\[model=([\w.-]+)\]")


def scripted_label(cfg: dict, user: str, draw: str) -> tuple[str, dict[str, float]] | None:
    """The scripted judge: the game's true label (fixed per prompt and answer pair), the label
    distribution of one reply, and the label drawn from it for this reply (``draw`` varies)."""
    names = _MODEL_MARK.findall(user)
    if len(names) < 2:
        return None
    strength = cfg.get("strength", {})
    sa, sb = float(strength.get(names[0], 1.0)), float(strength.get(names[1], 1.0))
    seed = str(cfg.get("seed", 0))
    a_wins = _h(user, f"truth{seed}") < sa / (sa + sb)
    strong = bool(cfg.get("strong", False))
    truth = ("A>>B" if strong else "A>B") if a_wins else ("B>>A" if strong else "B>A")
    p = float(cfg.get("p_flip", 0.0))
    dist = {v: (1 - p if v == truth else p / 4) for v in VERDICTS}
    u = _h(draw, f"draw{seed}")
    acc = 0.0
    for v in VERDICTS:
        acc += dist[v]
        if u < acc:
            return v, dist
    return truth, dist


def label_logprobs(text: str, label: str, dist: dict[str, float]) -> list[dict]:
    """One token per character; at the label's characters the alternatives that keep a label
    prefix get the scripted conditional probabilities (plus one junk token), as llama.cpp's
    grammar-constrained path reports them (raw logits, before the grammar)."""
    import math

    start = text.rfind(f"[[{label}]]") + 2
    out = []
    for i, ch in enumerate(text):
        top = [[ch, 0.0]]
        if start <= i < start + len(label):
            prefix = label[: i - start]
            below = sum(p for v, p in dist.items() if v.startswith(prefix))
            top = []
            for c in sorted({v[len(prefix)] for v in VERDICTS if v.startswith(prefix) and len(v) > len(prefix)}):
                q = sum(p for v, p in dist.items() if v.startswith(prefix + c)) / below
                if q > 0:
                    top.append([c, math.log(q)])
            top.append(["x", -9.0])
        lp = next((v for c, v in top if c == ch), 0.0)
        out.append({"token": ch, "logprob": lp, "bytes": None, "top_logprobs": [{"token": c, "logprob": v, "bytes": None} for c, v in top]})
    return out


def reply_text(state: State, body: dict, key: str) -> str:
    messages = body.get("messages", [])
    script = state.config.get("scripted_judge")
    if script is not None:
        user = next((str(m.get("content", "")) for m in messages if m.get("role") == "user"), "")
        got = scripted_label(script, user, f"{key}:{state.by_key[key]}")
        if got is not None:
            label, dist = got
            state.last_dist = (label, dist)
            return f"Comparing both answers.\n\nMy final verdict is: [[{label}]]"
    user = _last_user(messages)
    system = _system(messages)
    everything = system + "\n" + "\n".join(str(m.get("content", "")) for m in messages)
    for rx, rule in state.compiled:
        if "param" in rule and rule["param"] not in body:  # e.g. only requests that carry response_format
            continue
        m = rx.search(everything)
        if m:
            if "replies" in rule:
                return rule["replies"][int(_h(key, "rule") * len(rule["replies"]))]
            # "expand": the reply is a template with the match's groups (\\1, \\g<name>), for judges that quote answers
            return m.expand(rule["reply"]) if rule.get("expand") else rule["reply"]
    faults = state.config.get("faults", {})
    is_judge = "[[A>>B]]" in system or "final verdict" in system.lower()
    if is_judge and state.config.get("default", "auto") == "auto":
        reask = len(messages) >= 3 and messages[-2].get("role") == "assistant"
        label = VERDICTS[int(_h(key, "verdict") * len(VERDICTS))]
        if reask:
            if _h(key, "nv2") < faults.get("no_verdict_reask", 0.0):
                return "I still cannot decide."
            if _h(key, "cf2") < faults.get("conflict_reask", 0.0):
                return f"Either [[{label}]] or [[{VERDICTS[(VERDICTS.index(label) + 2) % 5]}]]."
            return f"My final verdict is: [[{label}]]"
        r = _h(key, "content")
        nv = faults.get("no_verdict", 0.0)
        cf = faults.get("conflict", 0.0)
        if r < nv:
            return "Both answers have merits. Assistant A is thorough; Assistant B is concise."
        if r < nv + cf:
            other = VERDICTS[(VERDICTS.index(label) + 2) % 5]
            return f"Looking at A first: [[{other}]]. Looking at B: [[{label}]]. Hard to say."
        return f"My own answer: ...\n\nComparing both answers carefully.\n\nMy final verdict is: [[{label}]]"
    # Default: a deterministic answer whose length varies with the prompt.
    n = 5 + int(_h(key, "len") * 60)
    words = re.findall(r"\w+", user)[:8] or ["nothing"]
    md = "## Answer\n\n- point one\n- point **two**\n\n" if _h(key, "md") < 0.5 else ""
    return md + "Answer about " + " ".join(words) + ". " + " ".join(["detail"] * n)


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, state: State) -> None:
    try:
        while True:
            line = await reader.readline()
            if not line:
                return
            method, path, _ = line.decode("latin-1").split(" ", 2)
            headers = {}
            while True:
                h = await reader.readline()
                if h in (b"\r\n", b"\n", b""):
                    break
                k, v = h.decode("latin-1").split(":", 1)
                headers[k.strip().lower()] = v.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
            state.last_auth = headers.get("authorization", "")
            status, payload, extra, raw = await route(method, path, body, state)
            data = raw if raw is not None else json.dumps(payload).encode()
            head = [f"HTTP/1.1 {status} X", "Content-Type: application/json", f"Content-Length: {len(data)}", "Connection: keep-alive"]
            head += [f"{k}: {v}" for k, v in extra.items()]
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError, ValueError):
        pass
    finally:
        try:
            writer.close()
        except Exception:
            pass


def headers_auth(state: State) -> str:
    return state.last_auth


async def route(method: str, path: str, body: bytes, state: State):
    cfg = state.config
    if path.startswith("/stats"):
        return 200, state.stats(), {}, None
    if path.startswith("/reset"):
        state.__init__(state.config)
        return 200, {"ok": True}, {}, None
    if path.startswith("/control"):
        state.config = json.loads(body or b"{}")
        state.compiled = [(re.compile(r["match"], re.S), r) for r in state.config.get("rules", [])]
        return 200, {"ok": True}, {}, None
    if not path.endswith("/chat/completions") and not path.endswith("/embeddings"):
        return 404, {"error": {"message": "not found"}}, {}, None
    req = json.loads(body)
    key = hashlib.sha256(body).hexdigest()
    state.hits += 1
    state.by_key[key] += 1
    attempt = state.by_key[key]
    latency = cfg.get("latency", 0.0)
    if latency:
        # requests served at once (the latency is when they overlap): what shared limits bound
        state.inflight += 1
        state.peak_inflight = max(state.peak_inflight, state.inflight)
        try:
            await asyncio.sleep(latency)
        finally:
            state.inflight -= 1
    faults = cfg.get("faults", {})
    if cfg.get("echo_auth_401"):
        return 401, {"error": {"message": f"Incorrect API key provided: {headers_auth(state)}"}}, {}, None
    if _h(key, "persistent") < faults.get("persistent", 0.0):
        state.status_counts["persistent"] += 1
        return 500, {"error": {"message": "persistent failure"}}, {}, None
    if attempt <= cfg.get("fault_attempts", 1):
        r = _h(key, "transport")
        edges = []
        acc = 0.0
        for name in ("429", "500", "hang", "malformed"):
            acc += faults.get(name, 0.0)
            edges.append((acc, name))
        for edge, name in edges:
            if r < edge:
                state.status_counts[name] += 1
                if name == "429":
                    return 429, {"error": {"message": "rate limited", "type": "rate_limit"}}, {"Retry-After": str(cfg.get("retry_after", 0.05))}, None
                if name == "500":
                    return 500, {"error": {"message": "internal error"}}, {}, None
                if name == "hang":
                    await asyncio.sleep(cfg.get("hang_seconds", 30))
                    return 504, {"error": {"message": "too late"}}, {}, None
                return 200, None, {}, b'{"id": "x", "choices": [{"message": {"content": "trunc'
    state.status_counts["ok"] += 1
    state.ok_by_key[key] += 1
    if path.endswith("/embeddings"):
        inputs = req.get("input")
        inputs = [inputs] if isinstance(inputs, str) else inputs
        dim = int(cfg.get("embedding_dim", 16))
        data = []
        for i, text in enumerate(inputs):
            d = hashlib.sha256(str(text).encode()).digest() * 4
            data.append({"object": "embedding", "index": i, "embedding": [(b - 128) / 128 for b in d[:dim]]})
        ptok = sum(len(str(t)) // 4 + 1 for t in inputs)
        return 200, {"object": "list", "data": data, "model": req.get("model"), "usage": {"prompt_tokens": ptok, "total_tokens": ptok}}, {}, None
    state.last_dist = None
    text = reply_text(state, req, key)
    message = {"role": "assistant", "content": text}
    choice_logprobs = None
    if cfg.get("logprobs") and req.get("logprobs") and state.last_dist is not None:
        choice_logprobs = {"content": label_logprobs(text, *state.last_dist)}
    if cfg.get("echo_auth_200"):
        message["content"] = f"Sure. Your header was: {headers_auth(state)} (that is all)."
        message["reasoning_content"] = f"The caller authenticated with {headers_auth(state)}."
        text = message["content"]
    ptok = sum(len(str(m.get("content", ""))) // 4 + 1 for m in req.get("messages", []))
    ctok = len(text) // 4 + 1
    return 200, {
        "id": "chatcmpl-" + key,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": req.get("model", "fake"),
        "choices": [{"index": 0, "message": message, "finish_reason": "stop", "logprobs": choice_logprobs}],
        "usage": {"prompt_tokens": ptok, "completion_tokens": ctok, "total_tokens": ptok + ctok},
    }, {}, None


async def main_async(port: int, config: dict, host: str) -> None:
    state = State(config)
    server = await asyncio.start_server(lambda r, w: handle(r, w, state), host, port, backlog=1024)
    sock_port = server.sockets[0].getsockname()[1]
    print(f"READY {sock_port}", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--config", default=None)
    args = ap.parse_args()
    config = json.loads(open(args.config).read()) if args.config else {}
    try:
        import uvloop  # optional, faster

        uvloop.install()
    except ImportError:
        pass
    try:
        asyncio.run(main_async(args.port, config, args.host))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
