"""Reading arena-hard v0.1/v2.0 files, and errors that name file, line and field."""

from __future__ import annotations

import gzip
import json

import pytest

from arena.errors import InputError
from arena.io.formats import JsonlAppender, read_answers, read_judgments, read_jsonl, read_questions


def _write(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_v01_and_v20_questions(tmp_path):
    p = _write(tmp_path / "q.jsonl", [
        json.dumps({"question_id": "a", "category": "c", "cluster": "x", "turns": [{"content": "hello"}]}),
        json.dumps({"uid": "b", "category": "hard_prompt", "subcategory": "math", "prompt": "what\u2028is 2+2"}),
        json.dumps({"question_id": "c", "turns": ["first", "second"]}),
    ])
    qs = read_questions(p)
    assert [q.question_id for q in qs] == ["a", "b", "c"]
    assert qs[1].prompt == "what\u2028is 2+2" and qs[1].extra["subcategory"] == "math"
    assert qs[2].turns == ["first", "second"]


@pytest.mark.parametrize("line,field", [
    ('{"question_id": "a", "turns": [{"content": ""}]}', "turns[0].content"),
    ('{"question_id": "a", "prompt": "   "}', "prompt"),
    ('{"turns": [{"content": "x"}]}', "question_id"),
    ('{"question_id": "a", "prompt": 5}', "prompt"),
    ('{"question_id": "a"}', "turns"),
])
def test_question_errors_name_file_line_field(tmp_path, line, field):
    p = _write(tmp_path / "q.jsonl", ['{"question_id": "ok", "prompt": "fine"}', line])
    with pytest.raises(InputError) as e:
        read_questions(p)
    assert e.value.line == 2 and e.value.field == field and "q.jsonl" in str(e.value) and "line 2" in str(e.value)


def test_malformed_json_line(tmp_path):
    p = _write(tmp_path / "q.jsonl", ['{"question_id": "ok", "prompt": "fine"}', '{"question_id": "b", "prompt": "x"', ''])
    with pytest.raises(InputError, match=r"q.jsonl:line 2: malformed JSON"):
        read_questions(p)


def test_real_files_of_both_versions(shared_data):
    assert len(read_questions(shared_data / "prompts" / "arena_hard_v0.1.jsonl")) == 500
    assert len(read_questions(shared_data / "prompts" / "arena_hard_v2.0.jsonl")) == 750
    answers = read_answers(shared_data / "arena" / "answers" / "arena-hard-v0.1")
    assert len(answers) == 32 and all(len(v) == 500 for v in answers.values())
    a = answers["gpt-4-0314"]
    assert all(x.text for x in a.values())
    js = read_judgments(shared_data / "arena" / "judgments" / "arena-hard-v0.1")
    assert {j.judge for j in js} == {"gemini-1.5-pro-api-preview", "gpt-3.5-turbo-0125", "gpt-4-1106-preview"}


def test_v20_answer_and_judgment(tmp_path):
    ans = _write(tmp_path / "m.jsonl", [json.dumps({
        "uid": "u1", "ans_id": "x", "model": "m", "tstamp": 1.0,
        "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": {"answer": "hi"}}],
        "metadata": {"token_len": 1},
    })])
    a = read_answers(ans)["m"]["u1"]
    assert a.text == "hi" and a.token_len == 1
    jd = tmp_path / "judge"
    jd.mkdir()
    _write(jd / "m.jsonl", [json.dumps({
        "uid": "u1", "category": "hard_prompt", "judge": "j", "model": "m", "baseline": "b",
        "games": [{"score": "A>B", "judgment": {"answer": "[[A>B]]"}, "prompt": [{"role": "user", "content": "x"}]}, None],
    })])
    [j] = read_judgments(tmp_path / "judge")
    assert j.baseline == "b" and j.games[0].score == "A>B" and j.games[1].status == "failed"


def test_unknown_verdict_in_judgment_file(tmp_path):
    _write(tmp_path / "m.jsonl", [json.dumps({"question_id": "q", "model": "m", "judge": "j", "games": [{"user_prompt": "", "judgment": "", "score": "A>>>B"}]})])
    with pytest.raises(InputError) as e:
        read_judgments(tmp_path)
    assert e.value.field == "games[0].score" and e.value.line == 1


def test_appender_repairs_a_torn_tail(tmp_path):
    p = tmp_path / "out.jsonl"
    p.write_text('{"a": 1}\n{"a": 2}\n{"a": 3, "tr', encoding="utf-8")
    with JsonlAppender(p) as w:
        assert w.repaired
        w.append({"a": 4})
    assert [r["a"] for _, r in read_jsonl(p)] == [1, 2, 4]


def test_gzip_and_unreadable(tmp_path):
    p = tmp_path / "q.jsonl.gz"
    with gzip.open(p, "wt", encoding="utf-8") as fh:
        fh.write('{"question_id": "a", "prompt": "x"}\n')
    assert read_questions(p)[0].prompt == "x"
    with pytest.raises(InputError, match="cannot open"):
        read_questions(tmp_path / "missing.jsonl")


# --------------------------------------------------------------------------- validation and duplicates
@pytest.mark.parametrize("value,kind", [('["a"]', "a list"), ('{"x": 1}', "an object"), ("true", "a boolean"), ("false", "a boolean"), ("2.0", "a float")])
@pytest.mark.parametrize("key", ["question_id", "uid"])
def test_question_ids_of_the_wrong_type(tmp_path, value, kind, key):
    p = _write(tmp_path / "q.jsonl", ['{"question_id": "ok", "prompt": "fine"}', f'{{"{key}": {value}, "prompt": "x"}}'])
    with pytest.raises(InputError) as e:
        read_questions(p)
    assert str(e.value) == f"{p}:line 2: field '{key}': question id must be a string or an integer, got {kind}"


def test_integer_ids_are_read_as_strings_and_must_be_unique(tmp_path):
    p = _write(tmp_path / "q.jsonl", ['{"question_id": 7, "prompt": "a"}', '{"question_id": "8", "prompt": "b"}'])
    assert [q.question_id for q in read_questions(p)] == ["7", "8"]
    p = _write(tmp_path / "q.jsonl", ['{"question_id": 7, "prompt": "a"}', '{"question_id": "x", "prompt": "b"}', '{"question_id": "7", "prompt": "c"}'])
    with pytest.raises(InputError) as e:
        read_questions(p)
    assert str(e.value) == f"{p}:line 3: field 'question_id': duplicate question id '7' (first on line 1)"


def test_empty_inputs_are_errors(tmp_path):
    q = _write(tmp_path / "q.jsonl", ["", "  "])
    with pytest.raises(InputError) as e:
        read_questions(q)
    assert str(e.value) == f"{q}: no questions found"
    a = tmp_path / "answers"
    a.mkdir()
    (a / "m.jsonl").write_text("")
    with pytest.raises(InputError) as e:
        read_answers(a)
    assert str(e.value) == f"{a / 'm.jsonl'}: no answers in this file"
    assert read_answers(a, allow_empty=True) == {"m": {}}
    j = tmp_path / "judgments"
    j.mkdir()
    (j / "m.jsonl").write_text("\n")
    with pytest.raises(InputError) as e:
        read_judgments(j)
    assert str(e.value) == f"{j}: no judgment files (*.jsonl) found"


def test_newest_answer_wins_and_torn_tail_is_left_out(tmp_path):
    rec = lambda qid, text: json.dumps({"question_id": qid, "answer_id": text, "model_id": "m", "choices": [{"index": 0, "turns": [{"content": text}]}]})  # noqa: E731
    p = tmp_path / "m.jsonl"
    body = "\n".join([rec("q1", "old"), rec("q2", "two"), rec("q1", "new")]) + "\n" + rec("q3", "torn")[:30]
    p.write_text(body, encoding="utf-8")
    got = read_answers(p)["m"]
    assert {k: v.text for k, v in got.items()} == {"q1": "new", "q2": "two"}
    assert p.read_text(encoding="utf-8") == body  # reading repaired nothing


def test_judgment_duplicates_newest_wins_and_provenance_round_trips(tmp_path):
    d = tmp_path / "judge"
    d.mkdir()
    base = {"model": "m", "judge": "j", "baseline": "b"}
    g = lambda s: [{"user_prompt": "p", "judgment": f"[[{s}]]", "score": s}] * 2  # noqa: E731
    lines = [json.dumps({"question_id": "q1", **base, "games": g("A>B")}),
             json.dumps({"question_id": "q2", **base, "games": g("A=B")}),
             json.dumps({"question_id": "q1", **base, "games": g("B>A"), "provenance": {"template_version": "t"}, "tstamp": 5.0})]
    _write(d / "m.jsonl", lines)
    js = read_judgments(d)
    assert [(j.question_id, j.games[0].score) for j in js] == [("q1", "B>A"), ("q2", "A=B")]
    assert js[0].provenance == {"template_version": "t"} and js[1].provenance is None
    rec = js[0].to_v01()
    assert rec["provenance"] == {"template_version": "t"} and rec["tstamp"] == 5.0
    # extra fields stay readable by arena-hard tools: the v0.1 keys are all there
    assert {"question_id", "model", "judge", "games"} <= set(rec)
