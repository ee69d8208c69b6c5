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

This module holds the tables of each version and makes new files; reading one is
:mod:`gpuwatch.sessions.read_only`, and the checks a file passes before it is read are
:mod:`gpuwatch.sessions.file_checks`.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

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
