"""Small ``/proc/<pid>/…`` files read each tick, through descriptors kept open.

Reading ``/proc/<pid>/stat`` by path costs three system calls (open, read, close), and
the open walks the path and builds the pid's directory entries anew. A descriptor kept
open is read again with one ``pread`` at offset 0: the kernel writes the file afresh on
every read from the start. A kept descriptor belongs to the process it was opened for,
not to its pid number: once that process is reaped, reading it fails with ``ESRCH``,
even if the pid has been given to a new process meanwhile. So on ``ESRCH`` the file is
opened again by path, once, and the caller sees whichever process holds the pid now
(its start time tells it apart).

At most ``max_open`` descriptors are kept (a share of the process's limit, so a host
with thousands of GPU processes cannot exhaust it); past that, files are read by path.
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource

_MAX_BYTES = 4096           # /proc/<pid>/stat is ~300 bytes, statm ~40


class Denied(Exception):
    """The process exists but may not be read."""


def default_max_open() -> int:
    """A quarter of the soft limit on open files, at most 2,048."""
    try:
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return 256
    if soft == resource.RLIM_INFINITY:
        return 2048
    return max(0, min(2048, soft // 4))


class ProcFiles:
    """Reads ``<proc_root>/<pid>/<name>``; keeps the descriptors while the pid is wanted.

    ``keep=False`` reads by path every time (a test's tree of ordinary files, where a
    kept descriptor would go on reading a file that was replaced)."""

    def __init__(self, proc_root: str = "/proc", keep: bool = True,
                 max_open: int | None = None) -> None:
        self._root = proc_root
        self._keep = keep
        self._max_open = default_max_open() if max_open is None else max_open
        self._open: dict[tuple[int, str], int] = {}

    @property
    def open_count(self) -> int:
        return len(self._open)

    def read(self, pid: int, name: str) -> bytes:
        """The file's contents. Raises FileNotFoundError or ProcessLookupError when
        there is no such process, :class:`Denied` when it may not be read."""
        key = (pid, name)
        fd = self._open.get(key)
        if fd is not None:
            try:
                return os.pread(fd, _MAX_BYTES, 0)
            except OSError as exc:
                self._drop(key)
                if exc.errno == errno.EACCES:
                    raise Denied from None
                if exc.errno != errno.ESRCH:
                    raise
                # that process is gone: whoever holds the pid now is read by path
        path = f"{self._root}/{pid}/{name}"
        try:
            fd = os.open(path, os.O_RDONLY)
        except PermissionError:
            raise Denied from None
        try:
            data = os.pread(fd, _MAX_BYTES, 0)
        except PermissionError:
            os.close(fd)
            raise Denied from None
        except BaseException:
            os.close(fd)
            raise
        if self._keep and len(self._open) < self._max_open:
            self._open[key] = fd
        else:
            os.close(fd)
        return data

    def forget(self, pid: int) -> None:
        """Close what is kept for ``pid`` (it is no longer listed)."""
        for key in [k for k in self._open if k[0] == pid]:
            self._drop(key)

    def keep_only(self, pids: set[int]) -> None:
        """Close what is kept for every pid not in ``pids``."""
        for key in [k for k in self._open if k[0] not in pids]:
            self._drop(key)

    def close(self) -> None:
        for key in list(self._open):
            self._drop(key)

    def _drop(self, key: tuple[int, str]) -> None:
        fd = self._open.pop(key, None)
        if fd is not None:
            os.close(fd)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):    # at interpreter shutdown os may be gone
            self.close()
