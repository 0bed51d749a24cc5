"""LiveCodeBench (code_generation_lite, release v5): stdin and LeetCode-style functional
problems graded in the sandbox; 1/8 of the Intelligence Index and half of the Coding Index."""

from __future__ import annotations

import base64
import io
import json
import pickle
import zlib
from typing import TYPE_CHECKING, Any

from arena.errors import InputError
from arena.index.datasets import EvalItem, get_field
from arena.index.graders.code import extract_code, grade_lcb
from arena.index.prompts import Prompt, combined_version
from arena.index.tasks.base import EvalTask, GradeContext, Sample, Score
from arena.prompts import load_template

if TYPE_CHECKING:
    from arena.index.runner import EvalSpec


class _PlainUnpickler(pickle.Unpickler):
    """Unpickles plain data only: the published private tests are a pickled ``str``, which
    needs no global. Any global (``os.system``, ``builtins.eval``...) is how a crafted pickle
    runs code, so every lookup is refused."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refused global {module}.{name}")


def decode_lcb_tests(raw: Any, where: tuple[str, int] = ("<row>", 0), field: str = "private_test_cases") -> list[dict]:
    """LiveCodeBench test lists: JSON text, or (private tests) base64 -> zlib -> pickle -> JSON
    as published in ``code_generation_lite``. Dataset files are untrusted, so the pickle is
    read with :class:`_PlainUnpickler`: a payload that is not plain data is an input error."""
    if isinstance(raw, list):
        return raw
    if not raw:
        return []
    if not isinstance(raw, str):
        raise InputError(f"expected a string, got {type(raw).__name__}", path=where[0], line=where[1], field=field)
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        pass
    try:
        blob = zlib.decompress(base64.b64decode(raw.encode("utf-8"), validate=True))
        text = _PlainUnpickler(io.BytesIO(blob)).load()
        if not isinstance(text, (str, bytes)):
            raise pickle.UnpicklingError(f"expected a pickled JSON string, got {type(text).__name__}")
        tests = json.loads(text)
    except pickle.UnpicklingError as exc:
        raise InputError(f"unsafe or invalid pickle ({exc})", path=where[0], line=where[1], field=field) from None
    except (ValueError, zlib.error, EOFError, TypeError) as exc:  # binascii.Error is a ValueError
        raise InputError(f"not JSON or base64/zlib/pickled JSON ({type(exc).__name__})", path=where[0], line=where[1], field=field) from None
    if not isinstance(tests, list) or not all(isinstance(t, dict) for t in tests):
        raise InputError("expected a list of test objects", path=where[0], line=where[1], field=field)
    return tests


class LiveCodeBench(EvalTask):
    name = "livecodebench"
    default_repeats = 3
    indices = {"Intelligence Index": 1 / 8, "Coding Index": 1 / 2}
    hub = {"path": "livecodebench/code_generation_lite", "split": "test", "version_tag": "release_v5"}
    id_field = "question_id"

    def row_to_samples(self, row, where, spec, language):
        public = decode_lcb_tests(row.get("public_test_cases"), where, "public_test_cases")
        private = decode_lcb_tests(row.get("private_test_cases"), where, "private_test_cases")
        meta = row.get("metadata") or "{}"
        try:
            meta = json.loads(meta) if isinstance(meta, str) else dict(meta)
        except (json.JSONDecodeError, TypeError, ValueError):
            raise InputError("expected a JSON object", path=where[0], line=where[1], field="metadata") from None
        tests = public + private
        if not tests:
            raise InputError("no test cases", path=where[0], line=where[1], field="public_test_cases")
        testtype = tests[0].get("testtype", "stdin")
        return EvalItem(self.name, str(get_field(row, "question_id", where, (str, int))), get_field(row, "question_content", where, (str,)), "",
                        meta={"starter_code": row.get("starter_code") or "", "tests": tests, "testtype": testtype,
                              "fn_name": meta.get("func_name"), "difficulty": row.get("difficulty", "")})

    def prompt(self, sample: Sample, *, reasoning_model: bool, repeat: int, seed: int) -> Prompt:
        system = load_template("index_lcb_system")
        starter = sample.meta.get("starter_code") or ""
        if starter:
            tpl = load_template("index_lcb_starter")
            user = tpl.format(question=sample.question, starter_code=starter)
        else:
            tpl = load_template("index_lcb_stdin")
            user = tpl.format(question=sample.question)
        return Prompt([{"role": "system", "content": system.text}, {"role": "user", "content": user}], combined_version(system, tpl), "")

    async def score(self, sample: Sample, prompt: Prompt, text: str, spec: "EvalSpec", ctx: GradeContext) -> Score:
        code = extract_code(text)
        if code is None:
            return Score(False, None, "no_code", "unanswered")
        s = await ctx.run_code(lambda: grade_lcb(ctx.sandbox, code, sample.meta["tests"], testtype=sample.meta["testtype"],
                                                 fn_name=sample.meta.get("fn_name"), tag=sample.item_id))
        return Score(s.correct, code, s.method, s.status, s.extra)


TASK = LiveCodeBench()
