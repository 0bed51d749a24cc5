"""Math answer grading: last ``\\boxed{}``, PRM800K-style normalisation, symbolic equivalence.

The script stage decides "correct" when either (a) the normalised strings match
(Hendrycks MATH / PRM800K ``strip_string``) or (b) ``math-verify`` proves the parsed
expressions equal (SymPy). Anything the script does not mark correct may go to the LLM
equality checker (``index_math_equality`` template); the checker never overturns a
script "correct", so it can only add recall.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


_BOX_COMMANDS = ("\\boxed", "\\fbox")


def last_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` / ``\\fbox{...}`` (nested braces matched), or of
    ``\\boxed x`` (space form, as in the MATH reference solutions). ``None`` if absent or unclosed."""
    if not text:
        return None
    idx = max(text.rfind(cmd) for cmd in _BOX_COMMANDS)
    if idx < 0:
        return None
    cmd = "\\boxed" if text.startswith("\\boxed", idx) else "\\fbox"
    rest = text[idx + len(cmd):]
    if rest.startswith(" "):
        m = re.match(r" ([^\s$]+)", rest)
        return m.group(1) if m else None
    if not rest.startswith("{"):
        return None
    depth = 0
    for i, ch in enumerate(rest):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return rest[1:i]
    return None


# --------------------------------------------------------------------------- normalisation
# PRM800K / Hendrycks MATH ``strip_string``, extended with the cases the issue lists
# (thousands separators, degrees, \dfrac, \text{} units, x= prefixes). Hand-written because
# it is the reference normalisation the MATH labels were produced with; no library ships it.
_UNIT_WORDS = (
    "degrees", "degree", "cm", "centimeters", "meters", "meter", "inches", "inch", "feet", "foot",
    "units", "unit", "sq", "square", "dollars", "cents", "mph", "hours", "hour", "minutes", "minute",
    "seconds", "second", "days", "day", "miles", "mile", "km", "kg", "grams", "pounds",
)


def _fix_fracs(s: str) -> str:
    parts = s.split("\\frac")
    out = parts[0]
    for sub in parts[1:]:
        out += "\\frac"
        if sub.startswith("{") or len(sub) < 2:
            out += sub
            continue
        a, b, tail = sub[0], sub[1], sub[2:]
        if b == "{":
            out += "{" + a + "}" + b + tail
        else:
            out += "{" + a + "}{" + b + "}" + tail
    return out


def _fix_a_slash_b(s: str) -> str:
    m = re.fullmatch(r"(-?\d+)/(\d+)", s)
    return f"\\frac{{{m.group(1)}}}{{{m.group(2)}}}" if m else s


def _fix_sqrt(s: str) -> str:
    return re.sub(r"\\sqrt(\w)", r"\\sqrt{\1}", s)


def normalize_answer(s: str) -> str:
    """Canonical string form of a LaTeX answer (PRM800K ``strip_string`` plus extensions)."""
    s = s.strip().replace("\n", "").rstrip(".")
    s = s.replace("\\!", "").replace("\\,", "").replace("\\;", "").replace("\\ ", "")
    s = s.replace("\\\\", "\\")
    s = s.replace("tfrac", "frac").replace("dfrac", "frac")
    s = s.replace("\\left", "").replace("\\right", "")
    s = s.replace("^{\\circ}", "").replace("^\\circ", "").replace("°", "")
    s = s.replace("\\$", "").replace("$", "")
    s = re.sub(r"\\text\{\s*([^{}]*)\}", r"\1", s)
    s = re.sub(r"\\mbox\{\s*([^{}]*)\}", r"\1", s)
    s = re.sub(r"\\mathrm\{\s*([^{}]*)\}", r"\1", s)
    s = s.replace("\\%", "").replace("%", "")
    # A trailing unit word ("72 degrees", "64 square feet") gets the benefit of the doubt.
    unit_rx = r"(\s*(" + "|".join(_UNIT_WORDS) + r")\b\.?)+$"
    s2 = re.sub(unit_rx, "", s).strip()
    if s2:
        s = s2
    # Thousands separators: 1,000,000 -> 1000000 (only well-formed groups of three).
    if re.fullmatch(r"-?\d{1,3}(,\d{3})+(\.\d+)?", s.replace("{,}", ",")):
        s = s.replace("{,}", "").replace(",", "")
    s = s.replace(" .", " 0.").replace("{.", "{0.")
    if s.startswith("."):
        s = "0" + s
    # "x = 5", "k=3": keep the value when the left side is a single symbol.
    m = re.fullmatch(r"\s*[a-zA-Z](?:_\{?\w+\}?)?\s*=\s*(.+)", s)
    if m:
        s = m.group(1)
    s = _fix_sqrt(s)
    s = s.replace(" ", "")
    s = _fix_fracs(s)
    if s == "0.5":
        s = "\\frac{1}{2}"
    s = _fix_a_slash_b(s)
    # 5.0 -> 5, 27.000 -> 27
    m = re.fullmatch(r"(-?\d+)\.0+", s)
    if m:
        s = m.group(1)
    return s


def _mv_parse(s: str):
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse  # SymPy: seconds to import, only where used

    return parse(
        f"${s}$",
        extraction_config=[LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig()],
        parsing_timeout=5,
    )


def symbolic_equal(gold: str, pred: str) -> bool:
    """``math-verify`` equivalence of two answer strings (SymPy; intervals, sets, matrices)."""
    from math_verify import verify

    try:
        g, p = _mv_parse(gold), _mv_parse(pred)
        if not g or not p:
            return False
        return bool(verify(g, p, timeout_seconds=5))
    except Exception:  # a parser crash on odd LaTeX means "not proved", never a run failure
        return False


def _split_multi(s: str) -> list[str] | None:
    """Top-level comma split for multiple answers ("1, -2"), or None if not a plain list."""
    if any(c in s for c in "([{") and not s.startswith("\\"):
        return None
    depth, parts, cur = 0, [], ""
    for ch in s:
        if ch in "{([":
            depth += 1
        elif ch in "})]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts] if len(parts) > 1 else None


def answers_equal(gold: str, pred: str) -> bool:
    """Script-stage equivalence: normalised string match, then symbolic, then unordered
    element-wise for multiple answers."""
    if pred is None:
        return False
    ng, np_ = normalize_answer(gold), normalize_answer(pred)
    if ng == np_:
        return True
    if symbolic_equal(ng, np_) or symbolic_equal(gold, pred):
        return True
    gs, ps = _split_multi(ng), _split_multi(np_)
    if gs and ps and len(gs) == len(ps):
        remaining = list(ps)
        for g in gs:
            hit = next((p for p in remaining if normalize_answer(g) == normalize_answer(p) or symbolic_equal(g, p)), None)
            if hit is None:
                return False
            remaining.remove(hit)
        return True
    return False


@dataclass(frozen=True)
class MathVerdict:
    extracted: str | None
    correct: bool
    method: str  # "string" | "symbolic" | "none" (no boxed answer) | "mismatch"


def grade_math(response: str, gold: str) -> MathVerdict:
    """Grade a response against the gold answer with the script stage only."""
    pred = last_boxed(response or "")
    if pred is None:
        return MathVerdict(None, False, "none")
    if normalize_answer(pred) == normalize_answer(gold):
        return MathVerdict(pred, True, "string")
    if answers_equal(gold, pred):
        return MathVerdict(pred, True, "symbolic")
    return MathVerdict(pred, False, "mismatch")


def parse_equality_reply(text: str | None) -> bool | None:
    """The equality checker answers "Yes" or "No"; anything else is no verdict (None)."""
    if not text:
        return None
    t = text.strip().lower().strip(".*` \n")
    if t.startswith("yes"):
        return True
    if t.startswith("no"):
        return False
    return None


class MathScriptGrader:
    """Runs :func:`grade_math` off the event loop in worker processes, with a time limit per answer.

    SymPy can spend unbounded time on a hostile answer (``\\boxed{9^{9^{9^{9}}}}`` took 10 s of
    blocked event loop), and CPython cannot interrupt a big-integer power from another thread,
    so each answer runs in a :mod:`pebble` process pool, whose per-task timeout kills and
    replaces the worker (``concurrent.futures`` cannot cancel a running task). An answer over
    the limit gets method ``"timeout"``: not proved equal, so the LLM equality checker (if any)
    decides, else the record is a grading failure.
    """

    def __init__(self, *, workers: int = 1, timeout: float = 10.0):
        self.workers = workers
        self.timeout = timeout
        self._pool = None

    def _get_pool(self):
        if self._pool is None:
            import multiprocessing

            from pebble import ProcessPool

            # forkserver: the parent holds threads (HTTP client, sandbox), which fork would copy mid-state.
            self._pool = ProcessPool(max_workers=self.workers, context=multiprocessing.get_context("forkserver"))
        return self._pool

    async def grade(self, response: str, gold: str) -> MathVerdict:
        import asyncio
        from concurrent.futures import TimeoutError as FutureTimeout

        pred = last_boxed(response or "")
        if pred is None:
            return MathVerdict(None, False, "none")
        if normalize_answer(pred) == normalize_answer(gold):
            return MathVerdict(pred, True, "string")
        future = self._get_pool().schedule(grade_math, args=(response, gold), timeout=self.timeout)
        try:
            return await asyncio.wrap_future(future)
        except FutureTimeout:
            return MathVerdict(pred, False, "timeout")

    def close(self) -> None:
        if self._pool is not None:
            self._pool.stop()
            self._pool.join()
            self._pool = None
