"""Dataset reading shared by the index tasks: local files or Hugging Face dataset ids, as typed items.

``load_eval(name, source)`` (the task registry's loader for eval ``name``) reads ``source`` as a local file when it is one (JSON Lines,
optionally gzipped; CSV; TSV for MGSM), else through ``datasets.load_dataset``: a Hugging
Face dataset id, or a local directory holding a copy of the hub repository (same files,
configs and splits; this is how offline machines and the tests use that path). Each task
(``arena.index.tasks``) maps rows of its dataset's published schema to :class:`EvalItem`; a
missing field raises :class:`InputError` naming file, line and field.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from arena.errors import InputError
from arena.io.formats import open_text, read_jsonl



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


def hf_rows(hub: dict[str, Any], source: str, *, config: str | None = None, trust_remote_code: bool = False) -> Iterator[tuple[int, dict]]:
    """Rows of a hub dataset (or a local copy of its repository) with ``hub``'s split and options."""
    import datasets  # heavy; only when a hub id is used

    spec = dict(hub)
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


def get_field(row: dict, key: str, where: tuple[str, int], types: tuple[type, ...] | None = None) -> Any:
    """``row[key]``; a missing value, or one not of ``types``, is an error naming file, line and field."""
    if not isinstance(row, dict):
        raise InputError(f"expected an object, got {type(row).__name__}", path=where[0], line=where[1])
    if key not in row or row[key] is None:
        raise InputError("missing field", path=where[0], line=where[1], field=key)
    value = row[key]
    if types is not None and (not isinstance(value, types) or isinstance(value, bool)):
        want = " or ".join({str: "a string", int: "an integer", float: "a number", list: "a list", dict: "an object"}.get(t, t.__name__) for t in types)
        raise InputError(f"expected {want}, got {type(value).__name__}", path=where[0], line=where[1], field=key)
    return value


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
    """Items of eval ``name`` from ``source`` (local path, or hub id; default: the task's hub id)."""
    from arena.index.runner import EvalSpec
    from arena.index.tasks import get_task

    task = get_task(name)
    spec = EvalSpec(name, None if source is None else str(source), limit=limit, targets_data=scicode_targets)
    return task.load_source(spec, spec.source, language, trust_remote_code=trust_remote_code)


def read_mgsm_tsv(path: Path) -> Iterator[tuple[int, dict]]:
    """MGSM's published TSV: question, tab, answer; one per line."""
    with open_text(path) as f:
        for i, line in enumerate(f.read().split("\n"), start=1):
            if not line.strip():
                continue
            parts = line.rstrip("\r").split("\t")
            if len(parts) != 2:
                raise InputError(f"expected 2 tab-separated columns, got {len(parts)}", path=str(path), line=i)
            yield i, {"question": parts[0], "answer": parts[1]}
