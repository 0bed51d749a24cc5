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

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from arena.errors import InputError

VERDICT_LABELS = ("A>>B", "A>B", "A=B", "B>A", "B>>A")


# --------------------------------------------------------------------------- JSONL I/O
# One JSONL module for the project (arena/io/jsonl.py); re-exported here for older imports.
from arena.io.jsonl import JsonlAppender, jsonl_files, open_text, read_jsonl, repair_torn_tail, write_jsonl  # noqa: E402,F401


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
    provenance: dict[str, Any] | None = None  # endpoint, params, template version (None: unknown)

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
        if self.provenance is not None:
            rec["provenance"] = self.provenance
        return rec


@dataclass
class Game:
    user_prompt: str | None
    judgment: str | None
    score: str | None  # one of VERDICT_LABELS, or None when unparsed/failed
    status: str = "ok"  # ok | reasked (verdict from the re-ask) | unparsed | conflict | failed
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
    # What was judged, by whom, with which template (see arena/provenance.py); None for
    # records written before provenance existed or imported from arena-hard-auto.
    provenance: dict[str, Any] | None = None
    tstamp: float | None = None

    @property
    def game_key(self) -> tuple[str, str, str, str]:
        """The identity of one prompt's pair of games: one record per key survives reading."""
        return (self.judge, self.model, self.baseline or "", self.question_id)

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
        if self.tstamp is not None:
            rec["tstamp"] = self.tstamp
        if self.provenance is not None:
            rec["provenance"] = self.provenance
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
    """The question id as a string. Only strings and integers are ids: a list, object, bool
    or float turned into a string would silently match nothing (or the wrong thing)."""
    for k in ("question_id", "uid"):
        if k in rec and rec[k] not in (None, ""):
            v = rec[k]
            if isinstance(v, bool) or not isinstance(v, (str, int)):
                kind = {bool: "a boolean", float: "a float", list: "a list", dict: "an object"}.get(type(v), type(v).__name__)
                raise InputError(f"question id must be a string or an integer, got {kind}", path=str(path), line=line, field=k)
            if isinstance(v, str) and not v.strip():
                raise InputError("question id is blank", path=str(path), line=line, field=k)
            return str(v)
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
        metadata=dict(metadata) if isinstance(metadata, Mapping) else {},
        tstamp=rec.get("tstamp"),
        provenance=rec["provenance"] if isinstance(rec.get("provenance"), Mapping) else None,
    )


def read_answer_file(path: str | Path, model: str | None = None, *, question_ids: set[str] | None = None,
                     allow_empty: bool = False, torn_tail: str = "skip") -> dict[str, Answer]:
    """One model's answers keyed by question id. The model name is the file name, as in
    arena-hard-auto. A repeated question id keeps the newest record (the later line): the
    project's one duplicate policy. With ``question_ids``, an answer to any other question
    is an error; a file with no answers is an error unless ``allow_empty``. A torn last line
    (an answer run killed mid-append) is left out."""
    path = Path(path)
    model = model or model_name_from_file(path)
    out: dict[str, Answer] = {}
    for line, rec in read_jsonl(path, torn_tail=torn_tail):  # type: ignore[arg-type]
        a = parse_answer(rec, path, line, model)
        if question_ids is not None and a.question_id not in question_ids:
            raise InputError(f"answer to question '{a.question_id}', which is not in the question file", path=str(path), line=line, field="question_id")
        a.model = model
        out[a.question_id] = a
    if not out and not allow_empty:
        raise InputError("no answers in this file", path=str(path))
    return out


def read_answers(path: str | Path, *, allow_empty: bool = False) -> dict[str, dict[str, Answer]]:
    """``{model: {question_id: Answer}}`` from a directory of answer files (or one file)."""
    return {model_name_from_file(p): read_answer_file(p, allow_empty=allow_empty) for p in jsonl_files(path)}


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
    prov = rec.get("provenance")
    tstamp = rec.get("tstamp")
    return Judgment(
        question_id=qid,
        model=str(m),
        judge=str(rec.get("judge") or judge or ""),
        games=games,
        baseline=rec.get("baseline"),
        category=rec.get("category"),
        source=f"{path}:{line}",
        provenance=dict(prov) if isinstance(prov, Mapping) else None,
        tstamp=float(tstamp) if isinstance(tstamp, (int, float)) and not isinstance(tstamp, bool) else None,
    )


def latest_judgments(judgments: Iterable[Judgment]) -> list[Judgment]:
    """One record per game key (judge, model, baseline, question), the newest winning.

    Newest means the later record in reading order (a resumed or re-judged prompt is appended
    after the record it replaces); records that both carry ``tstamp`` are ordered by it, so
    files merged out of order still resolve to the newer judgment. Every reader that counts
    games (show, audits, ensembles, reports) goes through this, so a duplicate left by a
    kill can never count twice."""
    latest: dict[tuple, Judgment] = {}
    for j in judgments:
        k = j.game_key
        prev = latest.get(k)
        if prev is not None and prev.tstamp is not None and j.tstamp is not None and j.tstamp < prev.tstamp:
            continue
        latest[k] = j
    return list(latest.values())


def read_judgment_file(path: str | Path, judge: str | None = None, *, torn_tail: str = "skip") -> list[Judgment]:
    """Every record of one judgment file, in file order (duplicates included; see
    :func:`latest_judgments`). A torn last line (a judge killed mid-append) is a judgment that
    was never completed, so it is left out rather than failing the whole read."""
    path = Path(path)
    return [parse_judgment(rec, path, line, model_name_from_file(path), judge) for line, rec in read_jsonl(path, torn_tail=torn_tail)]  # type: ignore[arg-type]


def read_judgments(path: str | Path) -> list[Judgment]:
    """Judgments from a file, a directory of model files, or a directory of judge directories
    (``model_judgment/<judge>/<model>.jsonl``)."""
    path = Path(path)
    if path.is_file():
        return latest_judgments(read_judgment_file(path))
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
    return latest_judgments(out)
