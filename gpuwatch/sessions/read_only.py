"""Opening a session for reading, without ever changing it or what lies beside it.

The connection it gives bounds the work of every statement, so no file (damaged or
crafted) can make a report or the sessions listing hang, and decodes text that is not
UTF-8 with replacement characters, so one damaged cell does not hide the rest.
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from gpuwatch.sessions import schema
from gpuwatch.sessions.errors import SessionFileError
from gpuwatch.sessions.file_checks import file_problem, schema_problem

# The work one query may do, in SQLite virtual-machine steps: a fixed allowance plus
# an amount per byte of the file (and its -wal). The heaviest statement of a report, a
# CSV export or a replay takes about 0.2 steps per byte of the file (measured on 1 h of
# the churn and 8-GPU scenarios), so the bound leaves a hundredfold margin; a file
# whose definitions would make a query run far past that is refused as damaged
# instead of hanging the reader (about a second per 5 MB of file at most).
WORK_BASE_STEPS = 50_000_000
WORK_STEPS_PER_BYTE = 20
PROGRESS_EVERY = 100_000

UNREADABLE_DEFINITIONS = "its table definitions are not readable text"


def open_read_only(path: Path) -> sqlite3.Connection:
    """Open a session for reading, after checking it is one this version understands.

    Nothing is ever created beside the file: a file with no ``-wal`` beside it is opened
    ``immutable`` (no locks, no ``-shm``/``-wal``, works in a read-only folder); one
    being recorded (``-wal`` and ``-shm`` present) is opened ``mode=ro`` so its latest
    commits are seen; a ``-wal`` without its ``-shm`` is read from a private temporary
    copy. Text that is not valid UTF-8 (a damaged cell) is decoded with U+FFFD
    replacement characters, so the rest of the session still reads.
    """
    path = Path(path)
    problem = file_problem(path)
    if problem is not None:
        raise SessionFileError(str(path), problem)
    try:
        conn = _connect_read_only(path)
    except (OSError, sqlite3.Error) as exc:
        raise SessionFileError(str(path), f"cannot be opened ({exc})") from None
    conn.text_factory = decode_text
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.Error as exc:
        conn.close()
        raise SessionFileError(str(path), describe_database_error(exc)) from None
    except UnicodeDecodeError:
        conn.close()
        raise SessionFileError(str(path), f"is damaged: {UNREADABLE_DEFINITIONS}") from None
    if app_id != schema.APPLICATION_ID:
        conn.close()
        raise SessionFileError(str(path), "is an SQLite database but not a gpuwatch session")
    if version > schema.SCHEMA_VERSION:
        conn.close()
        raise SessionFileError(
            str(path), f"was written by a newer gpuwatch (session schema {version}; this "
                       f"version reads up to {schema.SCHEMA_VERSION}). Update gpuwatch to "
                       "open it.")
    if version < 1:
        conn.close()
        raise SessionFileError(str(path), f"has an unknown session schema ({version})")
    try:
        problem = schema_problem(conn, version)
    except sqlite3.Error as exc:
        problem = describe_database_error(exc)
    except UnicodeDecodeError:
        problem = f"is damaged: {UNREADABLE_DEFINITIONS}"
    if problem is not None:
        conn.close()
        raise SessionFileError(str(path), problem)
    return conn


def decode_text(data: bytes) -> str:
    """SQLite text to str; bytes that are not UTF-8 become U+FFFD instead of an error."""
    return data.decode("utf-8", "replace")


class QueryTooLongError(sqlite3.OperationalError):
    """A query on a session did more work than a file of its size can need."""


class _ReadConnection(sqlite3.Connection):
    """A read-only connection that may own a temporary copy, removed on close, and
    that bounds the work of each statement (see :data:`WORK_STEPS_PER_BYTE`)."""

    cleanup: tempfile.TemporaryDirectory | None = None
    budget_calls = 0            # progress-handler calls one statement may take
    _calls_left = 0
    overran = False

    def bound_work(self, file_bytes: int) -> None:
        steps = WORK_BASE_STEPS + WORK_STEPS_PER_BYTE * max(0, file_bytes)
        self.budget_calls = max(1, steps // PROGRESS_EVERY)
        self._calls_left = self.budget_calls
        self.set_progress_handler(self._progress, PROGRESS_EVERY)

    def _progress(self) -> int:
        self._calls_left -= 1
        if self._calls_left < 0:
            self.overran = True
            return 1            # SQLite stops the statement: "interrupted"
        return 0

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        self._calls_left = self.budget_calls      # each statement gets the whole budget
        self.overran = False
        try:
            return super().execute(sql, parameters)
        except sqlite3.OperationalError as exc:
            raise self.translate(exc) from None

    def translate(self, exc: sqlite3.OperationalError) -> sqlite3.OperationalError:
        if self.overran:
            return QueryTooLongError(
                f"a query ran past {self.budget_calls * PROGRESS_EVERY:,} steps, far more "
                "than a session of this size needs")
        return exc

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self.cleanup is not None:
                self.cleanup.cleanup()
                self.cleanup = None


def _connect_read_only(path: Path) -> sqlite3.Connection:
    real = path.resolve()
    wal, shm = Path(f"{real}-wal"), Path(f"{real}-shm")
    has_wal = wal.is_file() and wal.stat().st_size > 0
    if has_wal and shm.is_file():
        return _connect(real, "mode=ro")
    if not has_wal:
        return _connect(real, "mode=ro&immutable=1")
    # SQLite would create the -shm beside the file: read a private copy instead
    temp = tempfile.TemporaryDirectory(prefix="gpuwatch-read-")
    try:
        copy = Path(temp.name) / "session.sqlite"
        shutil.copyfile(real, copy)
        shutil.copyfile(wal, f"{copy}-wal")
        conn = _connect(copy, "mode=ro")
    except BaseException:
        temp.cleanup()
        raise
    conn.cleanup = temp  # type: ignore[attr-defined]
    return conn


def _connect(path: Path, params: str) -> sqlite3.Connection:
    conn = sqlite3.connect(f"{path.as_uri()}?{params}", uri=True, factory=_ReadConnection)
    size = 0
    for part in (path, Path(f"{path}-wal")):
        with contextlib.suppress(OSError):
            size += part.stat().st_size
    conn.bound_work(size)  # type: ignore[attr-defined]
    return conn


def translate_error(conn: sqlite3.Connection, exc: sqlite3.Error) -> sqlite3.Error:
    """``exc`` as :class:`QueryTooLongError` when the connection's work bound stopped
    the statement (SQLite itself says only "interrupted")."""
    if isinstance(conn, _ReadConnection) and isinstance(exc, sqlite3.OperationalError):
        return conn.translate(exc)
    return exc


def describe_database_error(exc: sqlite3.DatabaseError) -> str:
    text = str(exc)
    if isinstance(exc, QueryTooLongError):
        return f"is damaged or not a plain session file: {text}"
    if "Could not decode" in text:
        return f"holds text that is not UTF-8 ({text})"
    if "not a database" in text:
        return "is not a gpuwatch session (not an SQLite database)"
    if "malformed" in text or "corrupt" in text:
        return f"is damaged and cannot be read ({text})"
    return f"cannot be read ({text})"
