"""Answer length, markdown and emoji counts, counted outside fenced code blocks.

The counts follow arena-hard-auto's ``conv_metadata`` (``header_count`` h1-h6, ``list_count``
ordered/unordered, ``bold_count`` ``**``/``__``) so style control can use imported and generated
answers alike; ``emoji_count`` (:func:`emoji_count`) is the style feature LMArena added in 2025.
"""

from __future__ import annotations

import re
from typing import Any

import regex

CODE_BLOCK_RE = re.compile(r"```[^`]*```")
HEADER_RES = {f"h{n}": re.compile(rf"^#{{{n}}}\s", re.MULTILINE) for n in range(1, 7)}
ORDERED_RE = re.compile(r"^\s*\d+\.\s", re.MULTILINE)
UNORDERED_RE = re.compile(r"^\s*[-*+]\s", re.MULTILINE)
BOLD_STAR_RE = re.compile(r"\*\*[^*\n]+\*\*")
BOLD_UNDER_RE = re.compile(r"__[^_\n]+__")


def strip_code_blocks(text: str) -> str:
    return CODE_BLOCK_RE.sub("", text)


# One emoji = one match of this pattern that is shown as an emoji (see emoji_count). The stdlib
# re has no Unicode emoji properties; the regex package (already installed with transformers)
# does, from the Unicode data of its release.
_EMOJI_RE = regex.compile(
    r"""
    (?P<flag>\p{Regional_Indicator}{2})                                   # flag: two regional indicators
  | (?P<keycap>[0-9\#*]\uFE0F?\u20E3)                                   # keycap: 1️⃣ #️⃣
  | (?P<pict>\p{Extended_Pictographic}
        (?:\p{Emoji_Modifier}|\uFE0F)?                                   # skin tone or emoji selector
        (?:[\U000E0020-\U000E007E]+\U000E007F)?                         # tag sequence (subdivision flags)
        (?:\u200D\p{Extended_Pictographic}(?:\p{Emoji_Modifier}|\uFE0F)?)*)  # ZWJ sequence: one emoji
    """,
    regex.VERBOSE,
)
_EMOJI_PRESENTATION_RE = regex.compile(r"\p{Emoji_Presentation}")


def emoji_count(text: str) -> int:
    """Emoji outside fenced code blocks.

    Definition: an emoji is a regional-indicator pair (a flag), a keycap sequence, or an
    ``Extended_Pictographic`` code point with its optional skin-tone modifier / U+FE0F, tag
    sequence and ZWJ-joined continuation, counted once (👨‍👩‍👧 is one emoji) and only when it is
    *presented as an emoji*: its first code point has ``Emoji_Presentation``, or the sequence
    carries U+FE0F, a skin-tone modifier or a ZWJ. So ©, ®, ™, ↔ and ❤ written as text, which
    are Extended_Pictographic but render as text by default, do not count, while ❤️ (with U+FE0F)
    does. Unicode properties are those of the installed ``regex`` release.
    """
    n = 0
    for m in _EMOJI_RE.finditer(strip_code_blocks(text)):
        if m.group("flag") or m.group("keycap"):
            n += 1
            continue
        seq = m.group("pict")
        if _EMOJI_PRESENTATION_RE.match(seq) or len(seq) > 1:
            # Anything after the base is a modifier, U+FE0F, a tag sequence or a ZWJ join:
            # all of them request emoji presentation.
            n += 1
    return n


def markdown_counts(text: str) -> dict[str, dict[str, int]]:
    body = strip_code_blocks(text)
    return {
        "header_count": {h: len(rx.findall(body)) for h, rx in HEADER_RES.items()},
        "list_count": {"ordered": len(ORDERED_RE.findall(body)), "unordered": len(UNORDERED_RE.findall(body))},
        "bold_count": {"**": len(BOLD_STAR_RE.findall(body)), "__": len(BOLD_UNDER_RE.findall(body))},
    }


def answer_metadata(text: str, token_len: int | None) -> dict[str, Any]:
    """``conv_metadata`` for one answer: token length, markdown counts and the emoji count."""
    return {"token_len": token_len if token_len is not None else approx_tokens(text), **markdown_counts(text), "emoji_count": emoji_count(text)}


def approx_tokens(text: str) -> int:
    """Fallback when the API reported no usage: ~4 characters a token (tokenizer files cannot be
    downloaded offline)."""
    return max(1, round(len(text) / 4)) if text else 0
