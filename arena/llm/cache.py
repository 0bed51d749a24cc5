"""Persistent, content-addressed response cache (SQLite in WAL mode).

Each row is keyed by a hash of everything that determines what was served: the endpoint's
normalised base URL and model, the messages, every request param (sampling, ``extra_body``,
``response_format``/grammar, ...), the prompt-template version and a repeat index. A rerun
therefore costs no calls, a changed prompt never gets a stale answer, and two servers that
both call their model "llama" never share answers. (Entries written before the base URL was
part of the key are misses now: they are re-asked once, then cached under the new key.)
Failures are stored with ``status='failed'`` so they are visible and can be re-asked, but
they are never returned as answers. A reply that arrived but that its caller could not use
(an unparseable judge verdict, say) is kept as ``status='ok'`` with ``rejected`` set to the
reason: it is still served on resume (it was paid for), and ``--retry-failed`` re-asks it.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import os
import sqlite3
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    stage TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    text TEXT,
    payload TEXT,
    error TEXT,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0,
    cost REAL NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL,
    rejected TEXT
);
CREATE INDEX IF NOT EXISTS responses_status ON responses(status);
"""


DEFAULT_BASE_URL = "https://api.openai.com/v1"


@functools.lru_cache(maxsize=256)  # called for every request; a run has a handful of URLs
def normalise_base_url(url: str | None) -> str:
    """One spelling per server: lower-case scheme and host, default ports and trailing
    slashes dropped; ``None`` is the SDK's default (OpenAI)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit((url or DEFAULT_BASE_URL).strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    port = parts.port
    netloc = host if port is None or (scheme, port) in {("http", 80), ("https", 443)} else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path.rstrip("/"), parts.query, ""))


def cache_key(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    params: Mapping[str, Any],
    template_version: str = "",
    repeat: int = 0,
    base_url: str | None = None,
) -> str:
    """SHA-256 over the canonical JSON of what determines a response (see the module doc)."""
    blob = json.dumps(
        {
            "base_url": normalise_base_url(base_url),
            "model": model,
            "messages": list(messages),
            "params": dict(params),
            "template": template_version,
            "repeat": repeat,
        },
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _unlink_quietly(path: Path) -> None:
    try:
        path.unlink(missing_ok=True)
    except OSError:
        pass


def _why_not_writable(folder: Path) -> OSError | None:
    """SQLite only says "unable to open database file"; name the real cause when we can."""
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return OSError(errno.EROFS, "read-only file system")
        if not os.access(folder, os.W_OK):
            return OSError(errno.EACCES, "permission denied")
    except OSError as exc:
        return exc
    return None


class CacheWriteError(OSError):
    """The cache cannot store a response (disk full, read-only, I/O error).

    A response that cannot be stored is a paid call that a rerun would pay for again, so the
    client stops the run at once when it sees this: no further requests are sent. It is an
    ``OSError`` (with ``errno`` and ``filename``) so command lines report it in one line.
    """

    def __init__(self, path: Path, cause: BaseException, *, stored: bool = False):
        msg = str(cause).lower()
        code = getattr(cause, "sqlite_errorcode", None)
        if code == getattr(sqlite3, "SQLITE_FULL", 13) or "full" in msg or getattr(cause, "errno", None) == errno.ENOSPC:
            num, what = errno.ENOSPC, "disk full"
        elif getattr(cause, "errno", None) == errno.EACCES:
            num, what = errno.EACCES, "permission denied"
        elif getattr(cause, "errno", None) == errno.EROFS:
            num, what = errno.EROFS, "read-only file system"
        elif "readonly" in msg or "read-only" in msg:
            num, what = errno.EROFS, "read-only database"
        elif "unable to open" in msg:
            num, what = errno.EACCES, "cannot open (read-only or missing folder)"
        else:
            num, what = errno.EIO, f"I/O error ({cause})"
        super().__init__(num, what, str(path))
        self.reason = what
        # True when this response did get stored (into the released reserve) even so.
        self.stored = stored

    def __str__(self) -> str:
        return f"{self.filename}: cannot store responses in the cache: {self.reason}; stopped before sending more requests"


@dataclass(frozen=True)
class CachedResponse:
    key: str
    status: str
    text: str | None
    payload: dict[str, Any]
    error: str | None
    prompt_tokens: int
    completion_tokens: int
    reasoning_tokens: int
    cost: float
    attempts: int
    rejected: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def usable(self) -> bool:
        """Served without a new call even under ``retry_failed``: ok and not rejected."""
        return self.ok and self.rejected is None


# Space held next to the cache for the replies already in flight when the disk fills up.
RESERVE_MAX_BYTES = 4 << 20


class ResponseCache:
    """SQLite-backed cache; every write is committed at once so a kill loses nothing paid for.

    A full disk must not lose the replies that were already on their way when it filled up:
    the cache holds a reserve file (``<cache>-reserve.<pid>.<id>``: a quarter of the free space, at most
    4 MiB) and releases it at the first ``SQLITE_FULL``, so that reply and those in flight can
    still be committed while the client stops sending. The reserve is removed on ``close``.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Per process and object, so two users of one cache never free each other's reserve.
        self._reserve = self.path.with_name(f"{self.path.name}-reserve.{os.getpid()}.{id(self):x}")
        self.full: CacheWriteError | None = None
        self._drop_stale_reserves()
        self._hold_reserve()
        # Removed when this object goes away or the interpreter exits, even without close().
        self._finalizer = weakref.finalize(self, _unlink_quietly, self._reserve)
        try:
            # check_same_thread=False: the asyncio client may hand writes to a worker thread.
            self._db = sqlite3.connect(str(self.path), timeout=60, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode: a commit survives a crash or kill -9 of this process (only
            # power loss can roll back the last ones) without an fsync per call.
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(SCHEMA)
            # Caches written before rejections existed lack the column; add it in place.
            cols = {r[1] for r in self._db.execute("PRAGMA table_info(responses)")}
            if "rejected" not in cols:
                self._db.execute("ALTER TABLE responses ADD COLUMN rejected TEXT")
        except sqlite3.OperationalError as exc:
            raise CacheWriteError(self.path, _why_not_writable(self.path.parent) or exc) from None

    def _drop_stale_reserves(self) -> None:
        """Reserves left by killed processes (their pid is gone) are freed."""
        for p in self.path.parent.glob(f"{self.path.name}-reserve.*"):
            try:
                os.kill(int(p.name.rsplit(".", 2)[-2]), 0)
            except ProcessLookupError:
                _unlink_quietly(p)
            except (ValueError, PermissionError, OSError):
                pass

    def _hold_reserve(self) -> None:
        try:
            vfs = os.statvfs(self.path.parent)
            have = self._reserve.stat().st_size if self._reserve.exists() else 0
            size = min(RESERVE_MAX_BYTES, (vfs.f_bavail * vfs.f_frsize + have) // 4)
            with open(self._reserve, "ab") as fh:
                if size > have:
                    os.posix_fallocate(fh.fileno(), 0, size)
        except OSError:  # no room or no write access: SQLite itself will say so
            try:
                self._reserve.unlink(missing_ok=True)
            except OSError:
                pass

    def _release_reserve(self) -> bool:
        try:
            self._reserve.unlink()
            return True
        except OSError:
            return False

    def close(self) -> None:
        self._db.close()
        self._finalizer()

    def __enter__(self) -> "ResponseCache":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, key: str) -> CachedResponse | None:
        row = self._db.execute(
            "SELECT key, status, text, payload, error, prompt_tokens, completion_tokens,"
            " reasoning_tokens, cost, attempts, rejected FROM responses WHERE key = ?",
            (key,),
        ).fetchone()
        if row is None:
            return None
        return CachedResponse(
            key=row[0],
            status=row[1],
            text=row[2],
            payload=json.loads(row[3]) if row[3] else {},
            error=row[4],
            prompt_tokens=row[5],
            completion_tokens=row[6],
            reasoning_tokens=row[7],
            cost=row[8],
            attempts=row[9],
            rejected=row[10],
        )

    def put(
        self,
        key: str,
        *,
        model: str,
        endpoint: str,
        stage: str,
        ok: bool,
        text: str | None,
        payload: Mapping[str, Any] | None = None,
        error: str | None = None,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        reasoning_tokens: int = 0,
        cost: float = 0.0,
        attempts: int = 0,
    ) -> None:
        if ok and text is None:
            raise ValueError("a successful response needs text")
        # A success never gets overwritten by a later failure of the same request; a rejected
        # success is replaced by whatever the re-ask brings.
        self._write(
            "INSERT INTO responses (key, model, endpoint, stage, status, text, payload, error,"
            " prompt_tokens, completion_tokens, reasoning_tokens, cost, attempts, created)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
            " ON CONFLICT(key) DO UPDATE SET status=excluded.status, text=excluded.text,"
            " payload=excluded.payload, error=excluded.error, prompt_tokens=excluded.prompt_tokens,"
            " completion_tokens=excluded.completion_tokens, reasoning_tokens=excluded.reasoning_tokens,"
            " cost=excluded.cost, attempts=excluded.attempts, created=excluded.created, rejected=NULL"
            " WHERE responses.status = 'failed' OR responses.rejected IS NOT NULL",
            (
                key,
                model,
                endpoint,
                stage,
                "ok" if ok else "failed",
                text,
                json.dumps(dict(payload or {}), ensure_ascii=False),
                error,
                prompt_tokens,
                completion_tokens,
                reasoning_tokens,
                cost,
                attempts,
                time.time(),
            ),
        )

    def _write(self, sql: str, args: tuple[Any, ...]) -> sqlite3.Cursor:
        """One autocommitted statement. A storage failure becomes :class:`CacheWriteError`;
        on the first one the reserve is released and the statement retried, so that reply is
        kept (``stored=True``) and the error still stops the run."""
        try:
            cur = self._db.execute(sql, args)
        except sqlite3.IntegrityError:
            raise
        except sqlite3.DatabaseError as exc:
            error = CacheWriteError(self.path, exc)
            if self.full is None:
                self.full = error
            if not (error.errno == errno.ENOSPC and self._release_reserve()):
                raise error from None
            try:
                self._db.execute(sql, args)
            except sqlite3.DatabaseError:
                raise error from None
            raise CacheWriteError(self.path, exc, stored=True) from None
        return cur

    def reject(self, key: str, reason: str) -> bool:
        """Mark a stored success as unusable by its caller; returns whether a row was marked."""
        cur = self._write(
            "UPDATE responses SET rejected = ? WHERE key = ? AND status = 'ok'", (reason or "rejected", key)
        )
        return cur.rowcount > 0

    def stats(self) -> dict[str, int]:
        rows = self._db.execute("SELECT status, COUNT(*) FROM responses GROUP BY status").fetchall()
        return {status: n for status, n in rows}

    def failed_keys(self) -> Iterator[str]:
        for (key,) in self._db.execute("SELECT key FROM responses WHERE status = 'failed' OR rejected IS NOT NULL"):
            yield key
