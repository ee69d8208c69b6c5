"""The writer's memory stays small however long the session: SQLite's page cache is
held to ``WRITER_CACHE_KIB`` (its default, 2 MB, filled as the file grew and stayed
full). Read with ``sqlite3_memory_used`` from the SQLite library the ``sqlite3`` module
uses (the process's whole SQLite heap)."""

from __future__ import annotations

import ctypes
import ctypes.util
import os

import pytest
from layout_support import GIB, gpu, proc, snapshot

from gpuwatch.sessions.writer import WRITER_CACHE_KIB, SessionWriter

MIB = 1024**2


def _sqlite_library() -> ctypes.CDLL | None:
    """The SQLite library the ``sqlite3`` module is linked to (loaded once per process,
    so its counters are the module's); None when the module has it built in."""
    name = ctypes.util.find_library("sqlite3")
    if name is None:
        return None
    lib = ctypes.CDLL(name)
    lib.sqlite3_memory_used.restype = ctypes.c_int64
    lib.sqlite3_libversion.restype = ctypes.c_char_p
    import sqlite3
    if lib.sqlite3_libversion().decode() != sqlite3.sqlite_version:
        return None
    return lib


SQLITE = _sqlite_library()


def _snap(t: int):
    return snapshot(t, gpu(0, [proc(pid, 0, GIB + pid * MIB + t * 4096)
                               for pid in range(100, 164)]))


@pytest.mark.skipif(SQLITE is None, reason="the sqlite3 module's library is not shared")
def test_a_growing_session_holds_the_writers_page_cache_small(tmp_path):
    assert SQLITE is not None
    path = tmp_path / "s.sqlite"
    before = SQLITE.sqlite3_memory_used()
    w = SessionWriter(path)
    t = 0
    while os.path.getsize(path) + os.path.getsize(f"{path}-wal") < 6 * MIB:
        for _ in range(100):                  # 64 processes whose memory changes each sample
            w.add_snapshot(_snap(t))
            t += 1
        w.commit()
    held = SQLITE.sqlite3_memory_used() - before
    w.close(None)
    assert held < WRITER_CACHE_KIB * 1024 + 512 * 1024, f"{held / MIB:.2f} MiB"
