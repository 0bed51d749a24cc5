"""Read user prompts from files and Hugging Face datasets into typed records.

Formats: JSONL (also ``.gz``), JSON (an array, or ``{"data": [...]}``), CSV, Parquet and
Hugging Face datasets (by hub name, or a local folder/``save_to_disk`` directory).
Record shapes: Chatbot Arena ``conversation_a``, ShareGPT ``conversations[{from, value}]``,
OpenAI ``messages[{role, content}]``, arena-hard ``turns[{content}]`` / ``prompt``, or any
field named in :class:`FieldMap`. Multi-turn records keep the first user turn or the user
turns joined, capped at ``max_chars``.

A record that cannot give a usable prompt is *dropped and counted* (reason, file, line), never
silently; a file that cannot be read, or a field mapping that matches nothing, is an
:class:`~arena.errors.InputError` naming the file, line and field.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Literal, Mapping

from arena.errors import InputError
from arena.io.jsonl import open_text, read_jsonl

# Prompts above this are almost always pasted logs or data dumps, and break embedders.
DEFAULT_MAX_BYTES = 1_000_000
AUTO_CONVERSATION_FIELDS = ("conversation_a", "conversation", "conversations", "messages", "turns")
AUTO_TEXT_FIELDS = ("prompt", "instruction", "question", "text", "content")
AUTO_ID_FIELDS = ("question_id", "uid", "id", "conversation_id", "question_id")
USER_ROLES = {"user", "human", "prompter"}


@dataclass
class PromptRecord:
    """One prompt and where it came from (``source`` file or dataset, 1-based ``line``)."""

    source_id: str
    prompt: str
    source: str
    line: int
    n_turns: int = 1
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"source_id": self.source_id, "prompt": self.prompt, "source": self.source, "line": self.line, "n_turns": self.n_turns, **({"extra": self.extra} if self.extra else {})}


@dataclass
class Drop:
    reason: str
    source: str
    line: int
    source_id: str | None = None
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "source": self.source, "line": self.line, "source_id": self.source_id, "detail": self.detail}


@dataclass
class DropLog:
    """Every dropped prompt, by reason, with its location (written to ``drops.jsonl``)."""

    drops: list[Drop] = field(default_factory=list)

    def add(self, reason: str, source: str, line: int, source_id: str | None = None, detail: str = "") -> None:
        self.drops.append(Drop(reason, source, line, source_id, detail))

    def counts(self) -> dict[str, int]:
        return dict(Counter(d.reason for d in self.drops))

    def extend(self, other: "DropLog") -> None:
        self.drops.extend(other.drops)


@dataclass
class FieldMap:
    """Which fields hold the prompt and id. ``None`` means auto-detect.

    ``prompt`` names a text field; ``conversation`` a list of turns whose role and text live
    in ``role``/``content`` (auto: ``role``/``from`` and ``content``/``value``).
    """

    prompt: str | None = None
    conversation: str | None = None
    id: str | None = None
    role: str | None = None
    content: str | None = None
    user_roles: tuple[str, ...] = tuple(sorted(USER_ROLES))


@dataclass
class IngestOptions:
    fields: FieldMap = field(default_factory=FieldMap)
    multi_turn: Literal["first", "concat"] = "first"
    max_chars: int = 8000  # cap on the concatenated user turns
    max_bytes: int = DEFAULT_MAX_BYTES
    format: Literal["auto", "jsonl", "json", "csv", "parquet", "hf"] = "auto"
    hf_split: str = "train"
    hf_config: str | None = None
    limit: int | None = None


# --------------------------------------------------------------------------- raw rows
_open_text = open_text  # the project's one text opener (gzip-aware, keeps U+2028 inside lines)


def _detect_format(path: Path) -> str:
    name = path.name.lower().removesuffix(".gz")
    for ext, fmt in ((".jsonl", "jsonl"), (".ndjson", "jsonl"), (".json", "json"), (".csv", "csv"), (".parquet", "parquet")):
        if name.endswith(ext):
            return fmt
    if path.is_dir():
        return "hf"
    raise InputError("cannot tell the format from the file name; set format: jsonl|json|csv|parquet|hf", path=str(path))


def iter_rows(source: str | Path, opts: IngestOptions) -> Iterator[tuple[int, Any]]:
    """Yield ``(line, row)``; JSONL/CSV lines are file lines, JSON/Parquet/HF rows are 1-based
    record numbers. Unreadable files and undecodable lines raise :class:`InputError`."""
    path = Path(source)
    fmt = opts.format
    if fmt == "auto":
        if not path.exists() and opts.format != "hf" and "/" in str(source) and not str(source).startswith((".", "/")):
            fmt = "hf"  # "owner/name" hub id
        elif not path.exists():
            raise InputError("file not found", path=str(path))
        else:
            fmt = _detect_format(path)
    if fmt == "hf":
        yield from _iter_hf(str(source), opts)
        return
    try:
        if fmt == "jsonl":
            # Rows of any JSON type: a non-object row is dropped later with its reason.
            yield from read_jsonl(path, objects_only=False)
        elif fmt == "json":
            with _open_text(path) as f:
                try:
                    data = json.load(f)
                except json.JSONDecodeError as exc:
                    raise InputError(f"invalid JSON: {exc.msg}", path=str(path), line=exc.lineno) from None
            if isinstance(data, Mapping):
                data = next((data[k] for k in ("data", "rows", "questions", "prompts") if isinstance(data.get(k), list)), None)
            if not isinstance(data, list):
                raise InputError("expected a JSON array of records (or {'data': [...]})", path=str(path))
            yield from enumerate(data, 1)
        elif fmt == "csv":
            with _open_text(path) as f:
                reader = csv.DictReader(f)
                for row in reader:
                    yield reader.line_num, row
        elif fmt == "parquet":
            import pyarrow.parquet as pq

            pf = pq.ParquetFile(path)
            n = 0
            for batch in pf.iter_batches(batch_size=4096):
                for row in batch.to_pylist():
                    n += 1
                    yield n, row
        else:
            raise InputError(f"unknown format '{fmt}'", path=str(path), field="format")
    except InputError:
        raise
    except (OSError, UnicodeDecodeError, EOFError, csv.Error) as exc:
        raise InputError(f"cannot read file: {exc}", path=str(path)) from None
    except Exception as exc:  # pyarrow errors for corrupt parquet
        if type(exc).__module__.startswith("pyarrow"):
            raise InputError(f"cannot read parquet: {exc}", path=str(path)) from None
        raise


def _iter_hf(name: str, opts: IngestOptions) -> Iterator[tuple[int, Any]]:
    """Hugging Face dataset by hub id, local dataset folder, or ``save_to_disk`` directory."""
    import datasets

    p = Path(name)
    try:
        if p.is_dir() and ((p / "dataset_info.json").exists() or (p / "dataset_dict.json").exists()):
            ds = datasets.load_from_disk(str(p))
            if isinstance(ds, datasets.DatasetDict):
                ds = ds[opts.hf_split]
        else:
            ds = datasets.load_dataset(name, opts.hf_config, split=opts.hf_split)
    except (FileNotFoundError, ValueError, ConnectionError, OSError) as exc:
        raise InputError(f"cannot load Hugging Face dataset: {exc}", path=name) from None
    for i, row in enumerate(ds, 1):
        yield i, row


# --------------------------------------------------------------------------- prompt extraction
class _Skip(Exception):
    def __init__(self, reason: str, detail: str = ""):
        self.reason = reason
        self.detail = detail


def _turn_role_text(turn: Any, fm: FieldMap) -> tuple[str | None, Any]:
    if isinstance(turn, str):
        return None, turn
    if not isinstance(turn, Mapping):
        raise _Skip("non_string", f"turn is {type(turn).__name__}")
    role = turn.get(fm.role) if fm.role else turn.get("role", turn.get("from"))
    if fm.content:
        text = turn.get(fm.content)
    else:
        text = next((turn[k] for k in ("content", "value", "text") if k in turn), None)
    return (str(role).lower() if role is not None else None), text


def _user_turns(turns: Any, fm: FieldMap) -> list[Any]:
    if isinstance(turns, str):
        try:
            turns = json.loads(turns)  # CSV/parquet exports often hold the list as a JSON string
        except json.JSONDecodeError:
            return [turns]
    if not isinstance(turns, list):
        raise _Skip("non_string", f"conversation is {type(turns).__name__}")
    out = []
    for t in turns:
        role, text = _turn_role_text(t, fm)
        if role is None or role in fm.user_roles:
            out.append(text)
    return out


def _text_or_skip(value: Any) -> str:
    if value is None:
        raise _Skip("empty")
    if isinstance(value, list):  # OpenAI content parts
        parts = [p.get("text") for p in value if isinstance(p, Mapping) and p.get("type") == "text"]
        if not parts or not all(isinstance(p, str) for p in parts):
            raise _Skip("non_string", "content is a list without text parts")
        value = "\n".join(parts)
    if not isinstance(value, str):
        raise _Skip("non_string", f"prompt is {type(value).__name__}")
    return value


def extract_prompt(row: Any, opts: IngestOptions, *, source: str, line: int) -> tuple[str, int]:
    """The prompt text and the number of user turns of one row (raises ``_Skip`` to drop)."""
    fm = opts.fields
    if not isinstance(row, Mapping):
        raise _Skip("non_string", f"record is {type(row).__name__}")
    if fm.prompt:
        if fm.prompt not in row:
            raise InputError(f"field not found (record has: {', '.join(map(str, list(row)[:12]))})", path=source, line=line, field=fm.prompt)
        return _text_or_skip(row[fm.prompt]), 1
    conv_field = fm.conversation
    if conv_field and conv_field not in row:
        raise InputError(f"field not found (record has: {', '.join(map(str, list(row)[:12]))})", path=source, line=line, field=conv_field)
    if not conv_field:
        conv_field = next((k for k in AUTO_CONVERSATION_FIELDS if k in row and row[k] is not None), None)
        text_field = next((k for k in AUTO_TEXT_FIELDS if k in row), None)
        if conv_field is None and text_field is not None:
            return _text_or_skip(row[text_field]), 1
        if conv_field is None:
            raise InputError(
                f"no prompt field found; map one with fields.prompt or fields.conversation (record has: {', '.join(map(str, list(row)[:12]))})",
                path=source, line=line, field="prompt",
            )
    turns = _user_turns(row[conv_field], fm)
    if not turns:
        raise _Skip("no_user_turn")
    texts = [_text_or_skip(t) for t in turns]
    if opts.multi_turn == "first":
        return texts[0], len(texts)
    joined = "\n\n".join(t for t in texts if t.strip())
    return joined[: opts.max_chars], len(texts)


def _id_value(v: Any, source: str, line: int, field_name: str) -> str:
    """Ids are strings or integers: a list, object, bool or float made into a string would
    collide or match nothing, so it is an error naming the field."""
    if isinstance(v, bool) or not isinstance(v, (str, int)):
        kind = {bool: "a boolean", float: "a float", list: "a list", dict: "an object"}.get(type(v), type(v).__name__)
        raise InputError(f"id must be a string or an integer, got {kind}", path=source, line=line, field=field_name)
    return str(v)


def _row_id(row: Any, opts: IngestOptions, source: str, line: int) -> str:
    if isinstance(row, Mapping):
        if opts.fields.id:
            if opts.fields.id not in row:
                raise InputError("id field not found", path=source, line=line, field=opts.fields.id)
            return _id_value(row[opts.fields.id], source, line, opts.fields.id)
        for k in AUTO_ID_FIELDS:
            if row.get(k) not in (None, ""):
                return _id_value(row[k], source, line, k)
    return f"{Path(source).name}:{line}"


def prompt_from_row(line: int, row: Any, opts: IngestOptions, src: str, drops: DropLog) -> PromptRecord | None:
    """One row's prompt record, or ``None`` after logging why it was dropped."""
    sid = _row_id(row, opts, src, line)
    try:
        text, n_turns = extract_prompt(row, opts, source=src, line=line)
    except _Skip as s:
        drops.add(s.reason, src, line, sid, s.detail)
        return None
    if len(text.encode("utf-8", "surrogatepass")) > opts.max_bytes:
        drops.add("too_large", src, line, sid, f"{len(text.encode('utf-8', 'surrogatepass'))} bytes > {opts.max_bytes}")
        return None
    text = text.strip()
    if not text:
        drops.add("empty", src, line, sid)
        return None
    return PromptRecord(source_id=sid, prompt=text, source=src, line=line, n_turns=n_turns)


def check_unique_id(first_seen: dict[str, tuple[int, str]], rec: PromptRecord) -> None:
    """An id names one prompt: the same id again with the same text is an exact duplicate (the
    de-duplication filter drops it); with another text it would make ids ambiguous downstream
    (annotations and question.jsonl are keyed by it), so it is an error."""
    seen = first_seen.setdefault(rec.source_id, (rec.line, rec.prompt))
    if seen[1] != rec.prompt:
        raise InputError(f"duplicate id {rec.source_id!r} with a different prompt (first on line {seen[0]})", path=rec.source, line=rec.line, field="id")


def read_prompts(source: str | Path, opts: IngestOptions | None = None, drops: DropLog | None = None) -> list[PromptRecord]:
    """All usable prompts of one source; unusable rows go to ``drops`` with their reason."""
    opts = opts or IngestOptions()
    drops = drops if drops is not None else DropLog()
    src = str(source)
    out: list[PromptRecord] = []
    first_seen: dict[str, tuple[int, str]] = {}
    for line, row in iter_rows(source, opts):
        rec = prompt_from_row(line, row, opts, src, drops)
        if rec is None:
            continue
        check_unique_id(first_seen, rec)
        out.append(rec)
        if opts.limit and len(out) >= opts.limit:
            break
    return out
