"""The checks a file passes before a session is read from it.

A session file may come from anywhere (copied from another machine, damaged, crafted),
so what sits at the path and the tables in the file are checked before any row is
read: a foreign or damaged file is refused with a sentence saying why, never misread.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
from pathlib import Path

from gpuwatch.sessions.schema import EXPECTED_TABLES


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
