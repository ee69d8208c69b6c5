"""Where sessions live: the user's data folder (or GPUWATCH_DATA_DIR), one file each."""

from __future__ import annotations

import contextlib
import math
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from gpuwatch.sessions import liveness
from gpuwatch.sessions.errors import SessionFileError

SUFFIX = ".gpuwatch.sqlite"


def data_dir() -> Path:
    override = os.environ.get("GPUWATCH_DATA_DIR")
    if override:
        return Path(override)
    try:
        import platformdirs
    except ImportError:   # a headless run from the source tree, on a box without it
        # what platformdirs answers on Linux: the XDG base directory specification
        home = os.environ.get("XDG_DATA_HOME", "").strip()
        return Path(home if os.path.isabs(home) else Path.home() / ".local" / "share",
                    "gpuwatch")
    return platformdirs.user_data_path("gpuwatch", appauthor=False)


def sessions_dir() -> Path:
    return data_dir() / "sessions"


def new_session_path(now_s: float | None = None) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now_s))
    path = sessions_dir() / f"session-{stamp}{SUFFIX}"
    n = 1
    while path.exists():
        n += 1
        path = sessions_dir() / f"session-{stamp}-{n}{SUFFIX}"
    return path


def list_sessions() -> list[Path]:
    """Session files in the sessions folder, newest first.

    Every entry named ``*.gpuwatch.sqlite`` is listed, also one that cannot be read (a
    dangling link, a link loop, a folder): the caller says what is wrong with it."""
    folder = sessions_dir()
    try:
        if not folder.is_dir():
            return []
        found = list(folder.glob(f"*{SUFFIX}"))
    except OSError:
        return []
    return sorted(found, key=lambda p: (_mtime(p), p.name), reverse=True)


def resolve_session(text: str) -> Path:
    """A path, ``latest``, or the name of a file in the sessions folder.

    ``latest`` is the newest entry that is a regular file (or a link to one); whether
    it can be read is for the reader to say."""
    if not text:
        raise SessionFileError("''", "is not a session; give a session file, its name in "
                               f"the sessions folder ({sessions_dir()}), or 'latest'")
    if text == "latest":
        found = [p for p in list_sessions() if _is_regular_file(p)]
        if not found:
            raise SessionFileError(str(sessions_dir()), "holds no recorded sessions yet")
        return found[0]
    path = Path(text)
    if os.path.lexists(path) or os.sep in text:
        return path
    candidate = sessions_dir() / text
    return candidate if os.path.lexists(candidate) else path


@dataclass(frozen=True)
class PruneResult:
    removed: tuple[Path, ...]
    freed_bytes: int
    kept_live: tuple[Path, ...] = ()                  # being recorded: never removed
    failed: tuple[tuple[Path, str], ...] = ()         # could not be removed, and why


def prune(max_age_days: float | None = None, max_total_bytes: int | None = None,
          now_s: float | None = None, keep: Path | None = None) -> PruneResult:
    """Delete sessions older than ``max_age_days``, then the oldest until the folder fits
    ``max_total_bytes``.

    ``keep`` (the session this process records) and every session being recorded by
    any process (:func:`gpuwatch.sessions.liveness.is_live`) are never removed; they are
    listed in ``kept_live`` when they would otherwise have gone. A session's age is
    that of the newest of its file and its ``-wal``. Stale ``-live.lock`` sidecars are
    removed. Folders and other odd entries are left alone."""
    for value in (max_age_days, max_total_bytes):       # infinity: no limit
        if value is not None and (math.isnan(value) or value < 0):
            raise ValueError(f"a prune limit must be a number of at least 0, got {value}")
    now = time.time() if now_s is None else now_s
    entries = [p for p in reversed(list_sessions()) if _removable(p)]     # oldest first
    sizes = {p: _size(p) for p in entries}
    total = sum(sizes.values())
    if keep is not None and keep not in sizes:
        total += _size(keep)
    removed: list[Path] = []
    kept: list[Path] = []
    failed: list[tuple[Path, str]] = []
    freed = 0
    for p in entries:
        too_old = max_age_days is not None and now - _mtime(p) > max_age_days * 86400
        too_big = max_total_bytes is not None and total > max_total_bytes
        if not (too_old or too_big):
            continue
        if p == keep or liveness.is_live(p, now):
            kept.append(p)
            continue
        try:
            p.unlink(missing_ok=True)
        except OSError as exc:
            failed.append((p, exc.strerror or str(exc)))
            continue
        for side in (Path(f"{p}-wal"), Path(f"{p}-shm")):
            with contextlib.suppress(OSError):
                side.unlink(missing_ok=True)
        removed.append(p)
        freed += sizes[p]
        total -= sizes[p]
    _remove_stale_locks()
    return PruneResult(tuple(removed), freed, tuple(kept), tuple(failed))


def _remove_stale_locks() -> None:
    with contextlib.suppress(OSError):
        for lock in sessions_dir().glob(f"*{SUFFIX}{liveness.LOCK_SUFFIX}"):
            liveness.remove_stale_lock(str(lock)[: -len(liveness.LOCK_SUFFIX)])


def _mtime(p: Path) -> float:
    """The newest modification time of the file (or link) and its ``-wal``."""
    times = []
    for q in (p, Path(f"{p}-wal")):
        try:
            times.append(q.stat().st_mtime)
        except OSError:
            with contextlib.suppress(OSError):
                times.append(q.lstat().st_mtime)
    return max(times, default=0.0)


def _is_regular_file(p: Path) -> bool:
    try:
        return stat.S_ISREG(p.stat().st_mode)
    except OSError:
        return False


def _removable(p: Path) -> bool:
    """Regular files and links (a link is removed, never what it points to)."""
    try:
        mode = p.lstat().st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) or stat.S_ISLNK(mode)


def _size(p: Path) -> int:
    """Bytes on disk for the session: its file and ``-wal`` (0 for a link)."""
    total = 0
    for q in (p, Path(f"{p}-wal")):
        try:
            info = q.lstat()
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            total += info.st_size
    return total
