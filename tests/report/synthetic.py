"""Synthetic run folders for the report tests and bench/report_speed.py: an arena run (answers,
two-game judgments by one or more judges, questions, run log), a curation run and an index
output, in the exact file layouts the real jobs write, with optional hostile strings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np

from arena.stats.markdown_stats import answer_metadata

XSS = [
    "<script>window.__xss=1</script>",
    "<img src=x onerror=window.__xss=1>",
    "</script><script>window.__xss=1</script>",
    "[click me](javascript:window.__xss=1)",
    "<svg onload=window.__xss=1>",
    "line\u2028sep\u2029para <iframe src=javascript:window.__xss=1>",
    "``` \n</pre><script>window.__xss=1</script>\n```",
    "{{constructor.constructor('window.__xss=1')()}}",
]
# File-name-safe hostile model names (a model name is also a file name: no '/').
XSS_MODELS = ["<img src=x onerror=window.__xss=1>", "<svg onload=window.__xss=1> & \u2028 model"]
LABELS = ["A>>B", "A>B", "A=B", "B>A", "B>>A"]

_CODE = "```python\ndef f(x):\n    # add one\n    return x + 1  # \"str\"\n```\n"
_PARA = ("The answer considers several aspects of the problem in turn, weighing each option with care and "
         "giving a short justification. **Bold claim** and `inline code` and a [link](https://example.org). ")


def _text(rng: np.random.Generator, words: int, hostile: str | None = None) -> str:
    n = max(1, words // 30)
    parts = ["## Heading", *(_PARA for _ in range(n)), "- item one\n- item two", _CODE]
    if hostile:
        parts.insert(1, hostile)
    return "\n\n".join(parts)


def _write_jsonl(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def make_arena_run(root: Path, *, n_models: int = 4, n_questions: int = 12, judges: Sequence[str] = ("judge-a",), baseline: str = "base-model",
                   hostile: bool = False, words: int = 60, seed: int = 0, unparsed_model: int | None = None) -> Path:
    """``root/model_answer/<model>.jsonl``, ``root/model_judgment/<judge>/<model>.jsonl``,
    ``root/question.jsonl`` and ``root/run_log.jsonl``. Model k wins more often as k grows.
    ``unparsed_model``: the model index whose games are mostly unparsed (a standing-out rate)."""
    rng = np.random.default_rng(seed)
    models = [f"model-{k:02d}" for k in range(n_models)]
    if hostile:
        models[: len(XSS_MODELS)] = XSS_MODELS[: n_models]
    cats = ["coding", "math", "<b>writing</b>" if hostile else "writing"]
    qs = []
    for i in range(n_questions):
        h = XSS[i % len(XSS)] if hostile else None
        qs.append({"question_id": f"q{i:04d}", "category": cats[i % len(cats)], "cluster": i % 3,
                   "turns": [{"content": (h + " " if h else "") + f"Question {i}: explain topic {i} with an example."}]})
    _write_jsonl(root / "question.jsonl", qs)
    for m in [baseline, *models]:
        rows = []
        for i, q in enumerate(qs):
            h = XSS[(i + 3) % len(XSS)] if hostile else None
            text = _text(rng, words, h)
            toks = int(rng.integers(words // 2 + 1, words * 2 + 2))
            rows.append({"question_id": q["question_id"], "answer_id": f"{m}-{i}", "model_id": m, "tstamp": 1.0,
                         "choices": [{"index": 0, "turns": [{"content": text, "token_len": toks}]}],
                         "conv_metadata": answer_metadata(text, toks)})  # what `arena answers` records
        _write_jsonl(root / "model_answer" / f"{m}.jsonl", rows)
    for judge in judges:
        for k, m in enumerate(models):
            p_win = 0.2 + 0.6 * k / max(1, n_models - 1)
            rows = []
            for i, q in enumerate(qs):
                games = []
                for g in (1, 2):
                    if unparsed_model == k and i % 4 != 0:
                        games.append({"user_prompt": "...", "judgment": "I cannot decide. " + (XSS[i % len(XSS)] if hostile else ""), "score": None, "status": "unparsed"})
                        continue
                    u = rng.random()
                    model_side = "B" if g == 1 else "A"
                    other = "A" if model_side == "B" else "B"
                    if u < p_win * 0.3:
                        lab = f"{model_side}>>{other}"
                    elif u < p_win:
                        lab = f"{model_side}>{other}"
                    elif u < p_win + 0.1:
                        lab = "A=B"
                    else:
                        lab = f"{other}>{model_side}"
                    body = "\n\n".join([_PARA] * max(1, words // 150))
                    jt = f"Comparing both answers. {XSS[(i + g) % len(XSS)] if hostile else ''}\n\n{body}\n\nMy final verdict is: [[{lab}]]"
                    games.append({"user_prompt": "...", "judgment": jt, "score": lab})
                rows.append({"question_id": q["question_id"], "model": m, "judge": judge, "baseline": baseline, "games": games})
            _write_jsonl(root / "model_judgment" / judge / f"{m}.jsonl", rows)
    _write_jsonl(root / "run_log.jsonl", [{"command": "answers judge", "status": "ok", "config": {"note": XSS[0] if hostile else "cfg"}}])
    return root


def make_curation_run(root: Path, *, n_prompts: int = 60, hostile: bool = False, seed: int = 0) -> Path:
    """The files `benchbuilder build` leaves: prompts, drops, clusters/topics, annotations, question.jsonl."""
    rng = np.random.default_rng(seed)
    words = ["python", "sorting", "poem", "history", "physics", "recipe", "database", "proof"]
    prompts = []
    for i in range(n_prompts):
        w = words[i % len(words)]
        text = f"Write about {w} and {words[(i * 3) % len(words)]} number {i}" + (" " + XSS[i % len(XSS)] if hostile else "")
        prompts.append({"source_id": f"s{i}", "prompt": text, "source": "x.jsonl", "line": i + 1, "n_turns": 1})
    _write_jsonl(root / "prompts.jsonl", prompts)
    _write_jsonl(root / "drops.jsonl", [{"reason": r, "source": "x.jsonl", "line": k, "source_id": None, "detail": ""} for k, r in enumerate(["duplicate", "duplicate", "language", "too_short"])])
    labels = {0: XSS[1] if hostile else "coding", 1: XSS[4] if hostile else "writing", 2: "science"}
    _write_jsonl(root / "clusters.jsonl", [{"source_id": p["source_id"], "cluster": i % 3, "label": labels[i % 3]} for i, p in enumerate(prompts)])
    categories = {"0": {"label": XSS[6] if hostile else "code & science", "prompts": 40, "topics": [0, 2], "keywords": [XSS[0] if hostile else "code", "science"]},
                  "1": {"label": "writing", "prompts": 20, "topics": [1], "keywords": ["writing"]}}
    (root / "topics.json").write_text(json.dumps({"labels": {str(k): v for k, v in labels.items()}, "keywords": {str(k): [v] for k, v in labels.items()},
                                                  "hierarchy": {"categories": categories, "category_of": {"0": 0, "1": 1, "2": 0}}}), encoding="utf-8")
    _write_jsonl(root / "contamination.jsonl", [
        {"source_id": "s1", "similarity": 0.93, "reference": "bench.jsonl", "reference_id": "bench.jsonl:7", "reference_text": XSS[3] if hostile else "a benchmark prompt",
         "prompt": prompts[1]["prompt"]},
        {"source_id": "s2", "similarity": 0.99, "reference": "arena_hard.jsonl", "reference_id": "q42", "reference_text": "the same prompt", "prompt": prompts[2]["prompt"]},
    ])
    ann = []
    for i, p in enumerate(prompts):
        crit = sorted(set(int(c) for c in rng.integers(1, 8, size=int(rng.integers(0, 7)))))
        ann.append({"source_id": p["source_id"], "stage": "main", "status": "ok", "criteria": crit, "score": len(crit), "raw": f"Criteria Satisfied: {crit}"})
    _write_jsonl(root / "annotations" / "main.jsonl", ann)
    _write_jsonl(root / "question.jsonl", [{"question_id": p["source_id"], "category": "hard", "cluster": i % 3, "score": ann[i]["score"],
                                           "turns": [{"content": p["prompt"]}]} for i, p in enumerate(prompts[:10])])
    return root


def make_index_output(root: Path, *, model: str = "idx-model", hostile: bool = False) -> Path:
    """``root/<model>/<eval>.jsonl`` records as the index runner writes them."""
    recs = []
    for i in range(6):
        for r in range(2):
            ok = (i + r) % 3 != 0
            recs.append({"eval": "math500", "item_id": f"m{i}", "repeat": r, "language": None, "model": model, "status": "ok" if i != 5 else "unanswered",
                         "error": None, "response": ("Work: " + (XSS[i % len(XSS)] if hostile else "") + f"\n\nSo \\boxed{{{i}}}"), "gold": str(i if ok else i + 1),
                         "extracted": str(i), "correct": ok if i != 5 else False, "method": "symbolic", "prompt_tokens": 10, "completion_tokens": 20,
                         "reasoning_tokens": 0, "cost": 0.0, "cached": False})
    _write_jsonl(root / model / "math500.jsonl", recs)
    code = [{"eval": "livecodebench", "item_id": f"c{i}", "repeat": 0, "language": None, "model": model, "status": "ok", "error": None,
             "response": "```python\nprint(1)\n```" + (XSS[2] if hostile else ""), "gold": None, "extracted": "print(1)", "correct": i % 2 == 0,
             "method": "sandbox:passed" if i % 2 == 0 else "sandbox:failed", "sandbox": {"status": "passed" if i % 2 == 0 else "failed", "stderr": XSS[0] if hostile else ""},
             "prompt_tokens": 10, "completion_tokens": 20, "reasoning_tokens": 0, "cost": 0.0, "cached": False} for i in range(4)]
    _write_jsonl(root / model / "livecodebench.jsonl", code)
    return root
