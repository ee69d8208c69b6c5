"""Is a session file still being recorded? (So that pruning never deletes it.)

The writer of a session holds an advisory ``flock`` on a sidecar file,
``<session>-live.lock``, for as long as it writes::

    lock = hold_live_lock(path)      # before the session file is created
    try:
        ...                          # create, write, commit, close the session
    finally:
        lock.release()               # after the file is closed: removes the sidecar

The kernel drops the lock when the process ends, however it ends (``kill -9``
included), so a sidecar that nobody holds is stale: :func:`is_live` says False for it
and pruning removes it. The lock is a separate file because SQLite itself takes POSIX
``fcntl`` locks on the database, and those must not be disturbed. Checking never
creates a file.

A session written without the lock (by an older gpuwatch, or where ``fcntl`` is not
available) is judged by its files instead: it is live while its ``-wal`` file exists,
was modified recently (:data:`WAL_RECENT_S`, or three sampling intervals if longer)
and the session has no end time. That guess errs on the side of keeping a file.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

try:
    import fcntl
except ImportError:             # pragma: no cover - not on Windows
    fcntl = None  # type: ignore[assignment]

from gpuwatch.sessions.errors import SessionFileError

LOCK_SUFFIX = "-live.lock"
WAL_RECENT_S = 600.0
ACQUIRE_TRIES = 100             # x 20 ms: a checker holds the lock only for an instant


class SessionBusyError(SessionFileError):
    """Another process is already recording this session."""


def lock_path(session: str | Path) -> Path:
    return Path(f"{session}{LOCK_SUFFIX}")


def wal_path(session: str | Path) -> Path:
    return Path(f"{session}-wal")


class LiveLock:
    """The writer's hold on a session; :meth:`release` (or leaving a ``with``) ends it."""

    def __init__(self, session: Path, fd: int | None):
        self.session = session
        self.path = lock_path(session)
        self._fd = fd

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Remove the sidecar (if it is still ours) and drop the lock. Idempotent."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if _same_file(fd, self.path):
                self.path.unlink(missing_ok=True)
        finally:
            os.close(fd)            # closing drops the flock

    def __enter__(self) -> LiveLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def hold_live_lock(session: str | Path, tries: int = ACQUIRE_TRIES) -> LiveLock:
    """Mark ``session`` as being recorded by this process until ``release()``.

    Call it before creating the session file and keep the returned handle for as long
    as the file is written (a handle that is dropped keeps its descriptor, and so the
    lock, until the process ends); release it after the file is closed. Raises
    :class:`SessionBusyError` if another process holds the session and
    :class:`SessionFileError` if the sidecar cannot be made (e.g. a read-only folder);
    both name the session; ``tries`` bounds the 20 ms waits for a checker. Without
    ``fcntl`` it returns a handle that holds nothing
    (liveness then falls back on the file heuristic)."""
    session = Path(session)
    if fcntl is None:           # pragma: no cover
        return LiveLock(session, None)
    path = lock_path(session)
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    for _ in range(max(1, tries)):
        try:
            fd = os.open(path, flags, 0o644)
        except OSError as exc:
            raise SessionFileError(str(session), "cannot be marked as being recorded "
                                   f"({path.name}: {exc.strerror or exc})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            time.sleep(0.02)
            continue
        except BaseException:
            os.close(fd)
            raise
        if _same_file(fd, path):
            return LiveLock(session, fd)
        os.close(fd)            # a pruner removed a stale sidecar meanwhile: take a new one
    raise SessionBusyError(str(session), "is being recorded by another gpuwatch process")


def lock_state(session: str | Path) -> bool | None:
    """True: a writer holds the sidecar lock; False: a stale sidecar (its writer is gone);
    None: no sidecar (or no ``fcntl``), so the lock cannot tell."""
    if fcntl is None:           # pragma: no cover
        return None
    fd = _open_sidecar(lock_path(session))
    if fd is None:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False
    finally:
        os.close(fd)


def is_live(session: str | Path, now_s: float | None = None) -> bool:
    """Whether ``session`` is being written now, by this or another process."""
    state = lock_state(session)
    if state is not None:
        return state
    return _looks_written(Path(session), time.time() if now_s is None else now_s)


def remove_stale_lock(session: str | Path) -> bool:
    """Remove the sidecar if nobody holds it; True if one was removed."""
    if fcntl is None:           # pragma: no cover
        return False
    path = lock_path(session)
    fd = _open_sidecar(path)
    if fd is None:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        if not _same_file(fd, path):
            return False
        path.unlink(missing_ok=True)     # a writer racing for it notices and makes a new one
        return True
    finally:
        os.close(fd)


def _open_sidecar(path: Path) -> int | None:
    try:
        return os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
                       | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:             # absent, a link, unreadable: it cannot say anything
        return None


def _same_file(fd: int, path: Path) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _looks_written(session: Path, now_s: float) -> bool:
    """The fallback: a recent ``-wal`` beside a session that has no end time."""
    try:
        wal_mtime = os.stat(wal_path(session)).st_mtime
    except OSError:
        return False
    try:
        from gpuwatch.sessions.reader import SessionReader  # numpy + sqlite3: on demand

        with SessionReader(session) as reader:
            ended, interval = reader.end_and_interval()
    except SessionFileError:
        ended, interval = None, None   # unreadable but its log is moving: keep it
    if ended is not None:
        return False
    recent = max(WAL_RECENT_S, 3 * interval) if interval else WAL_RECENT_S
    return now_s - wal_mtime < recent
