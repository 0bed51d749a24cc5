"""Readers and writers for arena-hard-auto file formats (v0.1 and v2.0).

Questions, answers and judgments are read into typed records whatever the source schema, so
users can import public results. We write arena-hard v0.1 records (plus metadata fields),
which arena-hard-auto's own scripts read back.

* v0.1 question  ``{question_id, category, cluster, turns: [{content}]}`` (``turns`` may be strings)
* v2.0 question  ``{uid, category, subcategory, prompt}``
* v0.1 answer    ``{question_id, answer_id, model_id, choices: [{index, turns: [{content, token_len}]}], tstamp}``
* v2.0 answer    ``{uid, ans_id, model, messages: [..., {role: assistant, content: {answer} | str}], tstamp, metadata}``
* v0.1 judgment  ``{question_id, model, judge, games: [{user_prompt, judgment, score}] x 2}``
* v2.0 judgment  ``{uid, category, judge, model, baseline, games: [{score, judgment: {answer} | str, prompt}]}``

JSON Lines are split on ``\\n`` only: real prompts contain U+2028, which ``str.splitlines`` treats
as a line break.
"""

from __future__ import annotations

import gzip
import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from arena.errors import InputError

VERDICT_LABELS = ("A>>B", "A>B", "A=B", "B>A", "B>>A")


# --------------------------------------------------------------------------- JSONL I/O
def open_text(path: Path) -> io.TextIOBase:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    return open(path, "r", encoding="utf-8", newline="")


def read_jsonl(path: str | Path, *, skip_torn_tail: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, record)``; blank lines are skipped, bad JSON names file and line.

    ``skip_torn_tail`` ignores a final line without its newline: the mark of a writer killed
    mid-write, for readers that must not repair the file themselves.
    """
    path = Path(path)
    try:
        fh = open_text(path)
    except OSError as exc:
        raise InputError(f"cannot open: {exc.strerror}", path=str(path)) from None
    with fh:
        try:
            text = fh.read()
        except (OSError, UnicodeDecodeError, EOFError) as exc:
            raise InputError(f"cannot read: {exc}", path=str(path)) from None
    lines = text.split("\n")
    if skip_torn_tail:
        lines = lines[:-1]  # "" after a final newline, else the torn tail
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed JSON ({exc.msg} at column {exc.colno})", path=str(path), line=i) from None
        if not isinstance(obj, dict):
            raise InputError(f"expected a JSON object, got {type(obj).__name__}", path=str(path), line=i)
        yield i, obj


class JsonlAppender:
    """Append-only JSONL output that survives ``kill -9``.

    Each record is one ``write`` of one line, flushed at once. On open, a torn last line left by
    a kill is cut off (its call is in the response cache, so nothing paid for is lost).
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.repaired = repair_torn_tail(self.path)
        self._fh = open(self.path, "a", encoding="utf-8")

    def append(self, record: Mapping[str, Any]) -> None:
        self._fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> "JsonlAppender":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def repair_torn_tail(path: Path) -> bool:
    """Truncate ``path`` after its last newline if the final line is incomplete."""
    if not path.exists() or path.stat().st_size == 0:
        return False
    with open(path, "rb+") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(max(0, size - 1))
        if fh.read(1) == b"\n":
            return False
        # Walk back to the previous newline.
        pos = size
        chunk = 65536
        while pos > 0:
            start = max(0, pos - chunk)
            fh.seek(start)
            buf = fh.read(pos - start)
            idx = buf.rfind(b"\n")
            if idx >= 0:
                fh.truncate(start + idx + 1)
                return True
            pos = start
        fh.truncate(0)
        return True


def jsonl_files(path: str | Path) -> list[Path]:
    """A file, or every ``*.jsonl``/``*.jsonl.gz`` directly inside a directory, sorted."""
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise InputError("no such file or directory", path=str(path))
    return sorted(p for p in path.iterdir() if p.is_file() and (p.name.endswith(".jsonl") or p.name.endswith(".jsonl.gz")))


def model_name_from_file(path: Path) -> str:
    name = path.name
    for suffix in (".jsonl.gz", ".jsonl"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


# --------------------------------------------------------------------------- records
@dataclass
class Question:
    question_id: str
    prompt: str
    turns: list[str] = field(default_factory=list)
    category: str | None = None
    cluster: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_v01(self) -> dict[str, Any]:
        rec = {
            "question_id": self.question_id,
            "category": self.category,
            "cluster": self.cluster,
            "turns": [{"content": t} for t in (self.turns or [self.prompt])],
        }
        rec.update({k: v for k, v in self.extra.items() if k not in rec})
        return rec


@dataclass
class Answer:
    question_id: str
    model: str
    text: str
    answer_id: str | None = None
    token_len: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    tstamp: float | None = None

    def to_v01(self) -> dict[str, Any]:
        rec: dict[str, Any] = {
            "question_id": self.question_id,
            "answer_id": self.answer_id,
            "model_id": self.model,
            "choices": [{"index": 0, "turns": [{"content": self.text, "token_len": self.token_len}]}],
            "tstamp": self.tstamp,
        }
        if self.metadata:
            rec["conv_metadata"] = self.metadata
        return rec


@dataclass
class Game:
    user_prompt: str | None
    judgment: str | None
    score: str | None  # one of VERDICT_LABELS, or None when unparsed/failed
    status: str = "ok"  # ok | unparsed | conflict | failed
    extra: dict[str, Any] = field(default_factory=dict)

    def to_v01(self) -> dict[str, Any]:
        rec: dict[str, Any] = {"user_prompt": self.user_prompt, "judgment": self.judgment, "score": self.score}
        if self.status != "ok":
            rec["status"] = self.status
        rec.update({k: v for k, v in self.extra.items() if k not in rec})
        return rec


@dataclass
class Judgment:
    question_id: str
    model: str
    judge: str
    games: list[Game]
    baseline: str | None = None
    category: str | None = None
    source: str | None = None  # file:line it came from

    def to_v01(self) -> dict[str, Any]:
        rec: dict[str, Any] = {
            "question_id": self.question_id,
            "model": self.model,
            "judge": self.judge,
            "games": [g.to_v01() for g in self.games],
        }
        if self.baseline is not None:
            rec["baseline"] = self.baseline
        if self.category is not None:
            rec["category"] = self.category
        return rec


# --------------------------------------------------------------------------- parsing
def _content_text(content: Any) -> str | None:
    """Message content may be a string, ``{"answer": ...}`` (v2.0) or a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        for k in ("answer", "content", "text"):
            if isinstance(content.get(k), str):
                return content[k]
        return None
    if isinstance(content, list):
        parts = [p.get("text") if isinstance(p, Mapping) else p for p in content]
        if all(isinstance(p, str) for p in parts):
            return "".join(parts)
    return None


def _require_id(rec: Mapping[str, Any], path: Path, line: int) -> str:
    for k in ("question_id", "uid"):
        if k in rec and rec[k] not in (None, ""):
            return str(rec[k])
    raise InputError("missing question id ('question_id' in v0.1, 'uid' in v2.0)", path=str(path), line=line, field="question_id")


def parse_question(rec: Mapping[str, Any], path: Path, line: int) -> Question:
    qid = _require_id(rec, path, line)
    turns: list[str] = []
    if "turns" in rec:
        raw = rec["turns"]
        if not isinstance(raw, list) or not raw:
            raise InputError("'turns' must be a non-empty list", path=str(path), line=line, field="turns")
        for j, t in enumerate(raw):
            text = _content_text(t)
            if text is None:
                raise InputError("turn content must be a string", path=str(path), line=line, field=f"turns[{j}].content")
            turns.append(text)
        fld = "turns[0].content"
    elif "prompt" in rec:
        text = _content_text(rec["prompt"])
        if text is None:
            raise InputError("prompt must be a string", path=str(path), line=line, field="prompt")
        turns = [text]
        fld = "prompt"
    else:
        raise InputError("missing prompt ('turns' in v0.1, 'prompt' in v2.0)", path=str(path), line=line, field="turns")
    if not turns[0].strip():
        raise InputError("empty prompt", path=str(path), line=line, field=fld)
    known = {"question_id", "uid", "turns", "prompt", "category", "cluster"}
    return Question(
        question_id=qid,
        prompt=turns[0],
        turns=turns,
        category=rec.get("category"),
        cluster=rec.get("cluster"),
        extra={k: v for k, v in rec.items() if k not in known},
    )


def read_questions(path: str | Path) -> list[Question]:
    """Questions from a v0.1 or v2.0 file; duplicate ids are an error."""
    path = Path(path)
    out: list[Question] = []
    seen: dict[str, int] = {}
    for line, rec in read_jsonl(path):
        q = parse_question(rec, path, line)
        if q.question_id in seen:
            raise InputError(f"duplicate question id '{q.question_id}' (first on line {seen[q.question_id]})", path=str(path), line=line, field="question_id")
        seen[q.question_id] = line
        out.append(q)
    if not out:
        raise InputError("no questions found", path=str(path))
    return out


def parse_answer(rec: Mapping[str, Any], path: Path, line: int, model: str | None = None) -> Answer:
    qid = _require_id(rec, path, line)
    model_id = rec.get("model_id") or rec.get("model") or model
    if "choices" in rec:
        try:
            turn = rec["choices"][0]["turns"][0]
        except (KeyError, IndexError, TypeError):
            raise InputError("expected choices[0].turns[0]", path=str(path), line=line, field="choices") from None
        text = _content_text(turn)
        token_len = turn.get("token_len") if isinstance(turn, Mapping) else None
        metadata = rec.get("conv_metadata") or rec.get("metadata") or {}
        fld = "choices[0].turns[0].content"
    elif "messages" in rec:
        msgs = rec["messages"]
        assistant = [m for m in msgs if isinstance(m, Mapping) and m.get("role") == "assistant"] if isinstance(msgs, list) else []
        if not assistant:
            raise InputError("no assistant message", path=str(path), line=line, field="messages")
        text = _content_text(assistant[-1].get("content"))
        metadata = rec.get("metadata") or {}
        token_len = metadata.get("token_len")
        fld = "messages[-1].content"
    else:
        raise InputError("missing answer ('choices' in v0.1, 'messages' in v2.0)", path=str(path), line=line, field="choices")
    if text is None:
        raise InputError("answer content must be a string", path=str(path), line=line, field=fld)
    return Answer(
        question_id=qid,
        model=str(model_id) if model_id else "",
        text=text,
        answer_id=rec.get("answer_id") or rec.get("ans_id"),
        token_len=token_len,
        metadata=dict(metadata),
        tstamp=rec.get("tstamp"),
    )


def read_answer_file(path: str | Path, model: str | None = None, *, question_ids: set[str] | None = None) -> dict[str, Answer]:
    """One model's answers keyed by question id. The model name is the file name, as in
    arena-hard-auto. A repeated question id keeps the first record (a resumed run never
    writes one twice). With ``question_ids``, an answer to any other question is an error."""
    path = Path(path)
    model = model or model_name_from_file(path)
    out: dict[str, Answer] = {}
    for line, rec in read_jsonl(path):
        a = parse_answer(rec, path, line, model)
        if question_ids is not None and a.question_id not in question_ids:
            raise InputError(f"answer to question '{a.question_id}', which is not in the question file", path=str(path), line=line, field="question_id")
        a.model = model
        out.setdefault(a.question_id, a)
    return out


def read_answers(path: str | Path) -> dict[str, dict[str, Answer]]:
    """``{model: {question_id: Answer}}`` from a directory of answer files (or one file)."""
    return {model_name_from_file(p): read_answer_file(p) for p in jsonl_files(path)}


def parse_judgment(rec: Mapping[str, Any], path: Path, line: int, model: str | None = None, judge: str | None = None) -> Judgment:
    qid = _require_id(rec, path, line)
    games_raw = rec.get("games")
    if not isinstance(games_raw, list) or not games_raw:
        raise InputError("'games' must be a non-empty list", path=str(path), line=line, field="games")
    games: list[Game] = []
    for j, g in enumerate(games_raw):
        if g is None:  # v2.0 writes null for a game whose API call failed
            games.append(Game(user_prompt=None, judgment=None, score=None, status="failed"))
            continue
        if not isinstance(g, Mapping):
            raise InputError("a game must be an object", path=str(path), line=line, field=f"games[{j}]")
        score = g.get("score")
        if score is not None and score not in VERDICT_LABELS:
            raise InputError(f"unknown verdict '{score}' (expected one of {', '.join(VERDICT_LABELS)})", path=str(path), line=line, field=f"games[{j}].score")
        judgment_text = _content_text(g.get("judgment")) if g.get("judgment") is not None else None
        prompt = g.get("user_prompt", g.get("prompt"))
        if not isinstance(prompt, (str, type(None))):
            prompt = json.dumps(prompt, ensure_ascii=False)
        status = g.get("status") or ("ok" if score is not None else "unparsed")
        known = {"user_prompt", "prompt", "judgment", "score", "status"}
        games.append(Game(user_prompt=prompt, judgment=judgment_text, score=score, status=status, extra={k: v for k, v in g.items() if k not in known}))
    m = rec.get("model") or model
    if not m:
        raise InputError("missing model name", path=str(path), line=line, field="model")
    return Judgment(
        question_id=qid,
        model=str(m),
        judge=str(rec.get("judge") or judge or ""),
        games=games,
        baseline=rec.get("baseline"),
        category=rec.get("category"),
        source=f"{path}:{line}",
    )


def read_judgment_file(path: str | Path, judge: str | None = None) -> list[Judgment]:
    path = Path(path)
    return [parse_judgment(rec, path, line, model_name_from_file(path), judge) for line, rec in read_jsonl(path)]


def read_judgments(path: str | Path) -> list[Judgment]:
    """Judgments from a file, a directory of model files, or a directory of judge directories
    (``model_judgment/<judge>/<model>.jsonl``)."""
    path = Path(path)
    if path.is_file():
        return read_judgment_file(path)
    if not path.is_dir():
        raise InputError("no such file or directory", path=str(path))
    out: list[Judgment] = []
    for p in jsonl_files(path):
        out.extend(read_judgment_file(p, judge=None))
    for sub in sorted(d for d in path.iterdir() if d.is_dir()):
        for p in jsonl_files(sub):
            out.extend(read_judgment_file(p, judge=sub.name))
    if not out:
        raise InputError("no judgment files (*.jsonl) found", path=str(path))
    return out


def write_jsonl(path: str | Path, records: Iterable[Mapping[str, Any]]) -> None:
    """Write a whole file atomically (temp file + rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    os.replace(tmp, path)
