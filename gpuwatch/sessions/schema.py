"""The session file: an SQLite database with a versioned schema.

``PRAGMA application_id`` marks the file as gpuwatch's (so a foreign database is
refused, not misread) and ``PRAGMA user_version`` holds the schema version. A file from a
newer gpuwatch is refused with a clear message, and reading never modifies a file (it is
opened read-only).

Versions:

1. Every process's memory at every sample: one ``process_sample`` row per process and
   sample (a day of 512 processes at 1 Hz is 44 million rows).
2. Only changes: one ``process_change`` row when a process appears, when its memory
   changes, and when it is missing from a listing; the reader carries each value over
   the GPU's samples until the next row. ``process.last_seen_s`` is NULL while the
   process was listed at the last sample written (filled in when the file is closed).
   GPU rows are unchanged: one per GPU and sample, the time base. Files written since
   GPUs measure their bandwidth (GPM) end each GPU row with
   ``measured_bandwidth_bytes_per_s``, beside the estimate; an older reader ignores the
   column, and this one reads it as unknown where a file lacks it.

New files are written as version 2; version 1 files are read as they are (the reader
knows both layouts), so no file is ever rewritten. A gpuwatch that reads only version 1
refuses a version-2 file ("written by a newer gpuwatch") instead of misreading it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sqlite3
import stat
import tempfile
from pathlib import Path
from typing import Any

from gpuwatch.sessions.errors import SessionExistsError, SessionFileError

APPLICATION_ID = 0x67707777      # "gpww"
SCHEMA_VERSION = 2

_COMMON = """
CREATE TABLE session (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    uuid TEXT NOT NULL,
    host TEXT,
    backend_kind TEXT NOT NULL,
    driver_version TEXT,
    nvml_version TEXT,
    scenario TEXT,
    interval_s REAL,
    started_at_s REAL NOT NULL,          -- Unix time; every other time is seconds from here
    ended_at_s REAL,                     -- NULL while recording (or after a crash)
    gpuwatch_version TEXT
);
CREATE TABLE gpu (
    idx INTEGER PRIMARY KEY,
    uuid TEXT,
    name TEXT,
    total_bytes INTEGER
);
CREATE TABLE gpu_sample (
    t_s REAL NOT NULL,
    gpu INTEGER NOT NULL,
    state TEXT NOT NULL,
    used_bytes INTEGER,
    reserved_bytes INTEGER,
    total_bytes INTEGER,
    gpu_util_percent REAL,
    memory_busy_percent REAL,
    estimated_bandwidth_bytes_per_s REAL,
    pcie_tx_bytes_per_s REAL,
    pcie_rx_bytes_per_s REAL,
    temperature_c REAL,
    power_w REAL
);
CREATE TABLE hint (
    id INTEGER PRIMARY KEY,
    code TEXT NOT NULL,
    severity TEXT NOT NULL,
    gpu INTEGER,
    pid INTEGER,
    title TEXT NOT NULL,
    detail TEXT,
    actions TEXT,                        -- JSON list of strings
    first_seen_s REAL NOT NULL,
    last_seen_s REAL NOT NULL,
    closed_s REAL
);
CREATE TABLE event (
    t_s REAL NOT NULL,
    kind TEXT NOT NULL,                  -- gpu-lost, gpu-recovered, process-started, ...
    gpu INTEGER,
    pid INTEGER,
    detail TEXT
);
CREATE TABLE budget_link (
    gpu INTEGER NOT NULL,
    pid INTEGER NOT NULL,
    label TEXT,
    estimate TEXT NOT NULL,              -- the gpuwatch.estimate/1 document
    linked_at_s REAL NOT NULL
);
"""

_GPU_INDEX = """
CREATE INDEX IF NOT EXISTS gpu_sample_by_gpu ON gpu_sample (gpu, t_s);
"""

_PROCESS = """
CREATE TABLE process (
    id INTEGER PRIMARY KEY,
    gpu INTEGER NOT NULL,
    pid INTEGER NOT NULL,
    name TEXT,
    cmdline TEXT,                        -- JSON list of arguments
    user TEXT,
    container TEXT,
    first_seen_s REAL NOT NULL,
    last_seen_s REAL{last_seen}
    peak_used_bytes INTEGER
);
"""

# version 1: one process_sample row per process and sample (read, no longer written)
SCHEMA_V1 = _COMMON + _PROCESS.format(last_seen=" NOT NULL,") + """
CREATE TABLE process_sample (
    t_s REAL NOT NULL,
    process_id INTEGER NOT NULL REFERENCES process (id),
    used_bytes INTEGER
);
CREATE INDEX process_sample_by_process ON process_sample (process_id, t_s);
""" + _GPU_INDEX

# version 2: a process_change row only where a process's memory or presence changes
SCHEMA_V2 = _COMMON + _PROCESS.format(
    last_seen=",                    -- NULL: listed at the last sample written") + """
CREATE TABLE process_change (
    process_id INTEGER NOT NULL REFERENCES process (id),
    sample INTEGER NOT NULL,             -- n: the n-th gpu_sample row of the process's GPU
                                         -- (from 0, in the order written)
    used_bytes INTEGER,                  -- held from that sample on, until the next row
    listed INTEGER NOT NULL              -- 1: listed from that sample on; 0: missing
);
-- measured by the GPU's performance monitor (GPM), beside estimated_bandwidth_bytes_per_s
-- (busy % x peak); added within version 2: files written before lack it
ALTER TABLE gpu_sample ADD COLUMN measured_bandwidth_bytes_per_s REAL;
"""

# Built when a version-2 file is closed, not while it is written: kept up to date on
# every commit, they made each second's commit write ~25 times the pages (every
# process's new row lands on its own page of the process index). A file that was not
# closed (being recorded, or cut short by a crash) is read without them.
INDEX_PROCESS_CHANGES = "process_change_by_process"
READ_INDEXES_V2 = _GPU_INDEX + f"""
CREATE INDEX IF NOT EXISTS {INDEX_PROCESS_CHANGES} ON process_change (process_id, sample);
"""


# The tables (and the columns of each) a reader uses, per schema version. A file is read
# only if each is a real table (not a view, not a virtual table) with these columns,
# and the file holds no view and no trigger at all.
_COMMON_TABLES = {
    "session": ("id", "uuid", "host", "backend_kind", "driver_version", "scenario",
                "interval_s", "started_at_s", "ended_at_s", "gpuwatch_version"),
    "gpu": ("idx", "uuid", "name", "total_bytes"),
    "gpu_sample": ("t_s", "gpu", "state", "used_bytes", "reserved_bytes", "total_bytes",
                   "gpu_util_percent", "memory_busy_percent",
                   "estimated_bandwidth_bytes_per_s", "pcie_tx_bytes_per_s",
                   "pcie_rx_bytes_per_s", "temperature_c", "power_w"),
    "hint": ("id", "code", "severity", "gpu", "pid", "title", "detail", "actions",
             "first_seen_s", "last_seen_s", "closed_s"),
    "event": ("t_s", "kind", "gpu", "pid", "detail"),
    "budget_link": ("gpu", "pid", "label", "estimate", "linked_at_s"),
    "process": ("id", "gpu", "pid", "name", "cmdline", "user", "container", "first_seen_s",
                "last_seen_s", "peak_used_bytes"),
}
EXPECTED_TABLES = {
    1: {**_COMMON_TABLES, "process_sample": ("t_s", "process_id", "used_bytes")},
    2: {**_COMMON_TABLES, "process_change": ("process_id", "sample", "used_bytes", "listed")},
}

# The work one query may do, in SQLite virtual-machine steps: a fixed allowance plus
# an amount per byte of the file (and its -wal). The heaviest statement of a report, a
# CSV export or a replay takes about 0.2 steps per byte of the file (measured on 1 h of
# the churn and 8-GPU scenarios), so the bound leaves a hundredfold margin; a file
# whose definitions would make a query run far past that is refused as damaged
# instead of hanging the reader (about a second per 5 MB of file at most).
WORK_BASE_STEPS = 50_000_000
WORK_STEPS_PER_BYTE = 20
PROGRESS_EVERY = 100_000


def prepare_new(path: Path) -> None:
    """Check that a new session file may be made at ``path``: nothing there yet, and its
    folder present (gpuwatch's own sessions folder is created; no other is)."""
    if os.path.lexists(path):
        raise SessionExistsError(str(path), "already exists; choose another file")
    prepare_folder(path)


def prepare_folder(path: Path) -> None:
    """The folder of a new session: it must exist, unless it is gpuwatch's own sessions
    folder, which is created."""
    folder = path.parent
    if not folder.is_dir() and not _is_sessions_folder(folder):
        raise SessionFileError(str(path), f"cannot be created: the folder {folder} does "
                                          "not exist (folders are not created)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SessionFileError(str(path), f"cannot be created ({exc})") from None


def claim(path: Path) -> None:
    """Create ``path`` as an empty file, exclusively (``O_CREAT | O_EXCL``, no link
    followed): of two processes that pick the same name at the same instant, exactly
    one gets it and the other is told it exists (:class:`SessionExistsError`)."""
    flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_CLOEXEC", 0))
    try:
        fd = os.open(path, flags, 0o644)
    except FileExistsError:
        raise SessionExistsError(str(path), "already exists; choose another file") from None
    except OSError as exc:
        raise SessionFileError(str(path), f"cannot be created ({exc.strerror or exc})") \
            from None
    os.close(fd)


def create(path: Path, claimed: bool = False) -> sqlite3.Connection:
    """A new, empty session file.

    Refuses anything already at the path (a file, a pipe, even a dangling link): the
    file is created exclusively (:func:`claim`) unless the caller has ``claimed`` it
    already. A missing folder is created only when it is gpuwatch's own sessions
    folder; a user-given path in a folder that does not exist is refused."""
    if not claimed:
        prepare_new(path)
        claim(path)
    try:
        conn = sqlite3.connect(path, check_same_thread=False)
    except (OSError, sqlite3.Error) as exc:
        _remove_claim(path)
        raise SessionFileError(str(path), f"cannot be created ({exc})") from None
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(SCHEMA_V2)
        conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        conn.commit()
    except sqlite3.Error as exc:
        conn.close()
        _remove_claim(path)
        raise SessionFileError(str(path), f"cannot be written ({exc})") from None
    return conn


def _remove_claim(path: Path) -> None:
    """A file this process claimed but could not make a session of: removed, with its
    side files, so no empty or half-made session is left behind."""
    for side in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")):
        with contextlib.suppress(OSError):
            side.unlink()


def _is_sessions_folder(folder: Path) -> bool:
    from gpuwatch.sessions.paths import sessions_dir  # paths imports this module

    try:
        return folder.resolve() == sessions_dir().resolve()
    except (OSError, RuntimeError):
        return False


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
        raise SessionFileError(str(path), "is damaged: its table definitions are not "
                                          "readable text") from None
    if app_id != APPLICATION_ID:
        conn.close()
        raise SessionFileError(str(path), "is an SQLite database but not a gpuwatch session")
    if version > SCHEMA_VERSION:
        conn.close()
        raise SessionFileError(
            str(path), f"was written by a newer gpuwatch (session schema {version}; this "
                       f"version reads up to {SCHEMA_VERSION}). Update gpuwatch to open it.")
    if version < 1:
        conn.close()
        raise SessionFileError(str(path), f"has an unknown session schema ({version})")
    try:
        problem = schema_problem(conn, version)
    except sqlite3.Error as exc:
        problem = describe_database_error(exc)
    except UnicodeDecodeError:
        problem = "is damaged: its table definitions are not readable text"
    if problem is not None:
        conn.close()
        raise SessionFileError(str(path), problem)
    return conn


def schema_problem(conn: sqlite3.Connection, version: int) -> str | None:
    """Why the file's tables are not the session tables of ``version``, or None.

    Views, triggers and virtual tables are refused outright: a view can stand in for a
    table with the right columns and run any query (an endless recursive one) when it
    is read, and a virtual table runs a module's code. Other extra tables and indexes
    are left alone (never read)."""
    objects = conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    for kind, name, sql in objects:
        label = _shown_name(name)
        if kind in ("view", "trigger"):
            return (f"is not a plain session file: it holds a {kind} ({label}); views and "
                    "triggers are not read")
        if kind == "table" and isinstance(sql, str) and \
                sql.lstrip()[:21].upper().split()[:2] == ["CREATE", "VIRTUAL"]:
            return (f"is not a plain session file: {label} is a virtual table; only "
                    "real tables are read")
    tables = {name for kind, name, _ in objects if kind == "table"}
    for table, columns in EXPECTED_TABLES[version].items():
        if table not in tables:
            return f"is damaged: it has no {table} table"
        info = conn.execute(f"PRAGMA table_xinfo({table})").fetchall()
        generated = [row[1] for row in info if row[6] in (2, 3)]
        if generated:
            return (f"is not a plain session file: {table}.{_shown_name(generated[0])} is a "
                    "generated column; only stored values are read")
        present = {row[1] for row in info}
        missing = [c for c in columns if c not in present]
        if missing:
            return f"is damaged: the {table} table has no {missing[0]} column"
    return None


def _shown_name(name: object) -> str:
    from gpuwatch.core.safe_text import clip

    return clip(name if isinstance(name, str) else repr(name), 60)


def decode_text(data: bytes) -> str:
    """SQLite text to str; bytes that are not UTF-8 become U+FFFD instead of an error."""
    return data.decode("utf-8", "replace")


def file_problem(path: Path) -> str | None:
    """Why ``path`` is not a file that can be opened as a session, or None."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            return f"is a symbolic link to nothing ({os.readlink(path)})"
        return "no such session file"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "is a symbolic link loop"
        return f"cannot be read ({exc.strerror or exc})"
    if stat.S_ISDIR(info.st_mode):
        return "is a folder, not a session file"
    if not stat.S_ISREG(info.st_mode):
        return "is not a regular file (a pipe, device or socket), so it is not read"
    if info.st_size == 0:
        return "is empty (nothing was recorded in it)"
    if not os.access(path, os.R_OK):
        return "cannot be read (permission denied)"
    return None


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
