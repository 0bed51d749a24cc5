"""Prompt templates: text files in ``judge_prompts/``, versioned by content hash.

The version goes into every cache key, so editing a template can never serve a stale answer.
Templates use ``str.format``-style ``{name}`` fields; literal braces are doubled.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import arena


def prompts_dir() -> Path:
    """``judge_prompts/`` of a source checkout, else the copy packaged inside the wheel."""
    pkg = Path(arena.__file__).resolve().parent
    for candidate in (pkg.parent / "judge_prompts", pkg / "_judge_prompts"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("judge_prompts/ not found next to the arena package")


@dataclass(frozen=True)
class Template:
    name: str
    text: str

    @property
    def version(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:16]

    def format(self, **fields: object) -> str:
        return self.text.format(**fields)


def load_template(name_or_path: str | Path) -> Template:
    """Load ``judge_prompts/<name>`` (``.txt`` optional) or an explicit file path."""
    p = Path(name_or_path)
    if not p.is_file():
        base = prompts_dir()
        p = base / str(name_or_path)
        if not p.is_file():
            p = base / f"{name_or_path}.txt"
    if not p.is_file():
        raise FileNotFoundError(f"prompt template '{name_or_path}' not found (looked in {prompts_dir()})")
    return Template(name=p.stem, text=p.read_text(encoding="utf-8"))
