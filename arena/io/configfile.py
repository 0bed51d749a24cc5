"""Read YAML and JSON configuration files; every error names the file, line and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from arena.errors import InputError


def read_yaml(path: str | Path, *, require_mapping: bool = True) -> Any:
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=str(path)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(f"invalid YAML: {getattr(exc, 'problem', None) or exc}", path=str(path), line=None if mark is None else mark.line + 1) from None
    if require_mapping and not isinstance(data, dict):
        raise InputError("expected a mapping at the top level", path=str(path))
    return data


def read_json(path: str | Path) -> Any:
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=str(path)) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON ({exc.msg})", path=str(path), line=exc.lineno) from None


def validation_error(exc: ValidationError, path: str | Path, prefix: str = "") -> InputError:
    """The first pydantic error as an :class:`InputError` naming its field."""
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    return InputError(err["msg"], path=str(path), field=f"{prefix}{loc}" if loc else prefix.rstrip(".") or None)
