"""Soft verdicts: the label distribution read from token logprobs, its scoring, and the
fallback to the sampled label; hostile stored distributions are ignored."""

from __future__ import annotations

import math

import numpy as np
import pytest

from arena.io.formats import Game, Judgment, read_judgments
from arena.soft_verdicts import expected_score, label_distribution, soft_battles, soft_extra, valid_label_probs
from tests.judge_setup import arena, judge_config


def _char_tokens(text: str, label: str, dist: dict[str, float], junk: bool = True):
    """One token per character, alternatives as llama.cpp reports them under a grammar."""
    labels = list(dist)
    start = text.rfind(f"[[{label}]]") + 2
    out = []
    for i, ch in enumerate(text):
        alts = [(ch, 0.0)]
        if start <= i < start + len(label):
            prefix = label[: i - start]
            below = sum(p for v, p in dist.items() if v.startswith(prefix))
            nexts = sorted({v[len(prefix)] for v in labels if v.startswith(prefix) and len(v) > len(prefix)})
            alts = [(c, math.log(sum(p for v, p in dist.items() if v.startswith(prefix + c)) / below)) for c in nexts]
            if junk:
                alts.append(("Paris", 2.0))  # a raw-logit favourite the grammar forbids
        lp = dict(alts).get(ch, -50.0)
        out.append((ch, lp, alts))
    return out


DIST = {"A>>B": 0.05, "A>B": 0.1, "A=B": 0.15, "B>A": 0.5, "B>>A": 0.2}


def test_sampled_branch_is_recovered_exactly_and_other_branch_shared_evenly():
    text = "Thinking.\nMy final verdict is: [[B>A]]"
    got = label_distribution(text, "B>A", _char_tokens(text, "B>A", DIST))
    assert got is not None
    assert got["B>A"] == pytest.approx(0.5) and got["B>>A"] == pytest.approx(0.2)
    for lab in ("A>>B", "A>B", "A=B"):  # the A branch (0.3) is never expanded: shared evenly
        assert got[lab] == pytest.approx(0.1)
    assert sum(got.values()) == pytest.approx(1.0)


def test_tie_branch_recovered_when_sampled():
    text = "My final verdict is: [[A=B]]"
    got = label_distribution(text, "A=B", _char_tokens(text, "A=B", DIST))
    # after "A" the ">" branch (0.15) is not expanded either: A>B and A>>B share it
    assert got["A=B"] == pytest.approx(0.15) and got["A>B"] == pytest.approx(0.075) and got["A>>B"] == pytest.approx(0.075)
    assert got["B>A"] == pytest.approx(0.35) and got["B>>A"] == pytest.approx(0.35)


def test_tokens_that_do_not_spell_the_reply_give_no_distribution():
    text = "My final verdict is: [[B>A]]"
    toks = _char_tokens(text, "B>A", DIST)
    assert label_distribution(text + " extra", "B>A", toks) is None
    assert label_distribution(text, "A>B", toks) is None  # the chosen label is not in the text
    assert soft_extra(text, "B>A", {}) == {}
    assert soft_extra(text, "B>A", {"logprobs": "junk"}) == {}


def test_last_label_occurrence_is_read():
    text = "The answer says [[A>>B]] but My final verdict is: [[A>>B]]"
    got = label_distribution(text, "A>>B", _char_tokens(text, "A>>B", DIST))
    assert got["A>>B"] == pytest.approx(0.05 / 0.3 * 0.3)


@pytest.mark.parametrize("bad", [{"A>B": "1"}, {"A>B": float("nan")}, {"A>B": -0.5, "B>A": 1.5}, {"C>D": 1.0}, {"A>B": True}, {}, [0.5, 0.5], "A>B", {"A>B": 0.0}])
def test_hostile_stored_distributions_are_ignored(bad):
    assert valid_label_probs(bad) is None
    j = Judgment("q1", "m", "judge", [Game("p", "t", "A>B", extra={"label_probs": bad}), Game("p", "t", "A>B", extra={"label_probs": bad})], baseline="base")
    b = soft_battles([j], "base")
    assert list(b["score"]) == [0.0, 1.0]  # the sampled labels, as without soft verdicts
    assert list(b["weight"]) == [1.0, 1.0]


def test_expected_score_weights_strong_labels():
    s, w = expected_score({"B>>A": 0.5, "A>B": 0.5}, model_is_a=False, strong_weight=3.0)
    assert w == pytest.approx(2.0) and s == pytest.approx(1.5 / 2.0)


def test_soft_judging_through_cli_against_logprob_server(fake_server, tmp_path):
    p = 0.2
    srv = fake_server({"scripted_judge": {"strength": {"good": 3.0, "base": 1.0}, "p_flip": p, "seed": 3}, "logprobs": True})
    cfg = judge_config(tmp_path, srv.url, ["good"], 40, {"soft": True})
    res = arena("judge", "--config", str(cfg))
    assert res.returncode == 0, res.stderr
    js = read_judgments(tmp_path / "run" / "model_judgment" / "judge")
    games = [g for j in js for g in j.games]
    assert len(games) == 80
    for g in games:
        probs = g.extra["label_probs"]
        assert sum(probs.values()) == pytest.approx(1.0, abs=1e-5)
        # the sampled path is read exactly: the sampled label carries the scripted 1-p or p/4
        assert probs[g.score] == pytest.approx(1 - p, abs=1e-5) or probs[g.score] == pytest.approx(p / 4, abs=1e-5)
    assert sum(g.extra["label_probs"][g.score] == pytest.approx(1 - p, abs=1e-5) for g in games) > 40
    show = arena("show", "--judgments", str(tmp_path / "run" / "model_judgment" / "judge"), "--baseline", "base")
    assert show.returncode == 0, show.stderr
    assert "soft verdicts: 100% of scored games" in show.stdout
    # Without soft: no logprobs are asked for, games keep their labels.
    cfg2 = judge_config(tmp_path / "hard", srv.url, ["good"], 5, {}) if (tmp_path / "hard").mkdir() is None else None
    res = arena("judge", "--config", str(cfg2))
    assert res.returncode == 0, res.stderr
    hard = read_judgments(tmp_path / "hard" / "run" / "model_judgment" / "judge")
    assert all("label_probs" not in g.extra for j in hard for g in j.games)


@pytest.mark.slow
def test_soft_verdict_from_real_llama_cpp_server(smollm_server):
    """The embedded SmolLM2 behind llama.cpp's server: the grammar-constrained re-ask's label
    tokens carry top_logprobs, and the distribution read from them is a proper one."""
    import asyncio

    from arena.llm.client import ChatRequest, LLMClient
    from arena.soft_verdicts import soft_params

    ep = smollm_server.endpoint("judge", params={"temperature": 0.0, "max_tokens": 24, "seed": 0})
    client = LLMClient({"judge": ep}, None)
    grammar = 'root ::= "My final verdict is: [[" ("A>>B" | "A>B" | "A=B" | "B>A" | "B>>A") "]]"'
    req = ChatRequest(endpoint="judge", messages=[{"role": "user", "content": "Which answer is better? A: Paris is the capital of France. B: Berlin is."}],
                      params={**soft_params(20), "extra_body": {"grammar": grammar}})

    async def go():
        try:
            return await client.chat(req)
        finally:
            await client.aclose()

    res = asyncio.run(go())
    assert res.ok, res.error
    label = res.text.removeprefix("My final verdict is: [[").removesuffix("]]")
    extra = soft_extra(res.text, label, res.payload)
    probs = extra["label_probs"]
    print(res.text, probs)
    assert sum(probs.values()) == pytest.approx(1.0, abs=1e-5)
    assert 0 < probs[label] < 1 and len(probs) >= 2
