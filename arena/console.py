"""The one error path and console factory for every command line (`arena`, `benchbuilder`).

Consoles are built when a command runs, never at import time, so importing a CLI module has no
side effects and tests can capture output. Every expected failure (bad input, unreadable files,
a full disk) ends in exactly one line on stderr and exit code 2; a run that finished but had
failed calls ends with exit code 1 (see `EXIT_CALLS_FAILED`).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Iterator, NoReturn

if TYPE_CHECKING:  # rich is imported lazily: `arena --help` must start fast
    from rich.console import Console

EXIT_BAD_INPUT = 2
EXIT_CALLS_FAILED = 1
# Untrusted strings (model names, prompts) are cut before they reach rich: its highlighter is
# super-linear on some inputs (a 200k-character model name took minutes).
MAX_CELL_CHARS = 200


def make_console(*, stderr: bool = False, wide: bool = False) -> "Console":
    """A rich console; `wide` never cuts table cells when output is not a terminal."""
    from rich.console import Console

    probe = Console(stderr=stderr)
    width = None if (probe.is_terminal or not wide) else 250
    return Console(stderr=stderr, width=width, highlight=False)


def clip(text: object, limit: int = MAX_CELL_CHARS) -> str:
    """An untrusted value as a short, inert string for the terminal (markup escaped)."""
    from rich.markup import escape

    s = str(text)
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    return escape(s)


def fail(exc: BaseException | str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Print one line naming what was wrong, then exit (2 by default). Never a traceback."""
    import typer

    msg = str(exc) if not isinstance(exc, str) else exc
    msg = " ".join(msg.split()) or type(exc).__name__
    if len(msg) > 2000:
        msg = msg[:1999] + "…"
    make_console(stderr=True).print("[bold red]error:[/] " + clip(msg, 2000), soft_wrap=True)
    raise typer.Exit(code=code)


def describe_os_error(exc: OSError) -> str:
    """`OSError` as one line: what failed and on which path (errno name, no traceback)."""
    import errno as _errno

    name = _errno.errorcode.get(exc.errno or 0, "")
    what = exc.strerror or str(exc)
    where = exc.filename if exc.filename is not None else ""
    label = {_errno.ENOSPC: "disk full", _errno.EROFS: "read-only file system",
             _errno.EACCES: "permission denied"}.get(exc.errno or 0, what)
    return f"{where}: {label}" + (f" ({name})" if name else "") if where else f"{label} ({name})"


@contextlib.contextmanager
def cli_errors() -> Iterator[None]:
    """Turn every expected failure inside a command into `fail(...)`: one line, exit 2."""
    from arena.errors import InputError

    try:
        yield
    except InputError as exc:
        fail(exc)
    except UnicodeDecodeError as exc:
        fail(f"not valid UTF-8 text ({exc.reason} at byte {exc.start})")
    except IsADirectoryError as exc:
        fail(f"{exc.filename}: is a directory, expected a file")
    except FileNotFoundError as exc:
        fail(f"{exc.filename}: no such file")
    except OSError as exc:
        fail(describe_os_error(exc))
