"""Parse the judge's Likert verdict (``[[A>>B]]`` ... ``[[B>>A]]``) from its judgment text.

Rules, in order:

1. Find every ``[[label]]``. Equivalent spellings are normalised (``B<A`` is ``A>B``).
2. Drop labels the judge merely *quoted*: a label whose line appears verbatim in the prompt or in
   either answer being judged (an answer may itself contain ``[[A>B]]``), and labels inside a
   fenced code block when the judged texts contain that label.
3. Labels introduced as the verdict ("final verdict", "verdict:") win; the last such one counts.
4. Otherwise one distinct label (repeats allowed) is the verdict; several distinct labels are a
   *conflict*, and none is *missing*. arena-hard-auto treats both as unparsed; the judge stage
   re-asks once on *missing* only, as arena-hard-auto does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

from arena.io.formats import VERDICT_LABELS

LABEL_RE = re.compile(r"\[\[\s*([AB])\s*(>>|<<|>|<|=)\s*([AB])\s*\]\]")
VERDICT_CUE_RE = re.compile(r"verdict", re.IGNORECASE)
FENCE_RE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
CUE_WINDOW = 80  # characters before a label in which a "verdict" cue binds to it
QUOTE_CONTEXT = 24  # characters of context compared with the judged texts
MIN_QUOTE_CONTEXT = 10


@dataclass(frozen=True)
class Verdict:
    label: str | None
    status: str  # ok | missing | conflict
    labels: tuple[str, ...] = field(default_factory=tuple)  # every label the judge gave, in order
    ignored: int = 0  # labels dropped as quotations

    @property
    def ok(self) -> bool:
        return self.label is not None


def normalise_label(left: str, op: str, right: str) -> str | None:
    """``A<B`` -> ``B>A``; ``B=A`` -> ``A=B``; a label comparing a side with itself is invalid."""
    if left == right:
        return None
    if op == "=":
        return "A=B"
    if op in ("<", "<<"):
        left, right = right, left
        op = op.replace("<", ">")
    label = f"{left}{op}{right}"
    return label if label in VERDICT_LABELS else None


def parse_verdict(judgment: str | None, quoted: Iterable[str] = ()) -> Verdict:
    """Parse one judgment; ``quoted`` are the texts being judged (prompt and both answers)."""
    if not judgment:
        return Verdict(None, "missing")
    sources = [q for q in quoted if q]
    fences = [(m.start(), m.end()) for m in FENCE_RE.finditer(judgment)]
    kept: list[tuple[int, str]] = []
    ignored = 0
    for m in LABEL_RE.finditer(judgment):
        label = normalise_label(*m.groups())
        if label is None:
            continue
        if sources and _is_quoted(judgment, m.start(), m.end(), m.group(0), sources, fences):
            ignored += 1
            continue
        kept.append((m.start(), label))
    labels = tuple(lbl for _, lbl in kept)
    if not kept:
        return Verdict(None, "missing", labels, ignored)
    cued = [lbl for pos, lbl in kept if VERDICT_CUE_RE.search(judgment, max(0, pos - CUE_WINDOW), pos)]
    if cued:
        return Verdict(cued[-1], "ok", labels, ignored)
    if len(set(labels)) == 1:
        return Verdict(labels[0], "ok", labels, ignored)
    return Verdict(None, "conflict", labels, ignored)


def _is_quoted(text: str, start: int, end: int, raw: str, sources: list[str], fences: list[tuple[int, int]]) -> bool:
    """A label is a quotation when it and the words around it appear verbatim in a judged text."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    left, right = text[line_start:start], text[end:line_end]
    # Context on either side, stripped of quote marks the judge may have added around the copy.
    for lw, rw in ((QUOTE_CONTEXT, QUOTE_CONTEXT), (QUOTE_CONTEXT, 0), (0, QUOTE_CONTEXT)):
        lctx = left[-lw:].lstrip(" >\"'*") if lw else ""
        rctx = right[:rw].rstrip(" \"'*") if rw else ""
        if len(lctx) + len(rctx) < MIN_QUOTE_CONTEXT:
            continue
        if any(lctx + raw + rctx in s for s in sources):
            return True
    in_fence = any(a <= start < b for a, b in fences)
    return in_fence and any(raw in s for s in sources)
