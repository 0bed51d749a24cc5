"""Bad input at every CLI entry point: one line on stderr naming file, line and field, exit 2.

Each cell runs the command in-process (typer's CliRunner) and asserts the exit code, that stderr
is exactly one non-empty line with the expected message, and that no traceback escaped. Cells
that are accepted on purpose say why. Validation happens before any LLM call: `answers` and
`judge` run with --dry-run against an endpoint nobody listens on. The index entry points are
covered by the index suite's own tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from arena.cli import app as arena
from benchbuilder.cli import app as bb

runner = CliRunner()
DEAD = "http://127.0.0.1:9/v1"  # nothing listens: a call would fail, and none is made


def J(*recs) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in recs).encode()


def Q(i):
    return {"question_id": i, "category": "c", "turns": [{"content": "hi"}]}


def JG(i):
    return {"question_id": i, "model": "m", "judge": "j", "baseline": "b", "games": [{"score": "A>B"}, {"score": "B>A"}]}


def S(m):
    return {"model": m, "score": 50.0, "lower": 40.0, "upper": 60.0}


def A(k):
    return {"source_id": k, "stage": "s", "status": "ok", "criteria": [1], "score": 1}


PROMPT = "Explain how binary search works on a sorted array."

# Content cases shared by every file-reading entry point.
COMMON = {
    "empty": b"",
    "binary": b"\x00\x01\x02\x89PNG\n",
    "invalid_utf8": b'{"question_id": "q1", "x": "\xff\xfe"}\n',
    "malformed_line": b'{"question_id": "q1",\n',
    "json_array": b'[{"question_id": "q1"}]\n',
}
UTF8 = "{p}: not valid UTF-8 text (invalid start byte)"
MALFORMED = "{p}:line 1: malformed JSON (Expecting property name enclosed in double quotes at column 22)"
ARRAY = "{p}:line 1: expected a JSON object, got list"

# entry point -> case -> (content, expected message with {p} for the file, or None = accepted)
MATRIX: dict[str, dict[str, tuple[bytes, str | None]]] = {
    "answers": {
        "empty": (b"", "{p}: no questions found"),
        "binary": (COMMON["binary"], UTF8),
        "invalid_utf8": (COMMON["invalid_utf8"], UTF8),
        "malformed_line": (COMMON["malformed_line"], MALFORMED),
        "json_array": (COMMON["json_array"], ARRAY),
        "missing_field": (J({"category": "c", "turns": [{"content": "x"}]}), "{p}:line 1: field 'question_id': missing question id ('question_id' in v0.1, 'uid' in v2.0)"),
        "wrong_type": (J(Q(["q1"])), "{p}:line 1: field 'question_id': question id must be a string or an integer, got a list"),
        "duplicate_ids": (J(Q("q1"), Q("q1")), "{p}:line 2: field 'question_id': duplicate question id 'q1' (first on line 1)"),
    },
    "show": {
        "empty": (b"", "the judgments hold no games"),
        "binary": (COMMON["binary"], UTF8),
        "invalid_utf8": (COMMON["invalid_utf8"], UTF8),
        "malformed_line": (COMMON["malformed_line"], MALFORMED),
        "json_array": (COMMON["json_array"], ARRAY),
        "missing_field": (J({k: v for k, v in JG("q1").items() if k != "games"}), "{p}:line 1: field 'games': 'games' must be a non-empty list"),
        "wrong_type": (J(JG(["q1"])), "{p}:line 1: field 'question_id': question id must be a string or an integer, got a list"),
        # Deliberate: one record per game, the newest wins (a killed run leaves such pairs).
        "duplicate_ids": (J(JG("q1"), JG("q1")), None),
    },
    "audit benchmark": {
        "empty": (b"", "{p}: no models"),
        "binary": (COMMON["binary"], UTF8),
        "invalid_utf8": (COMMON["invalid_utf8"], UTF8),
        "malformed_line": (COMMON["malformed_line"], MALFORMED),
        "json_array": (COMMON["json_array"], ARRAY),
        "missing_field": (J({"model": "a", "score": 1.0}), "{p}:line 1: field 'lower': missing"),
        "wrong_type": (J(S(["a"]), S("b")), "{p}:line 1: field 'model': missing model name"),
        "duplicate_ids": (J(S("a"), S("a"), S("b")), "{p}:line 2: field 'model': model 'a' already on line 1"),
    },
    "import alpaca-eval": {
        k: (v, "{p}: expected an AlpacaEval annotations .json(.gz) or a .csv(.gz) table") for k, v in COMMON.items()
    },
    "benchbuilder validate": {
        "empty": (b"", "no prompt was annotated by the target and every other annotator"),
        "binary": (COMMON["binary"], UTF8),
        "invalid_utf8": (COMMON["invalid_utf8"], UTF8),
        "malformed_line": (COMMON["malformed_line"], MALFORMED),
        "json_array": (COMMON["json_array"], ARRAY),
        "missing_field": (J({"stage": "s", "status": "ok", "criteria": [1]}), "{p}:line 1: corrupt annotation record: Annotation.__init__() missing 1 required positional argument: 'source_id'"),
        "wrong_type": (J(A(["k"])), "{p}:line 1: field 'source_id': source_id must be a string or an integer, got list"),
        # accepted: an annotation file is an append-only log; a retry appends a newer record for
        # the same prompt and the newest wins (benchbuilder/annotate.py load_annotations)
        "duplicate_ids": (J(A("k"), A("k")), None),
    },
    "benchbuilder ingest": {
        "empty": (b"", "{p}: field 'input.paths': the input holds no prompts; earlier outputs were left as they are"),
        "binary": (COMMON["binary"], UTF8),
        "invalid_utf8": (COMMON["invalid_utf8"], UTF8),
        "malformed_line": (COMMON["malformed_line"], MALFORMED),
        # a line that is not an object has no prompt: counted as a drop; no prompt left is the error
        "json_array": (COMMON["json_array"], "{p}: field 'input.paths': no prompt survived ingestion (1 read, dropped: {{'non_string': 1}}); earlier outputs were left as they are"),
        "missing_field": (J({"id": "a"}), "{p}:line 1: field 'prompt': no prompt field found; map one with fields.prompt or fields.conversation (record has: id)"),
        "wrong_type": (J({"id": ["a"], "prompt": PROMPT}), "{p}:line 1: field 'id': id must be a string or an integer, got a list"),
        "duplicate_ids": (J({"id": "a", "prompt": PROMPT}, {"id": "a", "prompt": "Explain quicksort in detail, with its worst case."}),
                          "{p}:line 2: field 'id': duplicate id 'a' with a different prompt (first on line 1)"),
    },
}

PATH_CASES = {  # entry point -> (missing path message, directory message)
    "answers": ("{p}: cannot open: No such file or directory", "{p}: is a directory, expected a file"),
    "show": ("{p}: no such file or directory", "{p}: no judgment files (*.jsonl) found"),
    "audit benchmark": ("{p}: cannot open: No such file or directory", "{p}: is a directory, expected a file"),
    "audit judges": ("{p}: no such file or directory", "{p}: no judgment files (*.jsonl) found"),
    "import alpaca-eval": ("{p}: no such file", "{p}: expected an AlpacaEval annotations .json(.gz) or a .csv(.gz) table"),
    "benchbuilder validate": ("{p}: no such file", "{p}: is a directory, expected a file"),
    "benchbuilder ingest": ("{p}: file not found", "{p}: cannot load Hugging Face dataset: The directory at {p} doesn't contain any data files"),
}


def invoke(entry: str, p: Path, tmp: Path):
    """Run `entry` on input file `p`; returns the CliRunner result."""
    if entry in ("answers", "judge"):
        cfg = tmp / "run.yaml"
        cfg.write_text(yaml.safe_dump({"questions": str(p), "output_dir": str(tmp / "out"), "endpoints": {"m": {"model": "m", "base_url": DEAD}, "j": {"model": "j", "base_url": DEAD}},
                                       "answers": {"models": ["m"]}, "judge": {"endpoint": "j", "baseline": "m", "models": ["m"]}}))
        return runner.invoke(arena, [entry, "-c", str(cfg), "--dry-run"])
    if entry == "show":
        return runner.invoke(arena, ["show", "-j", str(p), "-b", "b"])
    if entry == "audit judges":
        return runner.invoke(arena, ["audit", "judges", "--judgments", str(p)])
    if entry == "audit benchmark":
        ref = tmp / "ref.csv"
        ref.write_text("model,rating,lower,upper\na,1000,990,1010\nb,1100,1090,1110\n")
        return runner.invoke(arena, ["audit", "benchmark", "--scores", str(p), "--reference", str(ref)])
    if entry == "import alpaca-eval":
        return runner.invoke(arena, ["import", "alpaca-eval", str(p), "--output", str(tmp / "imported")])
    if entry == "benchbuilder validate":
        return runner.invoke(bb, ["validate", "--target", str(p), "--other", str(p)])
    if entry == "benchbuilder ingest":
        cfg = tmp / "curate.yaml"
        cfg.write_text(yaml.safe_dump({"output": str(tmp / "bout"), "input": {"paths": [str(p)]}}))
        return runner.invoke(bb, ["ingest", "-c", str(cfg)])
    raise AssertionError(entry)


def assert_one_line(res, expected: str) -> None:
    assert "Traceback" not in res.output and "Traceback" not in res.stderr
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    lines = [l for l in res.stderr.splitlines() if l.strip()]
    assert res.exit_code == 2, res.output
    assert lines == ["error: " + expected], res.stderr


XFAIL_WHY = {
}

CELLS = [(e, c) for e, cases in MATRIX.items() for c in cases]


@pytest.mark.parametrize("entry,case", CELLS, ids=[f"{e}-{c}" for e, c in CELLS])
def test_bad_file(entry, case, tmp_path, request):
    content, expected = MATRIX[entry][case]
    if expected == "XFAIL":
        request.applymarker(pytest.mark.xfail(strict=True, reason=XFAIL_WHY[(entry, case)]))
    p = tmp_path / f"{case}.jsonl"
    p.write_bytes(content)
    res = invoke(entry, p, tmp_path)
    if expected is None:
        assert res.exit_code == 0, res.output
        return
    if expected == "XFAIL":
        expected = "<a one-line error>"
    assert_one_line(res, expected.format(p=p))


@pytest.mark.parametrize("entry", list(PATH_CASES))
@pytest.mark.parametrize("case", ["missing_path", "directory"])
def test_bad_path(entry, case, tmp_path):
    p = tmp_path / "nope.jsonl"
    if case == "directory":
        p = tmp_path / "adir"
        p.mkdir()
    missing, directory = PATH_CASES[entry]
    res = invoke(entry, p, tmp_path)
    assert_one_line(res, (missing if case == "missing_path" else directory).format(p=p))


# --- configs -------------------------------------------------------------------------------

RUN = {"questions": "q.jsonl", "output_dir": "out", "endpoints": {"m": {"model": "m", "base_url": DEAD}}, "answers": {"models": ["m"]}}
CURATE = {"output": "bout", "input": {"paths": ["p.jsonl"]}}


def _ep(**kw):
    return {"m": {"model": "m", "base_url": DEAD, **kw}}


CONFIG_CASES = {
    # case -> (arena run config, its message; curation config, its message); bytes are written raw
    "typo": ({**RUN, "judeg": {}}, "{p}: field 'judeg': unknown key; did you mean 'judge'?",
             {**CURATE, "inptu": {}}, "{p}: field 'inptu': unknown key; did you mean 'input'?"),
    "unknown_nested_key": ({**RUN, "endpoints": _ep(max_concurency=3)}, "{p}: field 'endpoints.m.max_concurency': unknown key; did you mean 'max_concurrency'?",
                           {**CURATE, "clustering": {"min_clsuter_size": 3}},
                           "{p}: field 'clustering.min_clsuter_size': unknown key (valid: reducer, hdbscan, outlier_strategy, fit_sample, labeller, label_endpoint, seed, keywords, categories)"),
    "zero_concurrency": ({**RUN, "endpoints": _ep(max_concurrency=0)}, "{p}: field 'endpoints.m.max_concurrency': Input should be greater than or equal to 1",
                         {**CURATE, "endpoints": _ep(max_concurrency=0)}, "{p}: field 'endpoints.m.max_concurrency': Input should be greater than or equal to 1"),
    "negative_rpm": ({**RUN, "endpoints": _ep(rpm=-5)}, "{p}: field 'endpoints.m.rpm': Input should be greater than 0",
                     {**CURATE, "endpoints": _ep(rpm=-5)}, "{p}: field 'endpoints.m.rpm': Input should be greater than 0"),
    "negative_timeout": ({**RUN, "endpoints": _ep(timeout=-1)}, "{p}: field 'endpoints.m.timeout': Input should be greater than 0",
                         {**CURATE, "endpoints": _ep(timeout=-1)}, "{p}: field 'endpoints.m.timeout': Input should be greater than 0"),
    "binary": (b"\x00\x01\x02", "{p}: not a text file (control character 0x00 at character 0)",
               b"\x00\x01\x02", "{p}: not a text file (control character 0x00 at character 0)"),
    "invalid_utf8": (b"output_dir: \xff\n", "{p}: not valid UTF-8 text (invalid start byte at byte 12)",
                     b"output: \xff\n", "{p}: not valid UTF-8 text (invalid start byte at byte 8)"),
    "empty": (b"", "{p}: the file is empty, expected a mapping of settings",
              b"", "{p}: the file is empty, expected a mapping of settings"),
    "missing": (None, "{p}: no such file", None, "{p}: no such file"),
    "directory": ("DIR", "{p}: is a directory, expected a file", "DIR", "{p}: is a directory, expected a file"),
}

CONFIG_ENTRIES = {  # the config is read first, so every command of a CLI shares these answers
    "arena answers": (0, lambda c: runner.invoke(arena, ["answers", "-c", str(c), "--dry-run"])),
    "arena judge": (0, lambda c: runner.invoke(arena, ["judge", "-c", str(c), "--dry-run"])),
    "arena run": (0, lambda c: runner.invoke(arena, ["run", "-c", str(c), "--dry-run"])),
    "benchbuilder ingest": (1, lambda c: runner.invoke(bb, ["ingest", "-c", str(c)])),
    "benchbuilder select": (1, lambda c: runner.invoke(bb, ["select", "-c", str(c)])),
    "benchbuilder annotate": (1, lambda c: runner.invoke(bb, ["annotate", "-c", str(c)])),
    "benchbuilder build": (1, lambda c: runner.invoke(bb, ["build", "-c", str(c)])),
}


@pytest.mark.parametrize("entry", list(CONFIG_ENTRIES))
@pytest.mark.parametrize("case", list(CONFIG_CASES))
def test_bad_config(entry, case, tmp_path):
    which, call = CONFIG_ENTRIES[entry]
    content, expected = CONFIG_CASES[case][2 * which], CONFIG_CASES[case][2 * which + 1]
    c = tmp_path / "config.yaml"
    if content == "DIR":
        c.mkdir()
    elif isinstance(content, bytes):
        c.write_bytes(content)
    elif content is not None:
        c.write_text(yaml.safe_dump(content))
    assert_one_line(call(c), expected.format(p=c))


def test_select_without_annotations(tmp_path):
    """`select` when annotation stages are configured but annotate never ran: an error, not an
    unscored selection."""
    out = tmp_path / "bout"
    out.mkdir()
    (out / "prompts.jsonl").write_text(json.dumps({"source_id": "a", "prompt": PROMPT, "source": "s", "line": 1, "n_turns": 1}) + "\n")
    (out / "clusters.jsonl").write_text(json.dumps({"source_id": "a", "cluster": 0}) + "\n")
    (out / "topics.json").write_text(json.dumps({"labels": {"0": "t"}}))
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({**CURATE, "output": str(out), "endpoints": _ep(), "annotation": {"stages": [{"name": "s1", "endpoint": "m"}]}}))
    res = runner.invoke(bb, ["select", "-c", str(cfg)])
    assert_one_line(res, f"{out / 'annotation.json'}: no annotation results: run the annotate stage first")
    assert not (out / "question.jsonl").exists()


def test_huge_model_name_does_not_hang(tmp_path):
    """A 200k-character model name (it once took rich minutes): one subprocess, a time limit."""
    name = "m" * 200_000
    scores = tmp_path / "s.jsonl"
    scores.write_bytes(J(S(name), S("a"), S("b")))
    ref = tmp_path / "ref.csv"
    ref.write_text("model,rating,lower,upper\na,1000,990,1010\nb,1100,1090,1110\n")
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "arena.cli", "audit", "benchmark", "--scores", str(scores), "--reference", str(ref)],
                         capture_output=True, text=True, timeout=120)
    assert time.monotonic() - t0 < 60
    assert res.returncode == 0, res.stderr
    assert "unmatched benchmark models (1): " + "m" * 100 in res.stdout.replace("\n", "")
    assert len(res.stdout) < 20_000  # the name was clipped, not printed whole


def test_very_large_record_is_accepted(tmp_path):
    """Deliberate acceptance: a 50 MB line is valid data (a long prompt); the reader has no line
    limit, and the dry run counts its tokens (4 characters a token) instead of failing."""
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps(Q("q1") | {"turns": [{"content": "y" * 50_000_000}]}) + "\n")
    res = invoke("answers", q, tmp_path)
    assert res.exit_code == 0, res.output
    assert "12500004" in res.stdout and "1 calls" in res.stdout


@pytest.mark.parametrize("port", [0, -1, 70000])
def test_serve_local_bad_port(port):
    """Checked before the model is loaded."""
    res = runner.invoke(arena, ["serve-local", "--port", str(port)])
    assert_one_line(res, f"field '--port': port must be between 1 and 65535, got {port}")
