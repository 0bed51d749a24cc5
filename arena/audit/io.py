"""Readers and writers for audit inputs: leaderboard scores (JSONL), human reference (CSV), name maps."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable, Mapping

import pandas as pd

from arena.io.configfile import read_json
from arena.errors import InputError
from arena.io.jsonl import read_jsonl, write_jsonl

# Column names used by common sources for the CI bounds (Chatbot Arena exports use rating_q025/q975).
_LOWER_ALIASES = ("lower", "rating_q025", "lower_ci")
_UPPER_ALIASES = ("upper", "rating_q975", "upper_ci")
_RATING_ALIASES = ("rating", "score", "elo", "arena_elo", "arena_score")


def _number(value: Any, path: Path, line: int, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"expected a finite number, got {value!r}", path=str(path), line=line, field=name)
    return float(value)


def read_scores(path: str | Path) -> pd.DataFrame:
    """Read a scores JSONL file (one model per line: ``model, score, lower, upper[, results]``)."""
    path = Path(path)
    rows = []
    seen: dict[str, int] = {}
    for line_no, rec in read_jsonl(path):
        model = rec.get("model")
        if not isinstance(model, str) or not model:
            raise InputError("missing model name", path=str(path), line=line_no, field="model")
        if model in seen:
            raise InputError(f"model {model!r} already on line {seen[model]}", path=str(path), line=line_no, field="model")
        seen[model] = line_no
        row = {"model": model}
        for k in ("score", "lower", "upper"):
            if k not in rec:
                raise InputError("missing", path=str(path), line=line_no, field=k)
            row[k] = _number(rec[k], path, line_no, k)
        if not row["lower"] <= row["score"] <= row["upper"]:
            raise InputError("need lower <= score <= upper", path=str(path), line=line_no, field="score")
        if "results" in rec and rec["results"] is not None:
            res = rec["results"]
            if not isinstance(res, list):
                raise InputError("must be a list of bootstrap replicates", path=str(path), line=line_no, field="results")
            row["results"] = [_number(v, path, line_no, "results") for v in res]
        rows.append(row)
    if not rows:
        raise InputError("no models", path=str(path))
    return pd.DataFrame(rows)


def write_scores(path: str | Path, frame: pd.DataFrame) -> None:
    """Write a scores frame (``model, score, lower, upper`` and optional ``results``) as JSONL."""
    cols = [c for c in ("model", "score", "lower", "upper", "results") if c in frame.columns]
    extra = [c for c in frame.columns if c not in cols]
    def records():
        for rec in frame[cols + extra].to_dict("records"):
            if "results" in rec and rec["results"] is not None:
                rec["results"] = [float(v) for v in rec["results"]]
            # NaN (e.g. no bootstrap) becomes null: strict JSON, and read_scores names the field.
            yield {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in rec.items()}

    write_jsonl(path, records())  # atomic: a failed write never leaves half a scores file


def _pick(columns: Iterable[str], aliases: tuple[str, ...], path: Path, name: str) -> str:
    cols = list(columns)
    for a in aliases:
        if a in cols:
            return a
    raise InputError(f"no column for {name} (looked for {', '.join(aliases)})", path=str(path), line=1, field=name)


def read_reference(path: str | Path) -> pd.DataFrame:
    """Read a human-preference reference CSV into ``model, rating, lower, upper``.

    Accepts ``rating_q025``/``rating_q975`` (Chatbot Arena exports) for the CI bounds.
    """
    path = Path(path)
    try:
        raw = pd.read_csv(path)
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read CSV: {exc}", path=str(path)) from None
    if "model" not in raw.columns:
        raise InputError("no 'model' column", path=str(path), line=1, field="model")
    cols = {
        "rating": _pick(raw.columns, _RATING_ALIASES, path, "rating"),
        "lower": _pick(raw.columns, _LOWER_ALIASES, path, "lower"),
        "upper": _pick(raw.columns, _UPPER_ALIASES, path, "upper"),
    }
    out = pd.DataFrame({"model": raw["model"].astype(str)})
    for name, col in cols.items():
        values = pd.to_numeric(raw[col], errors="coerce")
        bad = values.isna() & raw["model"].notna()
        if bad.any():
            # +2: one for the header, one for 1-based lines.
            raise InputError(f"not a number: {raw[col][bad].iloc[0]!r}", path=str(path), line=int(bad.idxmax()) + 2, field=col)
        out[name] = values.astype(float)
    return out


def read_names(path: str | Path | None) -> dict[str, str | None]:
    """Read a JSON object mapping benchmark model names to reference names (keys starting with
    ``_`` are comments; ``null`` marks a name that must not match the reference even though it
    is spelled the same, e.g. a different model version)."""
    if path is None:
        return {}
    path = Path(path)
    obj = read_json(path)
    if not isinstance(obj, Mapping):
        raise InputError("expected a JSON object {benchmark_name: reference_name}", path=str(path))
    out = {}
    for k, v in obj.items():
        if k.startswith("_"):
            continue
        if v is not None and not isinstance(v, str):
            raise InputError(f"expected a string or null, got {v!r}", path=str(path), field=k)
        out[k] = v
    return out


def scores_from_leaderboard(table: pd.DataFrame, replicates: pd.DataFrame | None = None) -> pd.DataFrame:
    """Scores frame (``model, score, lower, upper, results``) from a leaderboard table and its
    bootstrap replicates (one column per model; a model without a column gets no ``results``)."""
    out = table[["model", "score", "lower", "upper"]].copy()
    if replicates is not None:
        out["results"] = [replicates[m].tolist() if m in replicates.columns else None for m in out["model"]]
    return out
