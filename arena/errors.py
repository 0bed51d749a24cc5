"""Errors that name where bad input came from, so a user can fix the file and rerun."""

from __future__ import annotations


class InputError(ValueError):
    """Bad user input, located by file, line and field when known."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None, field: str | None = None):
        self.path = path
        self.line = line
        self.field = field
        self.reason = message
        where = []
        if path is not None:
            where.append(str(path))
        if line is not None:
            where.append(f"line {line}")
        prefix = ":".join(where)
        if field is not None and prefix:
            prefix = f"{prefix}: field '{field}'"
        elif field is not None:
            prefix = f"field '{field}'"
        super().__init__(f"{prefix}: {message}" if prefix else message)
