"""Which watched processes have exited, for every one of them with one system call.

A pidfd (``pidfd_open``, Linux 5.3+) refers to one process, not to its pid number: it
becomes readable when that process exits (a zombie has exited) and stays so, and no
later process that is given the same pid can make it unreadable again. So while a
process's pidfd polls as not readable, that process is alive and still holds its pid:
its identity need not be read again. One ``poll`` over all the pidfds answers for every
process at once, where reading ``/proc/<pid>/stat`` costs a system call and a parse per
process.

Where pidfds are not available (another OS, an old kernel, a seccomp filter that
refuses them), :meth:`ExitWatch.watch` answers False and the caller reads the process
as before.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select


class ExitWatch:
    """pidfds of up to ``max_open`` processes, polled together."""

    def __init__(self, max_open: int) -> None:
        self._max_open = max_open
        self._fds: dict[int, int] = {}         # pid -> its pidfd
        self._pids: dict[int, int] = {}        # pidfd -> pid
        self._poll = select.poll()
        self.available = hasattr(os, "pidfd_open") and max_open > 0

    def __len__(self) -> int:
        return len(self._fds)

    def watching(self, pid: int) -> bool:
        return pid in self._fds

    def watch(self, pid: int) -> bool:
        """Watch the process that holds ``pid`` now. False when it cannot be watched
        (no pidfds here, the limit reached, not a process's main thread, gone)."""
        if pid in self._fds:
            return True
        if not self.available or len(self._fds) >= self._max_open:
            return False
        try:
            fd = os.pidfd_open(pid)
        except OSError as exc:
            if exc.errno in (errno.ENOSYS, errno.EPERM):   # never here: stop trying
                self.available = False
            return False
        self._fds[pid] = fd
        self._pids[fd] = pid
        self._poll.register(fd, select.POLLIN)
        return True

    def exited(self) -> set[int]:
        """The watched pids whose process has exited (zombies included), without
        waiting. They stay watched (and keep answering) until :meth:`forget`."""
        if not self._fds:
            return set()
        return {self._pids[fd] for fd, _events in self._poll.poll(0)}

    def forget(self, pid: int) -> None:
        fd = self._fds.pop(pid, None)
        if fd is not None:
            del self._pids[fd]
            self._poll.unregister(fd)
            os.close(fd)

    def keep_only(self, pids: set[int]) -> None:
        for pid in [p for p in self._fds if p not in pids]:
            self.forget(pid)

    def close(self) -> None:
        for pid in list(self._fds):
            self.forget(pid)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):    # at interpreter shutdown os may be gone
            self.close()
