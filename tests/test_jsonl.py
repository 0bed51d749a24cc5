"""The one JSONL module: splitting on '\\n' only, gzip, torn tails, appends, and atomic rewrites
that a kill at any step (or at a random moment) leaves as the old or the new file; plus the
curation outputs that used to be truncated or overwritten with nothing."""

from __future__ import annotations

import gzip
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arena.errors import InputError
from arena.io.jsonl import JsonlAppender, append_jsonl, dumps, read_jsonl, repair_torn_tail, write_json, write_jsonl

ROOT = Path(__file__).resolve().parents[1]


def _records(path):
    return [r for _, r in read_jsonl(path)]


def test_split_on_newline_only(tmp_path):
    recs = [{"a": "line\u2028separator"}, {"a": "para\u2029graph"}, {"a": "carriage\rreturn", "b": "nel\x85x"}]
    p = tmp_path / "x.jsonl"
    assert write_jsonl(p, recs) == 3
    raw = p.read_bytes()
    assert raw.count(b"\n") == 3  # U+2028 is written raw (ensure_ascii=False), still one line
    assert "\u2028".encode() in raw
    assert _records(p) == recs
    assert [n for n, _ in read_jsonl(p)] == [1, 2, 3]


def test_gzip_round_trip_and_line_numbers(tmp_path):
    p = tmp_path / "x.jsonl.gz"
    write_jsonl(p, [{"i": i, "s": "\u2028"} for i in range(5)])
    with gzip.open(p, "rt", encoding="utf-8") as fh:
        assert fh.read().count("\n") == 5
    assert [r["i"] for r in _records(p)] == list(range(5))
    with pytest.raises(InputError, match="cannot append to a gzip file"):
        JsonlAppender(p)


def test_blank_lines_skipped_and_errors_name_line(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text('{"a": 1}\n\n   \n{"a": 2\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"x.jsonl:line 4: malformed JSON"):
        _records(p)
    p.write_text('{"a": 1}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"x.jsonl:line 2: expected a JSON object, got list"):
        _records(p)
    assert [v for _, v in read_jsonl(p, objects_only=False)] == [{"a": 1}, [1, 2]]
    p.write_bytes(b'{"a": "\xff"}\n')
    with pytest.raises(InputError, match="not valid UTF-8"):
        _records(p)


def test_reading_never_modifies_a_torn_file(tmp_path):
    p = tmp_path / "x.jsonl"
    body = b'{"a": 1}\n{"a": 2}\n{"a": 3, "b": "tor'
    p.write_bytes(body)
    with pytest.raises(InputError, match="line 3: malformed JSON"):
        _records(p)
    assert [r["a"] for _, r in read_jsonl(p, torn_tail="skip")] == [1, 2]
    assert p.read_bytes() == body  # neither mode touched the file


def test_whole_last_record_without_newline_is_kept(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_bytes(b'{"a": 1}\n{"a": 2}')
    assert [r["a"] for _, r in read_jsonl(p, torn_tail="skip")] == [1, 2]
    # the writer agrees with the reader: it ends the line instead of cutting the record
    assert repair_torn_tail(p) is True
    assert p.read_bytes() == b'{"a": 1}\n{"a": 2}\n'
    assert repair_torn_tail(p) is False


def test_appender_cuts_torn_tail_then_appends(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_bytes(b'{"a": 1}\n{"a": 2, "b"')
    with JsonlAppender(p, fsync="record") as w:
        assert w.repaired
        w.append({"a": 3})
    assert [r["a"] for r in _records(p)] == [1, 3]
    p.write_bytes(b'{"a": "only torn')
    append_jsonl(p, {"a": 4})
    assert [r["a"] for r in _records(p)] == [4]


def test_failed_write_leaves_old_file_and_no_temp(tmp_path):
    p = tmp_path / "x.jsonl"
    write_jsonl(p, [{"a": 1}])
    old = p.read_bytes()

    def boom():
        yield {"a": 2}
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError):
        write_jsonl(p, boom())
    assert p.read_bytes() == old
    assert sorted(x.name for x in tmp_path.iterdir()) == ["x.jsonl"]
    with pytest.raises(ValueError):  # NaN is not JSON: refused before the file is replaced
        write_jsonl(p, [{"a": float("nan")}])
    assert p.read_bytes() == old


def test_write_keeps_permissions(tmp_path):
    p = tmp_path / "x.jsonl"
    write_jsonl(p, [{"a": 1}])
    os.chmod(p, 0o640)
    write_jsonl(p, [{"a": 2}])
    assert p.stat().st_mode & 0o777 == 0o640
    write_json(tmp_path / "m.json", {"k": [1, 2]})
    assert json.loads((tmp_path / "m.json").read_text()) == {"k": [1, 2]}


def test_dumps_one_line():
    assert "\n" not in dumps({"a": "x\ny\u2028"})


# --------------------------------------------------------------------------- kills mid-compaction
_CHILD = r"""
import os, signal, sys
sys.path.insert(0, {root!r})
from arena.io.jsonl import write_jsonl
path, n, kill_step, kill_at = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
seen = {{}}
def step(name):
    seen[name] = seen.get(name, 0) + 1
    if name == kill_step and seen[name] == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
write_jsonl(path, ({{"question_id": f"q{{i}}", "v": "new", "pad": "y" * 200}} for i in range(n)), on_step=step)
"""

_LOOP = r"""
import sys
sys.path.insert(0, {root!r})
from arena.io.jsonl import write_jsonl
path, n = sys.argv[1], int(sys.argv[2])
k = 0
print("go", flush=True)
while True:
    v = "new" if k % 2 else "old"
    write_jsonl(path, ({{"question_id": f"q{{i}}", "v": v, "pad": "z" * 200}} for i in range(n if v == "old" else n + 7)))
    k += 1
"""


def _state(path: Path, n_old: int, n_new: int) -> str:
    """'old' or 'new' when the file is exactly one of the two versions; fails otherwise."""
    recs = _records(path)
    vs = {r["v"] for r in recs}
    assert len(vs) == 1, f"mixed file: {vs}"
    v = vs.pop()
    assert len(recs) == (n_old if v == "old" else n_new), f"{v} file with {len(recs)} records"
    assert [r["question_id"] for r in recs] == [f"q{i}" for i in range(len(recs))]
    return v


@pytest.mark.parametrize("kill_step,kill_at", [("opened", 1), ("record", 1), ("record", 500), ("record", 2000), ("written", 1), ("synced", 1), ("renamed", 1), ("done", 1)])
def test_kill_at_each_compaction_step_leaves_old_or_new(tmp_path, kill_step, kill_at):
    p = tmp_path / "j.jsonl"
    n = 2000
    write_jsonl(p, [{"question_id": f"q{i}", "v": "old", "pad": "x"} for i in range(n)])
    r = subprocess.run([sys.executable, "-c", _CHILD.format(root=str(ROOT)), str(p), str(n), kill_step, str(kill_at)], capture_output=True, timeout=120)
    assert r.returncode == -signal.SIGKILL, r.stderr
    want = "new" if kill_step in ("renamed", "done") else "old"
    assert _state(p, n, n) == want
    # a kill before the rename can leave a hidden temp file, which no reader lists
    leftovers = [x.name for x in tmp_path.iterdir() if x.name != "j.jsonl"]
    assert all(x.startswith(".j.jsonl.") and x.endswith(".tmp") for x in leftovers)


def test_kill_at_random_moments_leaves_old_or_new(tmp_path):
    p = tmp_path / "j.jsonl"
    n = 3000
    write_jsonl(p, [{"question_id": f"q{i}", "v": "old", "pad": "z" * 200} for i in range(n)])
    rng = random.Random(7)
    seen = {"old": 0, "new": 0}
    for _ in range(25):
        proc = subprocess.Popen([sys.executable, "-c", _LOOP.format(root=str(ROOT)), str(p), str(n)], stdout=subprocess.PIPE)
        assert proc.stdout.readline().strip() == b"go"
        time.sleep(rng.uniform(0.0, 0.4))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        seen[_state(p, n, n + 7)] += 1
    print(f"\nrandom kills: {seen}")
    assert sum(seen.values()) == 25


# --------------------------------------------------------------------------- curation outputs
def test_benchbuilder_validate_does_not_modify_its_inputs(tmp_path):
    from typer.testing import CliRunner

    from benchbuilder.cli import app

    rec = lambda sid, crit: json.dumps({"source_id": sid, "stage": "s", "status": "ok", "criteria": crit, "score": len(crit)})  # noqa: E731
    files = []
    for k in range(3):
        p = tmp_path / f"a{k}.jsonl"
        p.write_bytes((rec("p1", [1, 2]) + "\n" + rec("p2", [3]) + "\n" + '{"source_id": "p3", "sta').encode())
        files.append(p)
    before = [f.read_bytes() for f in files]
    r = CliRunner().invoke(app, ["validate", "--target", str(files[0]), "--other", str(files[1]), "--other", str(files[2])])
    assert r.exit_code == 0, r.output
    assert "prompts: 2" in r.output
    assert [f.read_bytes() for f in files] == before


def test_load_annotations_leaves_torn_file_alone_and_resumes(tmp_path):
    from benchbuilder.annotate import load_annotations

    p = tmp_path / "s.jsonl"
    body = b'{"source_id": "p1", "stage": "s", "status": "failed"}\n{"source_id": "p1", "stage": "s", "status": "ok", "criteria": [1], "score": 1}\n{"source_id": "p2", "st'
    p.write_bytes(body)
    got = load_annotations(p)
    assert set(got) == {"p1"} and got["p1"].status == "ok"  # newest wins
    assert p.read_bytes() == body


def _pipeline(tmp_path, inp: Path):
    from benchbuilder.config import load_config
    from benchbuilder.pipeline import Pipeline

    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(json.dumps({"output": str(tmp_path / "out"), "input": {"paths": [str(inp)]}, "filters": {"languages": [], "near_dedup": False}}))
    return Pipeline(load_config(cfg))


def test_ingest_with_empty_input_keeps_earlier_outputs(tmp_path):
    good = tmp_path / "in.jsonl"
    write_jsonl(good, [{"id": f"p{i}", "prompt": f"How do I sort a list of {i} numbers in Python?"} for i in range(5)])
    pipe = _pipeline(tmp_path, good)
    summary = pipe.ingest()
    assert summary["kept"] == 5
    out = tmp_path / "out"
    before = {f: (out / f).read_bytes() for f in ("prompts.jsonl", "drops.jsonl", "ingest.json")}

    good.write_text("")
    with pytest.raises(InputError, match="the input holds no prompts; earlier outputs were left as they are"):
        _pipeline(tmp_path, good).ingest()
    good.write_text(json.dumps({"id": "x", "prompt": "   "}) + "\n")  # read, but nothing survives
    with pytest.raises(InputError, match=r"no prompt survived ingestion \(1 read"):
        _pipeline(tmp_path, good).ingest()
    assert {f: (out / f).read_bytes() for f in before} == before


@pytest.mark.parametrize("bad,kind", [('["a"]', "a list"), ('{"k": 1}', "an object"), ("true", "a boolean"), ("1.5", "a float")])
def test_ingest_rejects_ids_of_the_wrong_type(tmp_path, bad, kind):
    from benchbuilder.ingest import read_prompts

    p = tmp_path / "in.jsonl"
    p.write_text('{"id": "fine", "prompt": "hello there"}\n{"id": ' + bad + ', "prompt": "hi"}\n')
    with pytest.raises(InputError) as e:
        read_prompts(p)
    assert str(e.value) == f"{p}:line 2: field 'id': id must be a string or an integer, got {kind}"


def test_select_never_writes_an_empty_question_file(tmp_path):
    from benchbuilder.select import write_questions

    q = tmp_path / "question.jsonl"
    q.write_text('{"question_id": "old"}\n')
    with pytest.raises(InputError, match="no prompt was selected; the earlier question file was left as it was"):
        write_questions(q, [], {})
    assert q.read_text() == '{"question_id": "old"}\n'
