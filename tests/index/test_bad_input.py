"""Bad input to `arena index run` / `arena index show`: one line naming the file, line and
field (or config key), exit code 2, no traceback, and nothing already written is lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from arena.index.cli import app

GOOD_MATH = '{"unique_id": "a", "problem": "1+1", "answer": "2"}\n'


def _base(tmp_path: Path, evals: dict | None = None) -> dict:
    return {"endpoints": {"m": {"model": "model-m", "base_url": "http://127.0.0.1:9/v1"}}, "model": "m",
            "output": str(tmp_path / "out"), "cache": str(tmp_path / "cache.sqlite"),
            "evals": evals if evals is not None else {"math500": {"source": "math.jsonl"}}}


# (id, config file content: a dict (YAML-dumped) or raw bytes, expected message after "<config path>")
CONFIG_CASES = [
    ("empty", b"", ": the file is empty, expected a mapping of settings"),
    ("binary", b"\x00\x01\x02PK\x03\x04", ": not a text file (control character 0x00 at character 0)"),
    ("invalid-utf8", b"model: m\xff\xfe\n", ": not valid UTF-8 text (invalid start byte at byte 8)"),
    ("not-a-mapping", b"- a\n- b\n", ": expected a mapping at the top level"),
    ("unknown-key", {"modle": "m"}, ": field 'modle': unknown key (did you mean 'model'?)"),
    ("unknown-eval", {"evals": {"mmlu_pr": {}}}, ": field 'evals.mmlu_pr': unknown eval (did you mean 'mmlu_pro'?)"),
    ("eval-key-typo", {"evals": {"math500": {"source": "math.jsonl", "repeat": 2}}},
     ": field 'evals.math500.repeat': not a key of eval 'math500' (did you mean 'repeats'?)"),
    ("option-of-other-eval", {"evals": {"math500": {"source": "math.jsonl", "languages": ["en"]}}},
     ": field 'evals.math500.languages': not a key of eval 'math500'"),
    ("repeats-wrong-type", {"evals": {"math500": {"source": "math.jsonl", "repeats": "three"}}},
     ": field 'evals.math500.repeats': Input should be a valid integer, unable to parse string as an integer"),
    ("repeats-zero", {"evals": {"math500": {"source": "math.jsonl", "repeats": 0}}},
     ": field 'evals.math500.repeats': Input should be greater than 0"),
    ("limit-negative", {"evals": {"math500": {"source": "math.jsonl", "limit": -1}}},
     ": field 'evals.math500.limit': Input should be greater than 0"),
    ("evals-list", {"evals": ["math500"]}, ": field 'evals': Input should be a valid dictionary"),
    ("evals-empty", {"evals": {}}, ": field 'evals': no evals configured"),
    ("model-missing", {"model": None}, ": field 'model': Field required"),
    ("model-unknown", {"model": "mm"}, ": field 'model': unknown endpoint 'mm' (did you mean 'm'?)"),
    ("max-tokens-wrong-type", {"max_tokens": [1]}, ": field 'max_tokens': Input should be a valid integer"),
    ("unknown-language", {"evals": {"mgsm": {"source": "m_{lang}.tsv", "languages": ["en", "de", "pt"]}}},
     ": field 'evals.mgsm.languages': unknown language 'pt'; known: en, bn, de, es, fr, ja, ru, sw, te, th, zh"),
    ("bad-fallback-regex", {"evals": {"gpqa_diamond": {"fallbacks": ["answer_is", "(unclosed"]}}},
     ": field 'evals.gpqa_diamond.fallbacks': '(unclosed' is neither a named fallback (answer_is, answer_is_loose, "
     "multilingual_answer, last_line_letter) nor a regex (missing ), unterminated subpattern at position 0)"),
    ("source-missing", {"evals": {"math500": {"source": "nope.jsonl"}}},
     ": field 'evals.math500.source': no such file or directory: {tmp}/nope.jsonl"),
]


def _one_line(res) -> str:
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1, res.output
    assert "Traceback" not in res.output
    return lines[0]


@pytest.mark.parametrize("content,expected", [c[1:] for c in CONFIG_CASES], ids=[c[0] for c in CONFIG_CASES])
def test_bad_config(tmp_path, content, expected):
    (tmp_path / "math.jsonl").write_text(GOOD_MATH)
    path = tmp_path / "index.yaml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        cfg = _base(tmp_path)
        for k, v in content.items():
            if v is None:
                cfg.pop(k)
            else:
                cfg[k] = v
        path.write_text(yaml.safe_dump(cfg))
    res = CliRunner().invoke(app, ["run", "--config", str(path), "--dry-run"])
    assert res.exit_code == 2, res.output
    assert _one_line(res) == f"error: {path}" + expected.replace("{tmp}", str(tmp_path))


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_unreadable_config(tmp_path, kind):
    path = tmp_path / "index.yaml"
    if kind == "directory":
        path.mkdir()
    res = CliRunner().invoke(app, ["run", "--config", str(path), "--dry-run"])
    assert res.exit_code == 2
    reason = "no such file" if kind == "missing" else "is a directory, expected a file"
    assert _one_line(res) == f"error: {path}: {reason}"


# (id, eval, file name, content, expected message after "<data path>")
DATA_CASES = [
    ("empty", "math500", "math.jsonl", b"", ": no math500 samples"),
    ("binary", "math500", "math.jsonl", b"\x89PNG\r\n\x1a\n\x00\x00\xff", ": not valid UTF-8 text (invalid start byte)"),
    ("malformed-line", "math500", "math.jsonl", (GOOD_MATH + '{"unique_id": "b", "problem": \n').encode(),
     ":line 2: malformed JSON (Expecting value at column 31)"),
    ("json-array", "math500", "math.jsonl", ("[" + GOOD_MATH.strip() + "]\n").encode(), ":line 1: expected a JSON object, got list"),
    ("missing-field", "math500", "math.jsonl", b'{"unique_id": "a", "problem": "1+1"}\n', ":line 1: field 'answer': missing field"),
    ("wrong-type", "math500", "math.jsonl", b'{"unique_id": "a", "problem": ["1+1"], "answer": "2"}\n',
     ":line 1: field 'problem': expected a string, got list"),
    ("answer-wrong-type", "math500", "math.jsonl", b'{"unique_id": "a", "problem": "1+1", "answer": {"v": 2}}\n',
     ":line 1: field 'answer': expected a string or an integer or a number, got dict"),
    ("duplicate-id", "math500", "math.jsonl", (GOOD_MATH * 2).encode(),
     ":line 2: field 'unique_id': duplicate id 'a' (first on line 1)"),
    ("mc-missing-column", "gpqa_diamond", "gpqa.csv", b"Question,Correct Answer,Incorrect Answer 1,Incorrect Answer 2\nq,a,b,c\n",
     ":line 2: field 'Incorrect Answer 3': missing field"),
    ("hle-bad-answer-type", "hle", "hle.jsonl", b'{"id": "h", "question": "q", "answer": "a", "answer_type": "essay"}\n',
     ":line 1: field 'answer_type': unknown answer_type 'essay'"),
    ("lcb-tests-not-json", "livecodebench", "lcb.jsonl",
     b'{"question_id": "q", "question_content": "x", "public_test_cases": "not json", "private_test_cases": ""}\n',
     ":line 1: field 'public_test_cases': not JSON or base64/zlib/pickled JSON (Error)"),
    ("mgsm-columns", "mgsm", "mgsm_en.tsv", b"q1\t1\nq2 without a tab\n", ":line 2: expected 2 tab-separated columns, got 1"),
]


@pytest.mark.parametrize("name,fname,content,expected", [c[1:] for c in DATA_CASES], ids=[c[0] for c in DATA_CASES])
def test_bad_dataset_file(tmp_path, name, fname, content, expected):
    data = tmp_path / fname
    data.write_bytes(content)
    path = tmp_path / "index.yaml"
    ev = {"source": fname, **({"languages": ["en"]} if name == "mgsm" else {})}
    path.write_text(yaml.safe_dump(_base(tmp_path, {name: ev})))
    res = CliRunner().invoke(app, ["run", "--config", str(path), "--dry-run"])
    assert res.exit_code == 2, res.output
    assert _one_line(res) == f"error: {data}" + expected


def test_bad_dataset_loses_no_records(tmp_path):
    """A later eval's bad file stops the run with one line; records of the evals before it stay."""
    out = tmp_path / "out" / "m"
    out.mkdir(parents=True)
    done = out / "math500.jsonl"
    done.write_text(json.dumps({"eval": "math500", "item_id": "a", "repeat": 0, "status": "ok", "correct": True}) + "\n")
    (tmp_path / "math.jsonl").write_text(GOOD_MATH)
    (tmp_path / "aime.jsonl").write_text("not json\n")
    path = tmp_path / "index.yaml"
    path.write_text(yaml.safe_dump(_base(tmp_path, {"math500": {"source": "math.jsonl", "repeats": 1},
                                                    "aime2024": {"source": "aime.jsonl"}})))
    before = done.read_text()
    res = CliRunner().invoke(app, ["run", "--config", str(path)])
    assert res.exit_code == 2
    assert _one_line(res) == f"error: {tmp_path / 'aime.jsonl'}:line 1: malformed JSON (Expecting value at column 1)"
    assert done.read_text() == before


# arena index show: (id, records file content or None for no folder, expected message)
SHOW_CASES = [
    ("no-records", None, "error: {out}: no records for model 'm'"),
    ("malformed-record", b'{"item_id": "a", "repeat": 0}\n{oops}\n', "error: {file}:line 2: malformed JSON (Expecting property name enclosed in double quotes at column 2)"),
    ("record-missing-field", b'{"item_id": "a"}\n', "error: {file}:line 1: field 'repeat': missing field"),
    ("record-not-object", b'[1, 2]\n', "error: {file}:line 1: expected a JSON object, got list"),
    ("record-invalid-utf8", b'{"item_id": "\xff"}\n', "error: {file}: not valid UTF-8 text (invalid start byte)"),
]


@pytest.mark.parametrize("content,expected", [c[1:] for c in SHOW_CASES], ids=[c[0] for c in SHOW_CASES])
def test_bad_records_for_show(tmp_path, content, expected):
    out = tmp_path / "out"
    file = out / "m" / "math500.jsonl"
    if content is not None:
        file.parent.mkdir(parents=True)
        file.write_bytes(content)
    res = CliRunner().invoke(app, ["show", "--output", str(out), "--model", "m"])
    assert res.exit_code == 2, res.output
    assert _one_line(res) == expected.format(out=out, file=file)
