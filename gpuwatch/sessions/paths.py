"""Where sessions live: the user's data folder (or GPUWATCH_DATA_DIR), one file each."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from gpuwatch.sessions.errors import SessionFileError

SUFFIX = ".gpuwatch.sqlite"


def data_dir() -> Path:
    override = os.environ.get("GPUWATCH_DATA_DIR")
    if override:
        return Path(override)
    import platformdirs

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
    """Session files in the sessions folder, newest first."""
    folder = sessions_dir()
    if not folder.is_dir():
        return []
    return sorted(folder.glob(f"*{SUFFIX}"), key=lambda p: p.stat().st_mtime, reverse=True)


def resolve_session(text: str) -> Path:
    """A path, ``latest``, or the name of a file in the sessions folder."""
    if text == "latest":
        found = list_sessions()
        if not found:
            raise SessionFileError(str(sessions_dir()), "holds no recorded sessions yet")
        return found[0]
    path = Path(text)
    if path.exists() or os.sep in text:
        return path
    candidate = sessions_dir() / text
    return candidate if candidate.exists() else path


@dataclass(frozen=True)
class PruneResult:
    removed: tuple[Path, ...]
    freed_bytes: int


def prune(max_age_days: float | None = None, max_total_bytes: int | None = None,
          now_s: float | None = None, keep: Path | None = None) -> PruneResult:
    """Delete sessions older than ``max_age_days``, then the oldest until the folder fits
    ``max_total_bytes``. ``keep`` (the session being recorded) is never removed."""
    now = time.time() if now_s is None else now_s
    files = [p for p in reversed(list_sessions()) if p != keep]     # oldest first
    removed: list[Path] = []
    freed = 0
    sizes = {p: _size(p) for p in files}
    total = sum(sizes.values()) + (_size(keep) if keep else 0)
    for p in files:
        too_old = max_age_days is not None and now - p.stat().st_mtime > max_age_days * 86400
        too_big = max_total_bytes is not None and total > max_total_bytes
        if too_old or too_big:
            for side in (p, Path(f"{p}-wal"), Path(f"{p}-shm")):
                side.unlink(missing_ok=True)
            removed.append(p)
            freed += sizes[p]
            total -= sizes[p]
    return PruneResult(tuple(removed), freed)


def _size(p: Path) -> int:
    return sum(q.stat().st_size for q in (p, Path(f"{p}-wal")) if q.exists())
