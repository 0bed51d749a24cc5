"""Read YAML and JSON configuration files; every error names the file, line and field."""

from __future__ import annotations

import difflib
import json
import typing
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from arena.errors import InputError


def _read_text(path: Path) -> str:
    """The file as UTF-8 text; a missing path, a directory or undecodable bytes is one InputError."""
    if path.is_dir():
        raise InputError("is a directory, expected a file", path=str(path))
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such file", path=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=str(path)) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid UTF-8 text ({exc.reason} at byte {exc.start})", path=str(path)) from None


def read_yaml(path: str | Path, *, require_mapping: bool = True) -> Any:
    path = Path(path)
    text = _read_text(path)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        if isinstance(exc, yaml.reader.ReaderError):  # control bytes: a binary file, not YAML
            ch = exc.character if isinstance(exc.character, int) else ord(exc.character)
            raise InputError(f"not a text file (control character 0x{ch:02x} at character {exc.position})", path=str(path)) from None
        raise InputError(f"invalid YAML: {getattr(exc, 'problem', None) or exc}", path=str(path), line=None if mark is None else mark.line + 1) from None
    if require_mapping and data is None:
        raise InputError("the file is empty, expected a mapping of settings", path=str(path))
    if require_mapping and not isinstance(data, dict):
        raise InputError("expected a mapping at the top level", path=str(path))
    return data


def read_json(path: str | Path) -> Any:
    path = Path(path)
    text = _read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON ({exc.msg})", path=str(path), line=exc.lineno) from None


def _model_at(model: type[BaseModel], loc: tuple) -> type[BaseModel] | None:
    """The pydantic model that owns the last key of `loc` (walking nested models, lists, optionals)."""

    def inner(ann: Any) -> type[BaseModel] | None:
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            return ann
        for arg in typing.get_args(ann):
            found = inner(arg)
            if found is not None:
                return found
        return None

    cls: type[BaseModel] | None = model
    for part in loc[:-1]:
        if isinstance(part, int) or cls is None:
            continue
        field = cls.model_fields.get(str(part))
        if field is None:
            return None
        cls = inner(field.annotation)
    return cls


def _find_model(title: str) -> type[BaseModel] | None:
    # Callers that do not pass `model`: the error's title names the class; used only when unique.
    seen, stack, hits = set(), list(BaseModel.__subclasses__()), []
    while stack:
        c = stack.pop()
        if c in seen:
            continue
        seen.add(c)
        stack.extend(c.__subclasses__())
        if c.__name__ == title:
            hits.append(c)
    return hits[0] if len(hits) == 1 else None


def validation_error(exc: ValidationError, path: str | Path, prefix: str = "", model: type[BaseModel] | None = None) -> InputError:
    """The first pydantic error as an :class:`InputError` naming its field; an unknown key gets
    the closest valid key suggested."""
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    msg = err["msg"]
    if err["type"] == "extra_forbidden" and err["loc"]:
        owner = _model_at(model or _find_model(exc.title), tuple(err["loc"])) if (model or exc.title) else None
        valid = [k for k in (owner.model_fields if owner else {}) if k != "source"]
        close = difflib.get_close_matches(str(err["loc"][-1]), valid, n=1, cutoff=0.6)
        msg = "unknown key" + (f"; did you mean '{close[0]}'?" if close else (f" (valid: {', '.join(valid)})" if valid else ""))
    return InputError(msg, path=str(path), field=f"{prefix}{loc}" if loc else prefix.rstrip(".") or None)
