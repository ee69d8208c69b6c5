"""Outputs that must never be written over: the input being read, and any session.

``report -o``, ``gui --screenshot`` (and ``record --out``, which never replaces any
file) check their output with :func:`overwrite_problem` before anything is written and
again just before the finished file is renamed into place. Refused, with one sentence:

- the very file being read (the same inode, whatever the path: a link, a hard link,
  ``./x`` for ``x``);
- a gpuwatch session file (its SQLite header carries gpuwatch's application id), live
  or not, and any file that a recording marks as live (its ``-live.lock`` is held);
- a session's side files: its ``-wal``, ``-shm`` or ``-live.lock``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from gpuwatch.sessions import liveness
from gpuwatch.sessions.schema import APPLICATION_ID

_SQLITE_MAGIC = b"SQLite format 3\x00"
_SIDE_SUFFIXES = ("-wal", "-shm", "-journal", liveness.LOCK_SUFFIX)


def _identity(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return (info.st_dev, info.st_ino) if stat.S_ISREG(info.st_mode) else None


def is_session_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` holds a gpuwatch session (checked on its first 72 bytes)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except (OSError, ValueError):
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        head = os.read(fd, 72)
    except OSError:
        return False
    finally:
        os.close(fd)
    return head.startswith(_SQLITE_MAGIC) and len(head) == 72 and \
        int.from_bytes(head[68:72], "big") == APPLICATION_ID


def overwrite_problem(target: str | os.PathLike[str], what: str,
                      inputs: Iterable[str | os.PathLike[str]] = ()) -> str | None:
    """Why ``what`` must not be written at ``target``, or None. ``inputs`` are the
    files the command reads."""
    target = Path(target)
    here = _identity(target)
    if here is not None:
        for source in inputs:
            if _identity(source) == here:
                return (f"{target} is {source}, the file being read; the {what} never "
                        "replaces its input (give another file name)")
        if is_session_file(target) or liveness.lock_state(target):
            return (f"{target} is a gpuwatch session; the {what} never replaces a session "
                    "(give another file name)")
    name = target.name
    for suffix in _SIDE_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            owner = target.with_name(name[: -len(suffix)])
            if is_session_file(owner) or liveness.lock_state(owner):
                return (f"{target} belongs to the session {owner}; the {what} is not "
                        "written there (give another file name)")
    return None
