"""Loaders on real shared files and our own fixtures in each dataset's published format."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from arena.errors import InputError
from arena.index.datasets import load_eval
from arena.index.indices import eval_estimate, index_estimates
from arena.index.prompts import build_prompt, gpqa_permutation

DATA = Path(__file__).resolve().parents[2] / "data" / "index"


def test_real_files(shared_data):
    idx = shared_data / "index"
    assert len(load_eval("math500", idx / "math500.jsonl")) == 500
    aime = load_eval("aime2024", idx / "aime24.jsonl")
    assert len(aime) == 30 and all(a.answer.isdigit() for a in aime)
    mgsm = load_eval("mgsm", idx / "mgsm" / "mgsm_sw.tsv")
    assert len(mgsm) == 250 and mgsm[0].meta["language"] == "sw"
    mmlu = load_eval("mmlu_pro", idx / "mmlu_pro" / "llama31_8b_outputs.jsonl.gz", limit=50)
    assert len(mmlu) == 50 and all(m.answer in "ABCDEFGHIJ" and 3 <= len(m.options) <= 10 for m in mmlu)
    sci = load_eval("scicode", idx / "scicode" / "problems_all.jsonl")
    assert len(sci) == 291
    prompt = build_prompt(sci[1])
    assert "NEXT STEP - PROBLEM STEP AND FUNCTION HEADER" in prompt.messages[0]["content"]
    assert sci[1].meta["steps"][1]["function_header"].split("\n")[0] in prompt.messages[0]["content"]


def test_own_fixtures():
    hle = load_eval("hle", DATA / "hle_sample.jsonl")
    assert [h.item_id for h in hle] == ["hle-sample-001", "hle-sample-002", "hle-sample-004"]  # image row dropped
    p = build_prompt(hle[1])
    assert p.messages[0]["role"] == "system" and "Answer: {your chosen answer}" in p.messages[0]["content"]
    lcb = load_eval("livecodebench", DATA / "livecodebench_sample.jsonl")
    assert len(lcb[0].meta["tests"]) == 2  # public + the compressed private test
    assert lcb[1].meta["testtype"] == "functional" and lcb[1].meta["fn_name"] == "addTwo"
    assert "starter code" in build_prompt(lcb[1]).messages[1]["content"]
    assert "stdin" in build_prompt(lcb[0]).messages[1]["content"]
    gpqa = load_eval("gpqa_diamond", DATA / "gpqa_diamond_sample.csv")
    assert len(gpqa) == 3


def test_gpqa_shuffle_is_seeded_per_repeat():
    item = load_eval("gpqa_diamond", DATA / "gpqa_diamond_sample.csv")[1]
    perms = [tuple(gpqa_permutation(item.item_id, r, seed=0)) for r in range(8)]
    assert perms == [tuple(gpqa_permutation(item.item_id, r, seed=0)) for r in range(8)]
    assert len(set(perms)) > 1
    for r in range(8):
        p = build_prompt(item, repeat=r)
        text = p.messages[0]["content"]
        assert f"{p.gold}) Photon" in text  # the gold letter follows the correct option
        assert text.startswith("Answer the following multiple choice question. The last line of your response should be "
                               "in the following format: 'Answer: A/B/C/D' (e.g. 'Answer: A'). Think step by step before answering.\n\n")
        assert text.endswith("\n\nA) " + text.split("\nA) ", 1)[1]) and "D) " in text
    reasoning = build_prompt(item, reasoning_model=True).messages[0]["content"]
    assert "Think step by step" not in reasoning and reasoning.startswith("Answer the following multiple choice question.")


def test_bad_rows_name_file_line_field(tmp_path):
    bad = tmp_path / "math.jsonl"
    bad.write_text('{"problem": "1+1", "answer": "2"}\n{"problem": "2+2"}\n')
    with pytest.raises(InputError) as e:
        load_eval("math500", bad)
    assert "math.jsonl" in str(e.value) and "line 2" in str(e.value) and "answer" in str(e.value)


def test_indices_weights_and_ci():
    rng = np.random.default_rng(0)
    scores = {"mmlu_pro": np.ones((10, 1)), "hle": np.zeros((10, 1)), "gpqa_diamond": np.ones((10, 5)),
              "math500": np.zeros((10, 3)), "aime2024": np.ones((5, 10)), "scicode": np.zeros((5, 3)), "livecodebench": np.ones((5, 3))}
    df = index_estimates(scores, rng=rng, rounds=200).set_index("index")
    assert df.loc["Intelligence Index", "value"] == pytest.approx(2 / 6 + 2 / 8)
    assert df.loc["Math Index", "value"] == pytest.approx(0.5)
    assert np.isnan(df.loc["Multilingual Index", "value"]) and "mmmlu" in df.loc["Multilingual Index", "missing"]
    s = np.array([[1, 0, 1], [1, 1, 1], [0, 0, np.nan], [np.nan, np.nan, np.nan]])
    est = eval_estimate(s, rng=rng, rounds=500)
    assert est.n_items == 3 and est.value == pytest.approx((2 / 3 + 1 + 0) / 3)
    assert est.low <= est.value <= est.high and est.high - est.low > 0
