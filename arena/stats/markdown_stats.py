"""Answer length and markdown density, counted outside fenced code blocks.

The counts follow arena-hard-auto's ``conv_metadata`` (``header_count`` h1-h6, ``list_count``
ordered/unordered, ``bold_count`` ``**``/``__``) so style control can use imported and generated
answers alike.
"""

from __future__ import annotations

import re
from typing import Any

CODE_BLOCK_RE = re.compile(r"```[^`]*```")
HEADER_RES = {f"h{n}": re.compile(rf"^#{{{n}}}\s", re.MULTILINE) for n in range(1, 7)}
ORDERED_RE = re.compile(r"^\s*\d+\.\s", re.MULTILINE)
UNORDERED_RE = re.compile(r"^\s*[-*+]\s", re.MULTILINE)
BOLD_STAR_RE = re.compile(r"\*\*[^*\n]+\*\*")
BOLD_UNDER_RE = re.compile(r"__[^_\n]+__")


def strip_code_blocks(text: str) -> str:
    return CODE_BLOCK_RE.sub("", text)


def markdown_counts(text: str) -> dict[str, dict[str, int]]:
    body = strip_code_blocks(text)
    return {
        "header_count": {h: len(rx.findall(body)) for h, rx in HEADER_RES.items()},
        "list_count": {"ordered": len(ORDERED_RE.findall(body)), "unordered": len(UNORDERED_RE.findall(body))},
        "bold_count": {"**": len(BOLD_STAR_RE.findall(body)), "__": len(BOLD_UNDER_RE.findall(body))},
    }


def answer_metadata(text: str, token_len: int | None) -> dict[str, Any]:
    """``conv_metadata`` for one answer: token length plus markdown counts."""
    return {"token_len": token_len if token_len is not None else approx_tokens(text), **markdown_counts(text)}


def approx_tokens(text: str) -> int:
    """Fallback when the API reported no usage: ~4 characters a token (tokenizer files cannot be
    downloaded offline)."""
    return max(1, round(len(text) / 4)) if text else 0
