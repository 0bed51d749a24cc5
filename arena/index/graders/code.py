"""Code grading: extract the program from a response and grade it on positive evidence.

Extraction uses the methodology's regex (the first fenced ``python`` block).

Grading never trusts the graded process. The solution runs alone in a sandboxed process
(:class:`arena.index.sandbox.Sandbox`) that is given the test *inputs* only; the expected
outputs never enter its memory, files, argv, environment or stack. It sends back what it
produced, one record per test, as plain data (:data:`WIRE_SOURCE`: ``None``/bool/int/float/
str/bytes/list/tuple/dict/set/complex and numeric numpy arrays, tagged JSON); the grader
decodes plain types only and compares them itself, with strict, type-aware equality. A test
passes only on a record of its returned value; exit status, stdout markers and stderr text
never decide anything, so ``os._exit(0)``, ``sys.exit`` at import, ``atexit``, patched
``print``/``json``, objects whose ``__eq__`` is always true and hunting for the expected
values all simply fail.

* LiveCodeBench stdin: the solution process forks one child per test with the input on its
  stdin; the child's stdout is captured and compared by the grader (stripped lines, as
  LiveCodeBench does).
* LiveCodeBench functional: the solution process calls ``Solution().fn(*args)`` per test and
  returns the values; the grader compares them to the JSON-decoded expected outputs.
* HumanEval and SciCode: the tests are code (``check(candidate)``, ``assert
  np.allclose(fn(...), target)``), so they run in a second sandboxed *harness* process (the
  dataset's test code is untrusted too) under a uid of its own, where ``candidate`` and the
  step's functions are proxies: each call is relayed by the grader to the solution process
  and the plain result comes back. The harness reports each test case and a verdict on a
  private channel with a nonce the solution never sees.
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import select
import threading
from dataclasses import dataclass, field
from typing import Any

from arena.index.sandbox import Sandbox, SandboxJob, SandboxResult

CODE_PATTERN = re.compile(r"(?<=```python\n)((?:\n|.)+?)(?=\n```)")


def extract_code(response: str | None) -> str | None:
    """The first ```python fenced block (methodology regex); ``None`` when there is none."""
    if not response:
        return None
    m = CODE_PATTERN.search(response)
    return m.group(1) if m else None


def humaneval_program(prompt: str, completion: str, test: str, entry_point: str) -> str:
    """HumanEval's own execution layout: prompt + completion + test + ``check(entry)``.
    Kept as the bench's reference (bare subprocess); grading goes through :func:`grade_humaneval`."""
    return f"{prompt}{completion}\n\n{test}\n\ncheck({entry_point})\n"


# --------------------------------------------------------------------------- wire format
# Plain data between processes. Shipped verbatim into the sandboxed processes (which have
# only the standard library, plus numpy where the task imports it) and exec'd here once, so
# both ends share one definition. Only exact built-in types are encoded (a subclass of int
# or list with a rigged __eq__ is refused), and decoding builds only those types.
WIRE_SOURCE = r'''
import json as _json, math as _math, sys as _sys

_MAX_DEPTH = 100
_NP_KINDS = "biufc"


def wire_encode(v, _d=0):
    if _d > _MAX_DEPTH:
        raise TypeError("value nested too deeply")
    t = type(v)
    if v is None or t is bool or t is str:
        return v
    if t is int:
        return v if -(2 ** 53) < v < 2 ** 53 else {"$": "int", "v": str(v)}
    if t is float:
        return {"$": "float", "v": repr(v)}
    if t is list:
        return [wire_encode(x, _d + 1) for x in v]
    if t is tuple:
        return {"$": "tuple", "v": [wire_encode(x, _d + 1) for x in v]}
    if t is dict:
        return {"$": "dict", "v": [[wire_encode(k, _d + 1), wire_encode(x, _d + 1)] for k, x in v.items()]}
    if t is set or t is frozenset:
        return {"$": t.__name__, "v": [wire_encode(x, _d + 1) for x in v]}
    if t is complex:
        return {"$": "complex", "v": [repr(v.real), repr(v.imag)]}
    if t is bytes:
        return {"$": "bytes", "v": v.hex()}
    np = _sys.modules.get("numpy")
    if np is not None and (t is np.ndarray or isinstance(v, np.generic)) and t.__module__ == "numpy":
        arr = np.asarray(v)
        if arr.dtype.kind not in _NP_KINDS:
            raise TypeError(f"numpy dtype {arr.dtype} is not plain data")
        flat = arr.ravel().tolist()
        return {"$": "ndarray" if t is np.ndarray else "npscalar", "dtype": arr.dtype.str, "shape": list(arr.shape),
                "v": [wire_encode(x, _d + 1) for x in flat]}
    raise TypeError(f"{t.__module__}.{t.__qualname__} is not plain data")


def _num(s):
    if type(s) is not str or len(s) > 64:
        raise ValueError("bad number")
    return float(s)


def wire_decode(v, _d=0):
    if _d > _MAX_DEPTH:
        raise ValueError("value nested too deeply")
    t = type(v)
    if v is None or t is bool or t is str or t is int:
        return v
    if t is float:  # the encoder never emits bare floats
        raise ValueError("bare float")
    if t is list:
        return [wire_decode(x, _d + 1) for x in v]
    if t is not dict or type(v.get("$")) is not str:
        raise ValueError("not wire data")
    tag, x = v["$"], v.get("v")
    if tag == "int" and type(x) is str and len(x) <= 5000:
        return int(x)
    if tag == "float":
        return _num(x)
    if tag == "complex" and type(x) is list and len(x) == 2:
        return complex(_num(x[0]), _num(x[1]))
    if tag == "bytes" and type(x) is str:
        return bytes.fromhex(x)
    if type(x) is not list:
        raise ValueError(f"bad {tag!r}")
    if tag == "tuple":
        return tuple(wire_decode(i, _d + 1) for i in x)
    if tag == "dict":
        out = {}
        for pair in x:
            if type(pair) is not list or len(pair) != 2:
                raise ValueError("bad dict item")
            out[wire_decode(pair[0], _d + 1)] = wire_decode(pair[1], _d + 1)
        return out
    if tag == "set":
        return {wire_decode(i, _d + 1) for i in x}
    if tag == "frozenset":
        return frozenset(wire_decode(i, _d + 1) for i in x)
    if tag in ("ndarray", "npscalar"):
        import numpy as np
        dt = np.dtype(v.get("dtype"))
        shape = v.get("shape")
        if dt.kind not in _NP_KINDS or type(shape) is not list or not all(type(n) is int and n >= 0 for n in shape):
            raise ValueError("bad ndarray")
        arr = np.array([wire_decode(i, _d + 1) for i in x], dtype=dt)
        if arr.size != _math.prod(shape):
            raise ValueError("bad ndarray shape")
        arr = arr.reshape(shape)
        return arr if tag == "ndarray" else arr[()]
    raise ValueError(f"unknown wire tag {tag!r}")


def wire_dumps(v):
    return _json.dumps(v, allow_nan=False, separators=(",", ":"))
'''
_wire: dict[str, Any] = {}
exec(compile(WIRE_SOURCE, "<wire>", "exec"), _wire)  # noqa: S102 - our own constant source
wire_encode = _wire["wire_encode"]
wire_decode = _wire["wire_decode"]
MAX_MESSAGE_BYTES = 32 * 1024**2


def strict_equal(got: Any, expected: Any, *, rel_tol: float | None = None, nan_equal: bool = False) -> bool:
    """Equality on plain decoded data that Python's ``==`` gets too loose for grading:
    a bool equals only a bool (``True != 1``), containers must have the same type and
    length, numbers compare exactly unless ``rel_tol`` is given, and NaN equals NaN only
    with ``nan_equal``."""
    tg, te = type(got), type(expected)
    if tg is bool or te is bool:
        return tg is te and got == expected
    if tg in (int, float) and te in (int, float):
        if isinstance(got, float) and math.isnan(got) or isinstance(expected, float) and math.isnan(expected):
            return nan_equal and isinstance(got, float) and isinstance(expected, float) and math.isnan(got) and math.isnan(expected)
        if rel_tol is not None:
            return math.isclose(got, expected, rel_tol=rel_tol)
        return got == expected
    if tg is not te:
        return False
    if tg in (list, tuple):
        return len(got) == len(expected) and all(strict_equal(a, b, rel_tol=rel_tol, nan_equal=nan_equal) for a, b in zip(got, expected))
    if tg is dict:
        return got.keys() == expected.keys() and all(strict_equal(got[k], expected[k], rel_tol=rel_tol, nan_equal=nan_equal) for k in got)
    if tg in (str, bytes, type(None), complex, set, frozenset):
        return got == expected
    return False


@dataclass
class CodeGrade:
    """A graded program. ``passed`` only on a record of the right value for every test.
    ``status``: passed | wrong_answer | runtime_error | no_evidence | timeout | cpu_limit |
    memory_limit | file_limit | killed | setup_error | not_gradable. Shaped like
    :class:`SandboxResult` where the runner reads it (``passed``, ``status``, ``stderr``)."""

    status: str
    tests_total: int
    tests_passed: int
    detail: str = ""
    stderr: str = ""
    runs: list[dict] = field(default_factory=list)
    tag: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def to_dict(self) -> dict:
        return {"status": self.status, "tests_total": self.tests_total, "tests_passed": self.tests_passed,
                "detail": self.detail, "stderr": self.stderr[-2000:], "runs": self.runs}


def _run_summary(res: SandboxResult, role: str) -> dict:
    return {"role": role, "status": res.status, "exit": res.returncode, "signal": res.signal,
            "wall_seconds": round(res.wall_seconds, 3), "isolation": res.isolation, "stderr_tail": res.stderr[-300:]}


def _failure_status(res: SandboxResult, fallback: str) -> str:
    """Why a run without full evidence failed: a limit the sandbox saw, else ``fallback``."""
    return res.status if res.status in {"timeout", "cpu_limit", "memory_limit", "file_limit", "killed", "setup_error"} else fallback


def _records(stdout: str, nonce: str) -> tuple[dict[int, dict], bool]:
    """Per-test records from the driver's channel: exactly one per index, with the nonce.
    Returns (records, clean); a duplicate or malformed line makes the run unclean."""
    recs: dict[int, dict] = {}
    clean = True
    for line in stdout.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            clean = False
            continue
        if type(msg) is not dict or msg.get("nonce") != nonce or type(msg.get("i")) is not int:
            clean = False
            continue
        if msg["i"] in recs:
            clean = False
        recs[msg["i"]] = msg
    return recs, clean


# --------------------------------------------------------------------------- drivers
# The solution process's main program. It holds test inputs only. Its channel to the grader
# is a private copy of fd 0/1; the solution's own stdin is /dev/null and its prints go to
# stderr, so nothing it prints can pose as a record (and a record still needs the right value).
_SOLUTION_DRIVER = r"""
import builtins as _bi, os as _os, sys as _sys, traceback as _tb
_cin = _os.dup(0)
_cout = _os.dup(1)
_null = _os.open(_os.devnull, _os.O_RDWR)
_os.dup2(_null, 0)
_os.dup2(2, 1)
_os.set_inheritable(_cin, False)
_os.set_inheritable(_cout, False)
_rd = _os.fdopen(_cin, "rb")
_write, _dumps, _loads, _enc, _dec = _os.write, wire_dumps, _json.loads, wire_encode, wire_decode


def _send(obj):
    data = (_dumps(obj) + "\n").encode()
    while data:
        data = data[_write(_cout, data):]


def _exc(e):
    return {"exc": type(e).__name__ if type(e).__module__ == "builtins" else "Exception", "msg": str(e)[:300]}


def _reply(i, nonce, fn, args, kwargs):
    try:
        value = fn(*args, **kwargs)
    except BaseException as e:
        out = _exc(e)
    else:
        try:
            out = {"ok": _enc(value)}
        except BaseException as e:
            out = {"exc": "TypeError", "msg": "returned value is not plain data: " + str(e)[:200]}
    out.update(i=i, nonce=nonce)
    _send(out)


def _load(src, prelude, name):
    g = {"__name__": name, "__builtins__": _bi}
    exec(compile(prelude + src, "solution.py", "exec"), g)
    return g


def _stdin_mode(cfg, src):
    code = compile(src, "solution.py", "exec")
    pid1 = _os.getpid() == 1
    for i, text in enumerate(cfg["inputs"]):
        with open("input.txt", "w", encoding="utf-8") as f:
            f.write(text)
        pid = _os.fork()
        if pid == 0:
            rc = 125
            try:
                _os.setsid()
                _os.close(_cout)
                fd = _os.open("input.txt", _os.O_RDONLY)
                _os.dup2(fd, 0)
                fd = _os.open("output.txt", _os.O_WRONLY | _os.O_CREAT | _os.O_TRUNC, 0o600)
                _os.dup2(fd, 1)
                _sys.stdin = open(0, "r", encoding="utf-8", closefd=False)
                _sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
                _sys.argv = ["solution.py"]
                try:
                    exec(code, {"__name__": "__main__", "__builtins__": _bi})
                    import threading  # as at interpreter exit: wait for non-daemon threads
                    for t in threading.enumerate():
                        if t is not threading.main_thread() and not t.daemon:
                            t.join()
                    rc = 0
                except SystemExit as e:
                    rc = e.code if type(e.code) is int else (0 if e.code is None else 1)
                except MemoryError:
                    rc = 121
                except BaseException:
                    _tb.print_exc()
                    rc = 1
                _sys.stdout.flush()
            finally:
                _os._exit(rc & 0xFF)
        _, status, ru = _os.wait4(pid, 0)
        try:
            _os.killpg(pid, 9)
        except OSError:
            pass
        if pid1:  # the namespace's init: clear whatever the test left running
            try:
                _os.kill(-1, 9)
            except OSError:
                pass
        try:
            with open("output.txt", "rb") as f:
                out = f.read(cfg["max_output"] + 1).decode("utf-8", "replace")
            _os.unlink("output.txt")
        except OSError:
            out = None
        rec = {"i": i, "nonce": cfg["nonce"], "stdout": out, "cpu": ru.ru_utime + ru.ru_stime}
        if _os.WIFSIGNALED(status):
            rec["signal"] = _os.WTERMSIG(status)
        else:
            rec["exit"] = _os.WEXITSTATUS(status)
        _send(rec)


def _calls_mode(cfg, src):
    g = _load(src, cfg["prelude"], "solution")
    fn = g["Solution"]().__getattribute__(cfg["fn"]) if "Solution" in g else g[cfg["fn"]]
    for i, (args, kwargs) in enumerate(cfg["calls"]):
        _reply(i, cfg["nonce"], fn, _dec(args), _dec(kwargs))


def _serve_mode(cfg, src):
    g = _load(src, cfg["prelude"], "__main__")
    # Every callable the solution's namespace holds (its functions, or e.g. an imported
    # function it names as the answer); the harness never lets one shadow its own names.
    names = sorted(k for k, v in g.items() if callable(v) and not k.startswith("__"))
    _send({"ready": True, "names": names})
    while True:
        line = _rd.readline()
        if not line:
            return
        req = _loads(line)
        fn = g.get(req["fn"]) if req["fn"] in names else None
        if fn is None:
            _send({"i": req["i"], "nonce": cfg["nonce"], "exc": "NameError", "msg": req["fn"]})
            continue
        _reply(req["i"], cfg["nonce"], fn, _dec(req["args"]), _dec(req["kwargs"]))


def _main():
    cfg = _loads(_rd.readline())
    with open("solution.py", encoding="utf-8") as f:
        src = f.read()
    {"stdin": _stdin_mode, "calls": _calls_mode, "serve": _serve_mode}[cfg["mode"]](cfg, src)
    _os._exit(0)


_main()
"""

# The harness process's main program (HumanEval / SciCode): runs the dataset's test code
# with the solution's functions replaced by proxies. Its channel: requests and reports on
# its private stdout copy, relayed answers on its private stdin copy.
_HARNESS_DRIVER = r"""
import builtins as _bi, os as _os, sys as _sys
_cin = _os.dup(0)
_cout = _os.dup(1)
_null = _os.open(_os.devnull, _os.O_RDWR)
_os.dup2(_null, 0)
_os.dup2(2, 1)
_rd = _os.fdopen(_cin, "rb")
_write, _dumps, _loads, _enc, _dec = _os.write, wire_dumps, _json.loads, wire_encode, wire_decode
_calls = [0]


def _send(obj):
    data = (_dumps(obj) + "\n").encode()
    while data:
        data = data[_write(_cout, data):]


class SolutionGone(Exception):
    pass


def _raise_as(name, msg):
    cls = getattr(_bi, name, None)
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        cls = RuntimeError
    raise cls(msg)


class Remote:
    # A function of the solution process: arguments go out and plain data comes back.
    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __call__(self, *args, **kwargs):
        i = _calls[0]
        _calls[0] += 1
        _send({"call": {"i": i, "fn": self._name, "args": _enc(list(args)), "kwargs": _enc(dict(kwargs))}})
        line = _rd.readline()
        if not line:
            raise SolutionGone("the solution process is gone")
        msg = _loads(line)
        if msg.get("i") != i:
            raise SolutionGone("out-of-order answer")
        if "ok" in msg:
            return _dec(msg["ok"])
        _raise_as(msg.get("exc", ""), msg.get("msg", ""))

    def __repr__(self):
        return f"<solution function {self._name}>"


def cmp_tuple_or_list(var1, var2):
    # SciCode's comparison helper (scicode.compare.cmp), minus sparse matrices.
    import numpy as np
    if len(var1) != len(var2):
        return False
    for v1, v2 in zip(var1, var2):
        if isinstance(v1, dict):
            if v1.keys() != v2.keys() or not all(np.allclose(v1[k], v2[k]) for k in v1):
                return False
        elif isinstance(v1, (bool, str)):
            if not v1 == v2:
                return False
        else:
            try:
                if not np.allclose(v1, v2):
                    return False
            except (ValueError, TypeError):
                if not v1 == v2:
                    return False
    return True


def _main():
    cfg = _loads(_rd.readline())
    g = {"__name__": "__main__", "__builtins__": _bi}
    if cfg["kind"] == "humaneval":
        exec(compile(cfg["prompt"], "prompt.py", "exec"), g)
        cand = Remote(cfg["entry_point"])
        g[cfg["entry_point"]] = cand
        try:
            exec(compile(cfg["test"], "test.py", "exec"), g)
            g["check"](cand)
            ok, err = True, ""
        except BaseException as e:
            ok, err = False, type(e).__name__
        _send({"case": 0, "passed": ok, "error": err, "nonce": cfg["nonce"]})
    else:
        exec(compile(cfg["setup"], "setup.py", "exec"), g)
        g["cmp_tuple_or_list"] = cmp_tuple_or_list
        for name in cfg["names"]:  # never shadow what the tests rely on
            if name not in g and not hasattr(_bi, name) and name != "target":
                g[name] = Remote(name)
        for k, (test, target) in enumerate(cfg["cases"]):
            try:
                exec(compile("target = " + target + "\n" + test, f"test_{k}.py", "exec"), g)
                ok, err = True, ""
            except BaseException as e:
                ok, err = False, type(e).__name__
            _send({"case": k, "passed": ok, "error": err, "nonce": cfg["nonce"]})
            if not ok:
                break
    _send({"done": True, "calls": _calls[0], "nonce": cfg["nonce"]})
    _os._exit(0)


_main()
"""


def _program(driver: str) -> str:
    return WIRE_SOURCE + "\n" + driver


def _decode_message(line: bytes) -> dict | None:
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    return msg if type(msg) is dict else None


# --------------------------------------------------------------------------- LiveCodeBench
LCB_PRELUDE = "from typing import *\nfrom collections import *\nimport math, heapq, bisect, itertools, functools\n"


def _stripped_lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.rstrip().splitlines()]


def grade_lcb(sandbox: Sandbox, code: str, tests: list[dict], *, testtype: str, fn_name: str | None = None,
              slot: int | None = None, tag: str = "") -> CodeGrade:
    """Grade a LiveCodeBench solution. ``stdin`` tests: each input on stdin, stdout compared
    as stripped lines; ``functional`` tests: ``Solution().fn_name`` (or a top-level
    ``fn_name``) called with the JSON-decoded arguments, one per input line, and the value
    compared strictly with the JSON-decoded output (a returned tuple counts as a list, as in
    LiveCodeBench). ``slot``: a worker slot already held; by default one is taken."""
    if testtype not in ("stdin", "functional"):
        raise ValueError(f"unknown LiveCodeBench testtype {testtype!r}")
    if testtype == "functional" and not fn_name:
        raise ValueError("functional LiveCodeBench tests need fn_name (from the problem metadata)")
    nonce = secrets.token_hex(16)
    if not tests:
        return CodeGrade("not_gradable", 0, 0, detail="no tests", tag=tag)
    if testtype == "stdin":
        cfg = {"mode": "stdin", "nonce": nonce, "inputs": [t["input"] for t in tests],
               "max_output": sandbox.limits.max_output_bytes}
    else:
        try:
            calls = [[wire_encode([json.loads(a) for a in t["input"].split("\n") if a.strip()]), wire_encode({})] for t in tests]
        except (ValueError, TypeError) as exc:
            return CodeGrade("not_gradable", len(tests), 0, detail=f"test input is not JSON: {exc}", tag=tag)
        cfg = {"mode": "calls", "nonce": nonce, "prelude": LCB_PRELUDE, "fn": fn_name, "calls": calls}
    job = SandboxJob(_program(_SOLUTION_DRIVER), stdin=json.dumps(cfg) + "\n", files={"solution.py": code}, tag=tag)
    # The records ride on the sandbox's stdout: keep up to one output cap per test (the
    # file-size limit still bounds the total).
    cap = sandbox.limits.max_output_bytes * (len(tests) + 1)
    res = sandbox.run(job, slot=slot, output_cap=cap) if slot is not None else sandbox.run_slotted(job, output_cap=cap)
    recs, clean = _records(res.stdout, nonce)
    runs = [_run_summary(res, "solution")]
    if not clean:  # a second record for a test, or one without the nonce: someone forged it
        return CodeGrade("no_evidence", len(tests), 0, detail="malformed or duplicate records", stderr=res.stderr, runs=runs, tag=tag)
    passed = 0
    for i, t in enumerate(tests):
        rec = recs.get(i)
        if rec is None:
            return CodeGrade(_failure_status(res, "no_evidence"), len(tests), passed, detail=f"test {i}: no result",
                             stderr=res.stderr, runs=runs, tag=tag)
        if testtype == "stdin":
            if rec.get("exit") == 121:
                return CodeGrade("memory_limit", len(tests), passed, detail=f"test {i}: MemoryError", stderr=res.stderr, runs=runs, tag=tag)
            if rec.get("exit") != 0 or type(rec.get("stdout")) is not str:
                sig = rec.get("signal")
                status = "cpu_limit" if sig in (9, 24) and rec.get("cpu", 0) >= sandbox.limits.cpu_seconds else "runtime_error"
                return CodeGrade(status, len(tests), passed, detail=f"test {i}: exit {rec.get('exit')} signal {sig}",
                                 stderr=res.stderr, runs=runs, tag=tag)
            ok = _stripped_lines(rec["stdout"]) == _stripped_lines(t["output"])
        else:
            if "ok" not in rec:
                status = "memory_limit" if rec.get("exc") == "MemoryError" else "runtime_error"
                return CodeGrade(status, len(tests), passed, detail=f"test {i}: {rec.get('exc')}", stderr=res.stderr, runs=runs, tag=tag)
            try:
                got = wire_decode(rec["ok"])
                expected = json.loads(t["output"])
            except (ValueError, TypeError, KeyError) as exc:
                return CodeGrade("no_evidence", len(tests), passed, detail=f"test {i}: undecodable ({exc})", stderr=res.stderr, runs=runs, tag=tag)
            if type(got) is tuple:
                got = list(got)
            ok = strict_equal(got, expected)
        if not ok:
            return CodeGrade("wrong_answer", len(tests), passed, detail=f"test {i}: wrong answer", stderr=res.stderr, runs=runs, tag=tag)
        passed += 1
    return CodeGrade("passed", len(tests), passed, stderr=res.stderr, runs=runs, tag=tag)


# --------------------------------------------------------------------------- harnessed (HumanEval, SciCode)
HARNESS_UID_OFFSET = 1000  # the harness of slot i runs as base_uid + 1000 + i


def _harnessed(sandbox: Sandbox, solution_src: str, prelude: str, harness_cfg: dict, n_cases: int,
               slot: int | None, tag: str) -> CodeGrade:
    if slot is None:
        slot = sandbox._slots.get()
        try:
            return _harnessed(sandbox, solution_src, prelude, harness_cfg, n_cases, slot, tag)
        finally:
            sandbox._slots.put(slot)
    sol_nonce, har_nonce = secrets.token_hex(16), secrets.token_hex(16)
    sol = sandbox.spawn(SandboxJob(_program(_SOLUTION_DRIVER), files={"solution.py": solution_src}, tag=tag),
                        slot=slot, interactive=True)
    try:
        har = sandbox.spawn(SandboxJob(_program(_HARNESS_DRIVER), tag=tag), slot=slot, uid_offset=HARNESS_UID_OFFSET,
                            interactive=True)
    except BaseException:
        sol.finish()
        raise
    timed_out = threading.Event()

    def _expire() -> None:
        timed_out.set()
        sol.kill()
        har.kill()

    watchdog = threading.Timer(sandbox.limits.wall_seconds, _expire)
    watchdog.start()
    cases: dict[int, dict] = {}
    done: dict | None = None
    relayed = answered = 0
    problem = ""
    try:
        _write_line(sol.proc.stdin, {"mode": "serve", "nonce": sol_nonce, "prelude": prelude})
        sol_out, har_out = sol.proc.stdout, har.proc.stdout
        names: list[str] | None = None
        bufs = {sol_out.fileno(): b"", har_out.fileno(): b""}
        open_fds = set(bufs)
        pending: int | None = None
        while open_fds and done is None and not problem:
            ready, _, _ = select.select(list(open_fds), [], [])
            for fd in ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    open_fds.discard(fd)
                    if fd == har_out.fileno():
                        problem = "the harness exited without a verdict"
                    elif fd == sol_out.fileno():
                        # The solution is gone: the harness's next read sees EOF and fails.
                        _close(har.proc.stdin)
                        if names is None:
                            problem = "the solution exited before it was ready"
                    continue
                bufs[fd] += chunk
                if len(bufs[fd]) > MAX_MESSAGE_BYTES:
                    problem = "message too large"
                    break
                while b"\n" in bufs[fd] and not problem and done is None:
                    line, bufs[fd] = bufs[fd].split(b"\n", 1)
                    msg = _decode_message(line)
                    if fd == sol_out.fileno():
                        if msg is None:
                            problem = "malformed message from the solution"
                        elif names is None and msg.get("ready") is True:
                            names = [n for n in msg.get("names", []) if type(n) is str and n.isidentifier()]
                            _write_line(har.proc.stdin, dict(harness_cfg, nonce=har_nonce, names=names))
                        elif pending is not None and msg.get("i") == pending and msg.get("nonce") == sol_nonce:
                            out = {"i": pending}
                            if "ok" in msg:
                                try:  # re-encode what decodes as plain data; nothing else passes
                                    out["ok"] = wire_encode(wire_decode(msg["ok"]))
                                except (ValueError, TypeError, OverflowError) as exc:
                                    out.update(exc="TypeError", msg=f"not plain data: {exc}")
                            else:
                                out.update(exc=str(msg.get("exc", ""))[:64], msg=str(msg.get("msg", ""))[:300])
                            pending = None
                            answered += 1
                            _write_line(har.proc.stdin, out)
                        else:
                            problem = "unexpected message from the solution"
                    else:
                        if msg is None or msg.get("nonce", har_nonce) != har_nonce:
                            problem = "malformed message from the harness"
                        elif "call" in msg:
                            call = msg["call"]
                            if names is None or type(call) is not dict or call.get("i") != relayed or pending is not None:
                                problem = "unexpected call from the harness"
                            else:
                                pending = relayed
                                relayed += 1
                                _write_line(sol.proc.stdin, {"i": call["i"], "fn": call.get("fn"), "args": call.get("args"),
                                                             "kwargs": call.get("kwargs")})
                        elif type(msg.get("case")) is int and msg.get("nonce") == har_nonce:
                            if msg["case"] in cases:
                                problem = "duplicate case report"
                            cases[msg["case"]] = msg
                        elif msg.get("done") is True and msg.get("nonce") == har_nonce:
                            done = msg
                        else:
                            problem = "unexpected message from the harness"
    except (BrokenPipeError, OSError) as exc:
        problem = problem or f"channel closed: {exc}"
    finally:
        watchdog.cancel()
        # The harness exits after its report; the solution when its requests end.
        har_res = har.finish(timed_out=timed_out.is_set(), grace=0.5 if done is not None else 0.0)
        sol_res = sol.finish(timed_out=timed_out.is_set(), grace=0.5 if done is not None else 0.0)
    runs = [_run_summary(sol_res, "solution"), _run_summary(har_res, "harness")]
    stderr = sol_res.stderr
    passed = sum(1 for k in range(n_cases) if cases.get(k, {}).get("passed") is True)
    if timed_out.is_set():
        return CodeGrade("timeout", n_cases, passed, detail="wall clock", stderr=stderr, runs=runs, tag=tag)
    failed = next((cases[k] for k in range(n_cases) if k in cases and cases[k].get("passed") is not True), None)
    if failed is not None:
        status = _failure_status(sol_res, "wrong_answer")
        if status == "killed":
            status = "wrong_answer"  # we killed it after the verdict
        return CodeGrade(status, n_cases, passed, detail=f"case {failed['case']}: {failed.get('error') or 'failed'}",
                         stderr=stderr, runs=runs, tag=tag)
    evidence = (done is not None and not problem and passed == n_cases and len(cases) == n_cases
                and relayed >= 1 and answered == relayed == done.get("calls"))
    if evidence:
        return CodeGrade("passed", n_cases, passed, stderr=stderr, runs=runs, tag=tag)
    why = problem or ("the tests never called the solution" if done is not None and relayed == 0 else "incomplete")
    return CodeGrade(_failure_status(sol_res, "no_evidence") if not problem else "no_evidence", n_cases, passed,
                     detail=why, stderr=stderr, runs=runs, tag=tag)


def _write_line(pipe, obj: dict) -> None:
    pipe.write((json.dumps(obj, separators=(",", ":")) + "\n").encode())
    pipe.flush()


def _close(pipe) -> None:
    try:
        pipe.close()
    except OSError:
        pass


def grade_humaneval(sandbox: Sandbox, prompt: str, completion: str, test: str, entry_point: str, *,
                    slot: int | None = None, tag: str = "") -> CodeGrade:
    """Grade a HumanEval completion. The solution process runs ``prompt + completion`` (the
    HumanEval layout; pass ``prompt=""`` with a complete program); the harness process runs
    the problem's ``prompt`` (its helper functions) and ``test``, then ``check(candidate)``
    with ``candidate`` a proxy to ``entry_point`` in the solution process."""
    cfg = {"kind": "humaneval", "prompt": prompt, "test": test, "entry_point": entry_point}
    return _harnessed(sandbox, prompt + completion, "", cfg, 1, slot, tag)


# --------------------------------------------------------------------------- SciCode
@dataclass(frozen=True)
class SciCodeStepCheck:
    """One SciCode sub-step: its tests, and the Python literal of each test's ``target``."""

    step_number: str
    dependencies: str
    prior_code: str
    test_cases: tuple[str, ...]
    targets: tuple[str, ...] | None  # None: no numeric targets available -> not gradable


SCICODE_SETUP = "from numpy import array, inf, nan"


def grade_scicode(sandbox: Sandbox, check: SciCodeStepCheck, code: str, *, slot: int | None = None, tag: str = "") -> CodeGrade:
    """Grade one SciCode step. The solution process runs the dependencies, the previous
    steps' code and this step's code; the harness process runs each test case with
    ``target`` bound (the comparison, e.g. ``np.allclose`` or SciCode's
    ``cmp_tuple_or_list``, is the test's own, so is the tolerance) and the solution's
    functions as proxies. ``not_gradable`` when the targets are unavailable (the official
    ones live in SciCode's ``test_data.h5``)."""
    if check.targets is None or len(check.targets) != len(check.test_cases) or not check.test_cases:
        return CodeGrade("not_gradable", len(check.test_cases), 0, detail="no targets", tag=tag or check.step_number)
    src = "\n\n".join(p for p in (check.dependencies, SCICODE_SETUP, check.prior_code, code) if p)
    cfg = {"kind": "scicode", "setup": "\n".join(p for p in (check.dependencies, SCICODE_SETUP) if p),
           "cases": [[t, target] for t, target in zip(check.test_cases, check.targets)]}
    return _harnessed(sandbox, src, "", cfg, len(check.test_cases), slot, tag or check.step_number)

