"""Host details of GPU processes from psutil and /proc (the only psutil importer).

What a tick costs is what a monitor costs, so the work is split by how often it changes:

- Static facts (name, command line, user, start time, container) are read once per
  process, through psutil and ``/proc/<pid>/cgroup``, and kept while the process lives.
- Each tick reads two small files per process, through descriptors kept open (one
  ``pread`` each: :mod:`gpuwatch.telemetry.proc_files`). ``/proc/<pid>/stat`` gives its state (a
  zombie has exited), its CPU time (CPU % is the change since the previous tick, so the
  first reading is None: unknown, not 0) and its start time: one that differs from the
  start the facts were read with is a recycled pid, whose facts are read again.
  ``/proc/<pid>/statm`` gives the resident set size. While nobody looks at them
  (:meth:`PsutilHost.set_detail`), both are read every tenth tick only, and one poll of
  the processes' pidfds tells each tick which have exited. psutil reads the same files with
  a process object, a context manager and a named tuple per call, and needs a second
  process object to notice a recycled pid: several times the cost (docs/cost.md).
- Where there is no ``/proc`` the tick asks psutil instead (one fresh process object,
  so the start time is read anew, and ``oneshot``).

A process that has exited is not found, zombies (exited, not yet reaped) included: the
backend still lists it when the driver does, as exited. A process that may not be read
(``hidepid``, another user's process under some kernels) is found with what could be
read and None for the rest. Names and command lines are kept exactly as the process
set them: they are the process's own words, shown as data, never parsed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple

import psutil

from gpuwatch.telemetry.exit_watch import ExitWatch
from gpuwatch.telemetry.hostinfo import HostProcess, container_from_cgroup
from gpuwatch.telemetry.proc_files import Denied, ProcFiles, default_max_open

# The kernel's inode number of the initial PID namespace (PROC_PID_INIT_INO).
_INITIAL_PID_NAMESPACE_INODE = 0xEFFFFFFC
_EXITED_STATES = frozenset({b"Z", b"X", b"x"})    # zombie, dead
_EXITED_STATUSES = frozenset({psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD})
_GONE = (psutil.NoSuchProcess, ProcessLookupError, FileNotFoundError)   # ZombieProcess too
_EXEC_RETRIES = 3


class _Reading(NamedTuple):
    """What one tick learns of a process."""

    exited: bool
    cpu_s: float              # user + system CPU time so far
    start: float              # identity: start time in clock ticks since boot, or Unix s
    rss_bytes: int | None     # None: not read this tick (the last reading stands)


_Denied = Denied       # the process exists but may not be read


@dataclass(slots=True)
class _Known:
    start: float | None       # the identity the facts were read with (None: unreadable)
    name: str | None
    cmdline: tuple[str, ...]
    user: str | None
    container: str | None
    started_at_s: float | None
    cpu_s: float | None = None    # CPU time at the previous reading
    cpu_percent: float | None = None   # the CPU % worked out then
    rss_bytes: int | None = None  # the last resident set read
    read_at: float = 0.0          # when that was (the host's timer)
    # Read again next tick: an empty command line that could be read is a process caught
    # inside exec (the kernel fills it in a moment later), so it is looked at again, a
    # few times at most (a process may also blank its own).
    retries_left: int = 0


def read_container(pid: int, proc_root: str = "/proc") -> str | None:
    try:
        with open(f"{proc_root}/{pid}/cgroup", encoding="utf-8", errors="replace") as f:
            return container_from_cgroup(f.read())
    except OSError:
        return None


def in_child_pid_namespace(proc_root: str = "/proc") -> bool:
    try:
        return os.stat(f"{proc_root}/self/ns/pid").st_ino != _INITIAL_PID_NAMESPACE_INODE
    except OSError:
        return False


def _sysconf(name: str, default: int) -> int:
    try:
        return os.sysconf(name)
    except (AttributeError, ValueError, OSError):
        return default


class PsutilHost:
    """Host details of the pids NVML lists, cached per process across ticks.

    ``proc_root`` and ``timer`` are for tests; ``use_proc=False`` makes every tick ask
    psutil, as on a system without ``/proc``."""

    def __init__(self, pid_namespace_isolated: bool | None = None, *,
                 proc_root: str = "/proc", use_proc: bool | None = None,
                 timer: Callable[[], float] = time.monotonic) -> None:
        self._known: dict[int, _Known] = {}
        self._isolated = (in_child_pid_namespace(proc_root) if pid_namespace_isolated is None
                          else pid_namespace_isolated)
        self._proc_root = proc_root
        if use_proc is None:
            use_proc = os.path.exists(f"{proc_root}/self/stat")
        self._use_proc = use_proc
        self._read = self._read_proc if use_proc else self._read_psutil
        self._timer = timer
        self._ticks_per_s = _sysconf("SC_CLK_TCK", 100)
        self._page_bytes = _sysconf("SC_PAGE_SIZE", 4096)
        self._boot_time_s: float | None = None
        # descriptors kept open on the real /proc only: in a test's tree of files, a
        # kept descriptor would go on reading a file that was replaced
        self._files = ProcFiles(proc_root, keep=proc_root == "/proc")
        # while nobody looks, one poll of pidfds tells which processes exited
        self._watch = ExitWatch(default_max_open() if use_proc and proc_root == "/proc"
                                else 0)
        self._rss_every = 1
        self._ticks = 0
        self._want_rss = True

    def set_detail(self, full: bool) -> None:
        """``full=False`` while nobody looks at the CPU % and resident sets (the window
        in the tray, ``record`` without ``--json``): they are read every tenth tick, the
        last reading standing between. A process's exit, and so a recycled pid, is
        still noticed every tick: through one poll of the processes' pidfds
        (:mod:`gpuwatch.telemetry.exit_watch`), or where there are none by reading its
        ``stat`` every tick as with full detail."""
        self._rss_every = 1 if full else 10
        if full:
            self._watch.close()

    def close(self) -> None:
        self._files.close()
        self._watch.close()

    def pid_namespace_isolated(self) -> bool:
        return self._isolated

    # -- each tick ----------------------------------------------------------------------

    def lookup(self, pids: Iterable[int]) -> dict[int, HostProcess]:
        out: dict[int, HostProcess] = {}
        wanted = set(pids)
        known_all = self._known
        now = self._timer()
        self._ticks += 1
        self._want_rss = self._ticks % self._rss_every == 0
        resting = self._rss_every > 1
        watch = self._watch
        # resting between readings: a watched process that has not exited is the same
        # process with the same facts, and its last CPU % and resident set stand
        exited = watch.exited() if resting and not self._want_rss else None
        for pid in wanted:
            known = known_all.get(pid)
            if resting:
                if exited is not None and known is not None and not known.retries_left \
                        and pid not in exited and watch.watching(pid):
                    out[pid] = HostProcess(known.name, known.cmdline, known.user,
                                           known.container, known.cpu_percent,
                                           known.rss_bytes, known.started_at_s)
                    continue
                if exited is not None and pid in exited:
                    watch.forget(pid)          # whoever holds the pid now is read below
                # watched before it is read: the pidfd is then of the process read, or
                # of one before it that has exited since (and polls as exited)
                watch.watch(pid)
            try:
                reading = self._read(pid)
            except _GONE:
                known_all.pop(pid, None)
                self._files.forget(pid)
                watch.forget(pid)
                continue
            except (_Denied, psutil.AccessDenied):
                reading = None
            if reading is not None and reading.exited:
                known_all.pop(pid, None)        # a zombie: it has exited, left unreaped
                watch.forget(pid)
                continue
            if (known is None or (reading is not None and known.start != reading.start)
                    or known.retries_left):
                known = self._learn(pid, reading, known)   # new, recycled, or unfinished
                if known is None:
                    known_all.pop(pid, None)
                    continue
                known_all[pid] = known
            cpu = rss = None
            if reading is not None:
                if reading.rss_bytes is not None:
                    known.rss_bytes = reading.rss_bytes
                rss = known.rss_bytes
                last = known.cpu_s
                if last is not None and now > known.read_at:
                    cpu = max(0.0, (reading.cpu_s - last) / (now - known.read_at) * 100.0)
                known.cpu_s = reading.cpu_s
                known.read_at = now
            known.cpu_percent = cpu
            out[pid] = HostProcess(known.name, known.cmdline, known.user, known.container,
                                   cpu, rss, known.started_at_s)
        if len(known_all) > len(out):
            for pid in [p for p in known_all if p not in wanted]:
                del known_all[pid]
            self._files.keep_only(wanted)
        if len(watch) > len(out):
            watch.keep_only(set(out))
        return out

    def _read_proc(self, pid: int) -> _Reading:
        """``/proc/<pid>/stat`` and ``statm``, one read each. Raises FileNotFoundError or
        ProcessLookupError when there is no such process, _Denied when it may not be read."""
        stat = self._files.read(pid, "stat")
        # The name (field 2) is in parentheses and may hold anything, ")" and spaces
        # included: the fields that follow start after the last ")".
        fields = stat[stat.rfind(b")") + 2:].split()
        try:
            # 3 state, 14 utime, 15 stime, 22 starttime (clock ticks since boot)
            exited = fields[0] in _EXITED_STATES
            cpu_s = (int(fields[11]) + int(fields[12])) / self._ticks_per_s
            start = int(fields[19])
        except (IndexError, ValueError):
            raise _Denied from None             # not what the kernel writes: read nothing
        if exited:
            return _Reading(True, cpu_s, start, 0)
        # The resident set from statm, as ps, top and psutil give it: stat's own field
        # is an approximation on recent kernels (per-CPU counters not summed).
        known = self._known.get(pid)
        if not self._want_rss and known is not None and known.start == start \
                and known.rss_bytes is not None:
            return _Reading(False, cpu_s, start, None)
        try:
            rss = int(self._files.read(pid, "statm").split()[1]) * self._page_bytes
        except (IndexError, ValueError):
            raise _Denied from None
        return _Reading(False, cpu_s, start, rss)

    def _read_psutil(self, pid: int) -> _Reading:
        """Where there is no /proc: a fresh process object reads the start time anew."""
        proc = psutil.Process(pid)
        with proc.oneshot():
            status = proc.status()
            if status in _EXITED_STATUSES:
                return _Reading(True, 0.0, 0.0, 0)
            times = proc.cpu_times()
            rss = proc.memory_info().rss
        return _Reading(False, times.user + times.system, proc.create_time(), rss)

    # -- once per process --------------------------------------------------------------

    def _learn(self, pid: int, reading: _Reading | None,
               previous: _Known | None) -> _Known | None:
        """The static facts, or None when the process has gone meanwhile. ``previous``:
        what was known of this pid, kept on when it is the same process."""
        try:
            proc = psutil.Process(pid)
            with proc.oneshot():
                name = _allowed(proc.name)
                cmdline = _allowed(proc.cmdline)
                user = _allowed(proc.username)
                created = _allowed(proc.create_time)
        except _GONE:
            return None
        start = reading.start if reading is not None else None
        if created is None and start is not None and self._use_proc:
            created = self._boot_time() + start / self._ticks_per_s
        known = _Known(start, name, tuple(cmdline or ()), user,
                       read_container(pid, self._proc_root), created)
        same = previous is not None and previous.start == start
        if cmdline == []:                     # could be read, and was empty
            known.retries_left = previous.retries_left - 1 if same else _EXEC_RETRIES
        if same:                              # the rate goes on
            known.cpu_s, known.read_at = previous.cpu_s, previous.read_at
        return known

    def _boot_time(self) -> float:
        if self._boot_time_s is None:
            self._boot_time_s = psutil.boot_time()
        return self._boot_time_s



def _allowed(read: Callable[[], object]) -> object | None:
    """The fact, or None when it may not be read."""
    try:
        return read()
    except (psutil.AccessDenied, KeyError):     # KeyError: a uid with no user name
        return None
