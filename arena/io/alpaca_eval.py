"""Import AlpacaEval annotations as arena judgments.

AlpacaEval compares ``output_2`` (the model, ``generator_2``) with ``output_1`` (the baseline,
``generator_1``) once per instruction; ``preference`` is a soft value in [1, 2] (1 = baseline
preferred, 2 = model preferred; the weighted GPT-4-Turbo annotator takes it from log-probs; the
legacy value 0 means a draw). AlpacaEval 2.0's ``win_rate`` is ``mean(preference - 1) * 100``.

Each annotation becomes one :class:`~arena.io.formats.Judgment` with a single game in position
order 1 (baseline as assistant A). The game keeps the discrete verdict that the preference
rounds to (``A>B``, ``A=B``, ``B>A``) so every label-based statistic runs on it, and the exact
soft value in ``soft_score`` (the model's probability of winning, ``preference - 1``), which
:func:`soft_battles` uses so that win rates reproduce AlpacaEval's to floating-point precision.

Readers accept the original ``annotations.json`` files (a JSON list, optionally gzipped) and the
flat CSV table (``model, instruction_index, generator_1, generator_2, preference``).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

import pandas as pd

from arena.errors import InputError
from arena.io.formats import Game, Judgment, write_jsonl

SOFT_KEY = "soft_score"


@dataclass
class Annotation:
    """One AlpacaEval pairwise annotation (baseline = ``generator_1``)."""

    question_id: str
    model: str
    baseline: str
    annotator: str
    preference: float | None  # in [1, 2]; None when the annotator failed
    instruction: str | None = None
    raw_completion: Any = None
    source: str | None = None
    output: str | None = None           # the model's answer (``output_2``), when the file has it
    baseline_output: str | None = None  # the baseline's answer (``output_1``)


def _open(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, "r", encoding="utf-8")


def _preference(value: Any, path: Path, line: int | None) -> float | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"expected a number in [1, 2], got {value!r}", path=str(path), line=line, field="preference")
    v = float(value)
    if v == 0.0:  # AlpacaEval's legacy encoding of a draw
        return 1.5
    if not 1.0 <= v <= 2.0:
        raise InputError(f"preference {v} outside [1, 2]", path=str(path), line=line, field="preference")
    return v


def instruction_id(text: str) -> str:
    """Stable question id for an instruction read without an index (content hash)."""
    return "ae-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def read_annotations(path: str | Path, *, instruction_ids: Mapping[str, str] | None = None, annotator: str | None = None) -> list[Annotation]:
    """Read an AlpacaEval ``annotations.json`` (list of dicts) or the flat preference CSV.

    ``instruction_ids`` maps instruction text to question ids (e.g. ``"0".."804"`` from the
    official instruction order); otherwise JSON rows get a content-hash id.
    """
    path = Path(path)
    if not path.exists():
        raise InputError("no such file", path=str(path))
    name = path.name.removesuffix(".gz")
    if name.endswith(".csv"):
        return _read_csv(path, annotator)
    if not name.endswith(".json"):
        raise InputError("expected an AlpacaEval annotations .json(.gz) or a .csv(.gz) table", path=str(path))
    try:
        with _open(path) as fh:
            rows = json.load(fh)
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON ({exc.msg})", path=str(path), line=exc.lineno) from None
    if not isinstance(rows, list):
        raise InputError("expected a JSON list of annotations", path=str(path))
    out = []
    for k, row in enumerate(rows):
        where = f"[{k}]"
        if not isinstance(row, Mapping):
            raise InputError("annotation must be an object", path=str(path), field=where)
        for key in ("instruction", "generator_1", "generator_2"):
            if not isinstance(row.get(key), str):
                raise InputError("missing or not a string", path=str(path), field=f"{where}.{key}")
        text = row["instruction"]
        qid = (instruction_ids or {}).get(text) or instruction_id(text)
        try:
            pref = _preference(row.get("preference"), path, None)
        except InputError as exc:
            raise InputError(exc.reason, path=str(path), field=f"{where}.preference") from None
        raw = row.get("raw_completion")
        out.append(
            Annotation(
                question_id=qid,
                model=row["generator_2"],
                baseline=row["generator_1"],
                annotator=str(row.get("annotator") or annotator or "alpaca_eval"),
                preference=pref,
                instruction=text,
                raw_completion=raw,
                source=f"{path}{where}",
                output=row.get("output_2") if isinstance(row.get("output_2"), str) else None,
                baseline_output=row.get("output_1") if isinstance(row.get("output_1"), str) else None,
            )
        )
    return out


def _read_csv(path: Path, annotator: str | None) -> list[Annotation]:
    try:
        df = pd.read_csv(path)
    except (pd.errors.ParserError, UnicodeDecodeError, OSError) as exc:
        raise InputError(f"cannot read CSV: {exc}", path=str(path)) from None
    for col in ("instruction_index", "generator_1", "preference"):
        if col not in df.columns:
            raise InputError("missing column", path=str(path), line=1, field=col)
    model_col = "model" if "model" in df.columns else "generator_2"
    if model_col not in df.columns:
        raise InputError("missing column", path=str(path), line=1, field="model")
    prefs = pd.to_numeric(df["preference"], errors="coerce")
    bad = prefs.isna() & df["preference"].notna()
    if bad.any():
        line = int(bad.idxmax()) + 2
        raise InputError(f"not a number: {df['preference'][bad].iloc[0]!r}", path=str(path), line=line, field="preference")
    out = []
    for k, (qi, model, base, pref) in enumerate(zip(df["instruction_index"], df[model_col], df["generator_1"], prefs.tolist())):
        out.append(
            Annotation(
                question_id=str(int(qi)),
                model=str(model),
                baseline=str(base),
                annotator=str(annotator or (df["annotator"].iloc[k] if "annotator" in df.columns else "alpaca_eval")),
                preference=_preference(pref, path, k + 2),
                source=f"{path}:{k + 2}",
            )
        )
    return out


def discrete_label(model_win: float) -> str:
    """The verdict a soft model-win probability rounds to (model is assistant B in game 1)."""
    if model_win > 0.5:
        return "B>A"
    if model_win < 0.5:
        return "A>B"
    return "A=B"


def to_judgments(annotations: Iterable[Annotation], baseline: str | None = None) -> list[Judgment]:
    """One single-game judgment per annotation, baseline as assistant A.

    When ``baseline`` is given and an annotation has it as ``generator_2``, the sides are
    swapped (preference ``p`` becomes ``3 - p``).
    """
    out = []
    for a in annotations:
        model, base, pref = a.model, a.baseline, a.preference
        if baseline is not None and model == baseline and base != baseline:
            model, base = base, model
            pref = None if pref is None else 3.0 - pref
        if baseline is not None and base != baseline:
            raise InputError(f"baseline is {base!r}, expected {baseline!r}", path=a.source, field="generator_1")
        raw = a.raw_completion
        text = raw if isinstance(raw, str) or raw is None else json.dumps(raw, ensure_ascii=False)
        if pref is None:
            game = Game(user_prompt=a.instruction, judgment=text, score=None, status="failed")
        else:
            win = pref - 1.0
            game = Game(user_prompt=a.instruction, judgment=text, score=discrete_label(win), extra={SOFT_KEY: win, "preference": pref})
        out.append(Judgment(question_id=a.question_id, model=model, judge=a.annotator, games=[game], baseline=base, source=a.source))
    return out


def write_judgment_dir(judgments: Iterable[Judgment], out_dir: str | Path) -> dict[str, int]:
    """Write ``<out_dir>/<model>.jsonl`` per model (arena-hard layout); returns rows per model."""
    out_dir = Path(out_dir)
    by_model: dict[str, list[dict]] = {}
    for j in judgments:
        by_model.setdefault(j.model, []).append(j.to_v01())
    for model, recs in by_model.items():
        if "/" in model or model.startswith("."):
            raise InputError(f"model name {model!r} cannot be a file name", field="model")
        write_jsonl(out_dir / f"{model}.jsonl", recs)
    return {m: len(r) for m, r in by_model.items()}


def write_answer_dir(annotations: Iterable[Annotation], out_dir: str | Path) -> dict[str, int]:
    """Write the answers the annotations carry as ``<out_dir>/<model>.jsonl`` (arena-hard v0.1
    answers with ``conv_metadata``), the baseline's included, so length control and style
    control run on imported AlpacaEval results. Returns answers per model."""
    from arena.io.formats import Answer
    from arena.stats.markdown_stats import answer_metadata

    by_model: dict[str, dict[str, Answer]] = {}
    for a in annotations:
        for model, text in ((a.model, a.output), (a.baseline, a.baseline_output)):
            if text is None:
                continue
            if "/" in model or model.startswith("."):
                raise InputError(f"model name {model!r} cannot be a file name", path=a.source, field="generator")
            meta = answer_metadata(text, None)
            by_model.setdefault(model, {})[a.question_id] = Answer(
                question_id=a.question_id, model=model, text=text, token_len=meta["token_len"], metadata=meta)
    out_dir = Path(out_dir)
    for model, answers in by_model.items():
        write_jsonl(out_dir / f"{model}.jsonl", [x.to_v01() for x in answers.values()])
    return {m: len(r) for m, r in by_model.items()}


def soft_battles(judgments: Iterable[Judgment], baseline: str, *, strong_weight: float = 3.0) -> pd.DataFrame:
    """The battle table with each game's ``soft_score`` as its score at weight 1: the one
    scoring path, :func:`arena.soft_verdicts.soft_battles` (kept here for the AlpacaEval API)."""
    from arena.soft_verdicts import soft_battles as scored

    return scored(judgments, baseline, strong_weight=strong_weight)
