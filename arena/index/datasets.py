"""Loaders for every index eval: Hugging Face dataset ids or local files, as typed items.

``load_eval(name, source)`` reads ``source`` as a local file when it is one (JSON Lines,
optionally gzipped; CSV; TSV for MGSM), else through ``datasets.load_dataset``: a Hugging
Face dataset id, or a local directory holding a copy of the hub repository (same files,
configs and splits; this is how offline machines and the tests use that path). Rows are mapped from each dataset's published schema to
:class:`EvalItem`; a missing field raises :class:`InputError` naming file, line and field.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import pickle
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from arena.errors import InputError
from arena.io.formats import open_text, read_jsonl

MULTILINGUAL_LANGUAGES = ("es", "bn", "de", "ja", "en", "zh", "sw", "fr")
# openai/MMMLU configs for the languages (English is the original MMLU test set).
MMMLU_CONFIGS = {"es": "ES_LA", "bn": "BN_BD", "de": "DE_DE", "ja": "JA_JP", "zh": "ZH_CN", "sw": "SW_KE", "fr": "FR_FR"}

HF_DEFAULTS: dict[str, dict[str, Any]] = {
    "mmlu_pro": {"path": "TIGER-Lab/MMLU-Pro", "split": "test"},
    "hle": {"path": "cais/hle", "split": "test"},
    "gpqa_diamond": {"path": "Idavidrein/gpqa", "name": "gpqa_diamond", "split": "train"},
    "math500": {"path": "HuggingFaceH4/MATH-500", "split": "test"},
    "aime2024": {"path": "HuggingFaceH4/aime_2024", "split": "train"},
    "scicode": {"path": "SciCode1/SciCode", "split": "test"},
    "livecodebench": {"path": "livecodebench/code_generation_lite", "split": "test", "version_tag": "release_v5"},
    "mmmlu": {"path": "openai/MMMLU", "split": "test"},
    "mgsm": {"path": "juletxara/mgsm", "split": "test"},
}


@dataclass(frozen=True)
class EvalItem:
    """One question. ``answer`` is the gold letter / expression / integer as text;
    ``options`` for multiple choice (unshuffled); ``meta`` carries eval-specific fields."""

    eval: str
    item_id: str
    question: str
    answer: str
    options: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


# --------------------------------------------------------------------------- raw readers
def read_rows(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, row) from JSON Lines (split on ``\\n`` only) or CSV with a header."""
    name = path.name.removesuffix(".gz")
    if name.endswith(".csv"):
        with open_text(path) as f:
            for i, row in enumerate(csv.DictReader(f), start=2):
                yield i, row
        return
    yield from read_jsonl(path)


def _hf_rows(name: str, source: str, *, config: str | None = None, trust_remote_code: bool = False) -> Iterator[tuple[int, dict]]:
    import datasets  # heavy; only when a hub id is used

    spec = dict(HF_DEFAULTS[name])
    spec["path"] = source
    if config:
        spec["name"] = config
    extra = {k: spec.pop(k) for k in ("version_tag",) if k in spec}
    # A hub repository's loading script is code from the dataset's author: it runs only when
    # the user asked for it (--trust-remote-code), never by default.
    ds = datasets.load_dataset(**spec, **({"trust_remote_code": True, **extra} if trust_remote_code else {}))
    for i, row in enumerate(ds, start=1):
        yield i, dict(row)


_LOCAL_SUFFIXES = (".jsonl", ".json", ".csv", ".tsv", ".gz", ".parquet", ".arrow", ".txt")


def looks_local(source: str) -> bool:
    """Whether ``source`` names a local path rather than a hub id (``owner/name``): absolute,
    relative with ``.``/``~``, more than one ``/``, or a file suffix. A missing local path must
    be an input error, not a slow, failing hub download."""
    s = str(source)
    return (s.startswith(("/", ".", "~")) or s.count("/") > 1 or "\\" in s
            or s.lower().endswith(_LOCAL_SUFFIXES) or Path(s).exists())


def _get(row: dict, key: str, where: tuple[str, int]) -> Any:
    if key not in row or row[key] is None:
        raise InputError("missing field", path=where[0], line=where[1], field=key)
    return row[key]


# --------------------------------------------------------------------------- per-eval mapping
def _mmlu_pro(row: dict, w: tuple[str, int]) -> EvalItem:
    options = _get(row, "options", w)
    if isinstance(options, str):  # the harness's zip stores a Python-literal list
        import ast

        options = ast.literal_eval(options)
    return EvalItem("mmlu_pro", str(_get(row, "question_id", w)), _get(row, "question", w), str(_get(row, "answer", w)),
                    tuple(str(o) for o in options), {"category": row.get("category", "")})


def _hle(row: dict, w: tuple[str, int]) -> EvalItem | None:
    if row.get("image"):  # the index uses the text-only subset
        return None
    kind = _get(row, "answer_type", w)
    if kind not in ("exactMatch", "multipleChoice"):
        raise InputError(f"unknown answer_type {kind!r}", path=w[0], line=w[1], field="answer_type")
    return EvalItem("hle", str(_get(row, "id", w)), _get(row, "question", w), str(_get(row, "answer", w)),
                    meta={"answer_type": kind, "category": row.get("category", "")})


def _gpqa(row: dict, w: tuple[str, int]) -> EvalItem:
    correct = _get(row, "Correct Answer", w).strip()
    wrong = [_get(row, f"Incorrect Answer {k}", w).strip() for k in (1, 2, 3)]
    item_id = str(row.get("Record ID") or row.get("id") or w[1])
    # Unshuffled options with the correct one first; prompts shuffle them per repeat.
    return EvalItem("gpqa_diamond", item_id, _get(row, "Question", w).strip(), "A", (correct, *wrong),
                    {"domain": row.get("High-level domain", "")})


def _math(name: str) -> Callable[[dict, tuple[str, int]], EvalItem]:
    def f(row: dict, w: tuple[str, int]) -> EvalItem:
        item_id = str(row.get("unique_id") or row.get("id") or row.get("idx") or w[1])
        answer = _get(row, "answer", w)
        if isinstance(answer, float) and answer.is_integer():
            answer = int(answer)
        return EvalItem(name, item_id, _get(row, "problem", w), str(answer),
                        meta={k: row[k] for k in ("subject", "level") if k in row})
    return f


def _mgsm(lang: str) -> Callable[[dict, tuple[str, int]], EvalItem]:
    def f(row: dict, w: tuple[str, int]) -> EvalItem:
        answer = row.get("answer_number", row.get("answer"))
        if answer is None:
            raise InputError("missing field", path=w[0], line=w[1], field="answer_number")
        if isinstance(answer, float) and answer.is_integer():
            answer = int(answer)
        return EvalItem("mgsm", f"{lang}-{w[1]}", _get(row, "question", w), str(answer), meta={"language": lang})
    return f


def _mmmlu(lang: str) -> Callable[[dict, tuple[str, int]], EvalItem]:
    def f(row: dict, w: tuple[str, int]) -> EvalItem:
        opts = tuple(str(_get(row, k, w)) for k in "ABCD")
        return EvalItem("mmmlu", f"{lang}-{row.get('Unnamed: 0', w[1])}", _get(row, "Question", w), str(_get(row, "Answer", w)).strip(),
                        opts, {"language": lang, "subject": row.get("Subject", "")})
    return f


class _PlainUnpickler(pickle.Unpickler):
    """Unpickles plain data only: the published private tests are a pickled ``str``, which
    needs no global. Any global (``os.system``, ``builtins.eval``...) is how a crafted pickle
    runs code, so every lookup is refused."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refused global {module}.{name}")


def decode_lcb_tests(raw: Any, where: tuple[str, int] = ("<row>", 0), field: str = "private_test_cases") -> list[dict]:
    """LiveCodeBench test lists: JSON text, or (private tests) base64 -> zlib -> pickle -> JSON
    as published in ``code_generation_lite``. Dataset files are untrusted, so the pickle is
    read with :class:`_PlainUnpickler`: a payload that is not plain data is an input error."""
    if isinstance(raw, list):
        return raw
    if not raw:
        return []
    if not isinstance(raw, str):
        raise InputError(f"expected a string, got {type(raw).__name__}", path=where[0], line=where[1], field=field)
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        pass
    try:
        blob = zlib.decompress(base64.b64decode(raw.encode("utf-8"), validate=True))
        text = _PlainUnpickler(io.BytesIO(blob)).load()
        if not isinstance(text, (str, bytes)):
            raise pickle.UnpicklingError(f"expected a pickled JSON string, got {type(text).__name__}")
        tests = json.loads(text)
    except pickle.UnpicklingError as exc:
        raise InputError(f"unsafe or invalid pickle ({exc})", path=where[0], line=where[1], field=field) from None
    except (ValueError, zlib.error, EOFError, TypeError) as exc:  # binascii.Error is a ValueError
        raise InputError(f"not JSON or base64/zlib/pickled JSON ({type(exc).__name__})", path=where[0], line=where[1], field=field) from None
    if not isinstance(tests, list) or not all(isinstance(t, dict) for t in tests):
        raise InputError("expected a list of test objects", path=where[0], line=where[1], field=field)
    return tests


def _lcb(row: dict, w: tuple[str, int]) -> EvalItem:
    public = decode_lcb_tests(row.get("public_test_cases"), w, "public_test_cases")
    private = decode_lcb_tests(row.get("private_test_cases"), w, "private_test_cases")
    meta = row.get("metadata") or "{}"
    meta = json.loads(meta) if isinstance(meta, str) else dict(meta)
    tests = public + private
    if not tests:
        raise InputError("no test cases", path=w[0], line=w[1], field="public_test_cases")
    testtype = tests[0].get("testtype", "stdin")
    return EvalItem("livecodebench", str(_get(row, "question_id", w)), _get(row, "question_content", w), "",
                    meta={"starter_code": row.get("starter_code") or "", "tests": tests, "testtype": testtype,
                          "fn_name": meta.get("func_name"), "difficulty": row.get("difficulty", "")})


def _scicode_items(row: dict, w: tuple[str, int], targets: dict[str, list[str]] | None) -> list[EvalItem]:
    steps = _get(row, "sub_steps", w)
    deps = row.get("required_dependencies", "")
    out = []
    for k, step in enumerate(steps):
        num = str(_get(step, "step_number", w))
        out.append(EvalItem("scicode", num, step.get("step_description_prompt", ""), "", meta={
            "problem_id": str(row.get("problem_id")), "step_index": k, "dependencies": deps,
            "steps": steps, "test_cases": list(step.get("test_cases", [])),
            "targets": None if targets is None else targets.get(num),
        }))
    return out


# --------------------------------------------------------------------------- entry point
def load_eval(
    name: str,
    source: str | Path | None = None,
    *,
    language: str | None = None,
    limit: int | None = None,
    scicode_targets: dict[str, list[str]] | None = None,
    trust_remote_code: bool = False,
) -> list[EvalItem]:
    """Items of eval ``name`` from ``source`` (local path, or hub id; default: the HF id)."""
    if name not in HF_DEFAULTS:
        raise InputError(f"unknown eval {name!r}; known: {', '.join(HF_DEFAULTS)}", field="eval")
    src = str(source) if source is not None else HF_DEFAULTS[name]["path"]
    path = Path(src)
    if looks_local(src) and not path.exists():
        raise InputError("no such file or directory", path=src)
    if name == "mgsm" and path.is_file() and path.name.removesuffix(".gz").endswith(".tsv"):
        rows: Iterable[tuple[int, dict]] = _read_mgsm_tsv(path)
        where = str(path)
    elif path.is_file():
        rows, where = read_rows(path), str(path)
    else:
        config = None
        if name == "mmmlu":
            config = MMMLU_CONFIGS.get(language or "", None) if language != "en" else None
        elif name == "mgsm":
            config = language or "en"
        rows, where = _hf_rows(name, src, config=config, trust_remote_code=trust_remote_code), src
    mapper: Callable[[dict, tuple[str, int]], Any] = {
        "mmlu_pro": _mmlu_pro, "hle": _hle, "gpqa_diamond": _gpqa, "math500": _math("math500"),
        "aime2024": _math("aime2024"), "livecodebench": _lcb,
        "mgsm": _mgsm(language or (path.stem.split("_")[-1] if path.is_file() else "en")),
        "mmmlu": _mmmlu(language or "en"),
        "scicode": lambda r, w: _scicode_items(r, w, scicode_targets),
    }[name]
    items: list[EvalItem] = []
    for line, row in rows:
        got = mapper(row, (where, line))
        if got is None:
            continue
        items.extend(got if isinstance(got, list) else [got])
        if limit is not None and len(items) >= limit:
            return items[:limit]
    return items


def _read_mgsm_tsv(path: Path) -> Iterator[tuple[int, dict]]:
    with open_text(path) as f:
        for i, line in enumerate(f.read().split("\n"), start=1):
            if not line.strip():
                continue
            parts = line.rstrip("\r").split("\t")
            if len(parts) != 2:
                raise InputError(f"expected 2 tab-separated columns, got {len(parts)}", path=str(path), line=i)
            yield i, {"question": parts[0], "answer": parts[1]}
