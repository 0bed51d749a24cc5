"""The one JSON Lines module: reading, appending and atomic rewriting, for every stage.

Rules every caller gets for free:

* Lines are split on ``\\n`` only. Real prompts contain U+2028/U+2029 and lone ``\\r``, which
  ``str.splitlines`` (and text-mode iteration with universal newlines) would treat as breaks.
* ``.gz`` files are read and written through gzip.
* Reading never modifies the file. A final line without its newline is the mark of a writer
  killed mid-write: readers either reject it (``torn_tail="error"``, the default for inputs a
  user hands us), or leave it out (``torn_tail="skip"``, for our own append-only outputs).
  Only :class:`JsonlAppender` cuts it off, because only a writer may change the file.
* :func:`write_jsonl` replaces a whole file atomically: temp file in the same directory,
  fsync, rename over the target, fsync the directory. A kill at any moment leaves either the
  old or the new file, never a mix, and a failed run never truncates earlier output.
* Appends are one ``write`` per line, flushed at once; ``fsync="record"`` also syncs each line
  (a power cut then loses at most the line being written), ``"close"`` syncs once at close.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Literal, Mapping

from arena.errors import InputError

TornTail = Literal["error", "skip"]
FsyncPolicy = Literal["record", "close", "never"]


def is_gzip(path: Path) -> bool:
    return path.suffix == ".gz"


def open_text(path: str | Path) -> io.TextIOBase:
    """A file for reading text as-is: ``newline=""`` keeps ``\\r`` and U+2028 inside lines."""
    path = Path(path)
    if is_gzip(path):
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    return open(path, "r", encoding="utf-8", newline="")


def _open_input(path: Path):
    """``open_text`` with the two expected failures as one-line input errors."""
    try:
        return open_text(path)
    except IsADirectoryError:
        raise InputError("is a directory, expected a file", path=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot open: {exc.strerror or exc}", path=str(path)) from None


def read_text(path: str | Path) -> str:
    """The whole file as text; unreadable or non-UTF-8 files raise :class:`InputError`."""
    path = Path(path)
    with _open_input(path) as fh:
        try:
            return fh.read()
        except UnicodeDecodeError as exc:
            raise InputError(f"not valid UTF-8 text ({exc.reason} at byte {exc.start})", path=str(path)) from None
        except (OSError, EOFError) as exc:
            raise InputError(f"cannot read: {exc}", path=str(path)) from None


def _lines(path: Path, block: int = 1 << 20) -> Iterator[tuple[str, bool]]:
    """``(line, ended)`` for each ``\\n``-separated line, streamed; ``ended`` is False only for
    a last line without its newline."""
    with _open_input(path) as fh:
        rest = ""
        while True:
            try:
                chunk = fh.read(block)
            except UnicodeDecodeError as exc:
                raise InputError(f"not valid UTF-8 text ({exc.reason})", path=str(path)) from None
            except (OSError, EOFError) as exc:
                raise InputError(f"cannot read: {exc}", path=str(path)) from None
            if not chunk:
                break
            parts = (rest + chunk).split("\n")
            rest = parts.pop()
            for line in parts:
                yield line, True
        if rest:
            yield rest, False


def read_jsonl(
    path: str | Path,
    *,
    torn_tail: TornTail = "error",
    objects_only: bool = True,
    skip_torn_tail: bool | None = None,
) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for every non-blank line, streaming; bad JSON names file
    and line.

    ``torn_tail="skip"`` leaves out a final line without its newline that does not parse (a
    writer killed mid-write); ``"error"`` treats it like any other line, so a truncated record
    is reported as malformed JSON. ``objects_only`` rejects lines that are not JSON objects.
    ``skip_torn_tail`` is the older spelling of ``torn_tail="skip"``.
    """
    if skip_torn_tail is not None:
        torn_tail = "skip" if skip_torn_tail else "error"
    path = Path(path)
    for i, (line, ended) in enumerate(_lines(path), start=1):
        if not line.strip():
            continue
        if not ended and torn_tail == "skip" and not _complete(line):
            return
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed JSON ({exc.msg} at column {exc.colno})", path=str(path), line=i) from None
        if objects_only and not isinstance(obj, dict):
            raise InputError(f"expected a JSON object, got {type(obj).__name__}", path=str(path), line=i)
        yield i, obj


def _complete(line: str) -> bool:
    """A last line without its newline is still a whole record if it parses as an object
    (a hand-written file); anything else is what a killed writer left behind."""
    if not line.strip():
        return True
    try:
        return isinstance(json.loads(line), dict)
    except json.JSONDecodeError:
        return False


def dumps(record: Any) -> str:
    """One record as one line: no raw newlines can occur (JSON escapes them)."""
    return json.dumps(record, ensure_ascii=False, allow_nan=False, default=_default)


def _default(value: Any) -> Any:
    # numpy scalars and paths reach us from stats and configs
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some file systems refuse directory fsync
        pass
    finally:
        os.close(fd)


def write_jsonl(path: str | Path, records: Iterable[Any], *, on_step: Callable[[str], None] | None = None) -> int:
    """Replace ``path`` with ``records`` atomically; return how many were written.

    The records are written to a temp file in the same directory (same file system, so the
    rename is atomic), synced, renamed over ``path``, and the directory is synced so the
    rename itself survives a crash. If building or writing the records raises, the temp file
    is removed and ``path`` is untouched. ``on_step`` is called with each step's name
    (``opened``, ``record``, ``written``, ``synced``, ``renamed``, ``done``); tests use it
    to kill the process at every step.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    step = on_step or (lambda _name: None)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    n = 0
    try:
        with os.fdopen(fd, "wb") as raw:
            step("opened")
            sink: Any = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) if is_gzip(path) else raw
            for r in records:
                sink.write((dumps(r) + "\n").encode("utf-8"))
                n += 1
                step("record")
            if sink is not raw:
                sink.close()
            raw.flush()
            step("written")
            os.fsync(raw.fileno())
        step("synced")
        if path.exists():  # keep the target's permissions, not mkstemp's 0600
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
        step("renamed")
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)
    step("done")
    return n


def write_json(path: str | Path, obj: Any, *, indent: int | None = 1) -> None:
    """Replace a JSON file atomically (same steps as :func:`write_jsonl`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(obj, ensure_ascii=False, indent=indent, default=_default))
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, (path.stat().st_mode & 0o7777) if path.exists() else 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _last_newline(fh: Any, size: int) -> int:
    """Offset of the last ``\\n`` before ``size``, or -1."""
    pos = size
    while pos > 0:
        start = max(0, pos - 65536)
        fh.seek(start)
        idx = fh.read(pos - start).rfind(b"\n")
        if idx >= 0:
            return start + idx
        pos = start
    return -1


def repair_torn_tail(path: str | Path) -> bool:
    """Cut a torn last line (or end a whole last record with its missing newline).

    Only writers call this, right before appending: readers must never change a file."""
    path = Path(path)
    if not path.exists() or path.stat().st_size == 0:
        return False
    with open(path, "rb+") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return False
        tail_start = _last_newline(fh, size) + 1
        fh.seek(tail_start)
        tail = fh.read(size - tail_start)
        if _complete(tail.decode("utf-8", errors="replace")):
            # A whole record that only lacks its newline: readers count it, so keep it.
            fh.seek(size)
            fh.write(b"\n")
        else:
            fh.truncate(tail_start)
        fh.flush()
        os.fsync(fh.fileno())
        return True


class JsonlAppender:
    """Append-only JSONL output that survives ``kill -9``.

    Each record is one ``write`` of one line, flushed at once (and synced, per ``fsync``). On
    open, a torn last line left by a kill is cut off: its call is in the response cache, so
    nothing paid for is lost. Appending to gzip files is not supported (a torn gzip member
    cannot be repaired in place).
    """

    def __init__(self, path: str | Path, *, fsync: FsyncPolicy = "close"):
        self.path = Path(path)
        if is_gzip(self.path):
            raise InputError("cannot append to a gzip file; decompress it first", path=str(self.path))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fsync = fsync
        self.repaired = repair_torn_tail(self.path)
        self._fh = open(self.path, "a", encoding="utf-8", newline="\n")
        self.written = 0

    def append(self, record: Mapping[str, Any]) -> None:
        try:
            self._fh.write(dumps(record) + "\n")
            self._fh.flush()
            if self.fsync == "record":
                os.fsync(self._fh.fileno())
        except OSError as exc:  # a full disk: the one-line error must name the file
            exc.filename = exc.filename or str(self.path)
            raise
        self.written += 1

    def close(self) -> None:
        if self._fh.closed:
            return
        try:
            self._fh.flush()
            if self.fsync != "never" and self.written:
                os.fsync(self._fh.fileno())
        except OSError as exc:
            exc.filename = exc.filename or str(self.path)
            raise
        finally:
            if not self._fh.closed:
                try:
                    self._fh.close()
                except OSError:
                    pass  # the flush above already failed and said why

    def __enter__(self) -> "JsonlAppender":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def append_jsonl(path: str | Path, record: Mapping[str, Any], *, fsync: FsyncPolicy = "record") -> None:
    """Append one record (e.g. one run-log line), repairing a torn tail first."""
    with JsonlAppender(path, fsync=fsync) as w:
        w.append(record)


def jsonl_files(path: str | Path) -> list[Path]:
    """A file, or every ``*.jsonl``/``*.jsonl.gz`` directly inside a directory, sorted."""
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise InputError("no such file or directory", path=str(path))
    return sorted(p for p in path.iterdir() if p.is_file() and (p.name.endswith(".jsonl") or p.name.endswith(".jsonl.gz")))
