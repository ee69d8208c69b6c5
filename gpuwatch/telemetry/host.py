"""Host details of GPU processes from psutil and /proc (the only psutil importer).

Static facts (name, command line, user, start time, container) are read once per
process and cached by (pid, start time), so a recycled pid is never confused with the
old process. CPU % and RSS are refreshed each lookup without blocking: psutil's
``cpu_percent(None)`` measures since the previous call, so the first reading is None.
A process that has exited is not found, zombies (exited, not yet reaped) included: the
backend still lists it when the driver does, as exited.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

import psutil

from gpuwatch.telemetry.hostinfo import HostProcess, container_from_cgroup

# The kernel's inode number of the initial PID namespace (PROC_PID_INIT_INO).
_INITIAL_PID_NAMESPACE_INODE = 0xEFFFFFFC


@dataclass(slots=True)
class _Known:
    process: psutil.Process
    create_time: float
    name: str | None
    cmdline: tuple[str, ...]
    user: str | None
    container: str | None
    primed: bool = False      # cpu_percent has had its first (baseline) call


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


class PsutilHost:
    def __init__(self, pid_namespace_isolated: bool | None = None) -> None:
        self._known: dict[int, _Known] = {}
        self._isolated = (in_child_pid_namespace() if pid_namespace_isolated is None
                          else pid_namespace_isolated)

    def pid_namespace_isolated(self) -> bool:
        return self._isolated

    def _learn(self, pid: int) -> _Known | None:
        try:
            proc = psutil.Process(pid)
            with proc.oneshot():
                create_time = proc.create_time()
                name = proc.name()
                try:
                    cmdline = tuple(proc.cmdline())
                except psutil.AccessDenied:
                    cmdline = ()
                try:
                    user = proc.username()
                except (psutil.AccessDenied, KeyError):
                    user = None
        except (psutil.NoSuchProcess, psutil.ZombieProcess, ProcessLookupError,
                FileNotFoundError):
            return None
        except psutil.AccessDenied:
            return None
        return _Known(proc, create_time, name, cmdline, user, read_container(pid))

    def lookup(self, pids: Iterable[int]) -> dict[int, HostProcess]:
        out: dict[int, HostProcess] = {}
        wanted = set(pids)
        for pid in wanted:
            known = self._known.get(pid)
            if known is None or not known.process.is_running():
                known = self._learn(pid)
                if known is None:
                    self._known.pop(pid, None)
                    continue
                self._known[pid] = known
            try:
                with known.process.oneshot():
                    if known.process.status() == psutil.STATUS_ZOMBIE:
                        raise psutil.ZombieProcess(pid)   # it has exited; left unreaped
                    cpu = known.process.cpu_percent(None)
                    rss = known.process.memory_info().rss
            except (psutil.NoSuchProcess, psutil.ZombieProcess, ProcessLookupError,
                    FileNotFoundError):
                self._known.pop(pid, None)
                continue
            except psutil.AccessDenied:
                cpu, rss = None, None
            out[pid] = HostProcess(
                name=known.name,
                cmdline=known.cmdline,
                user=known.user,
                container=known.container,
                cpu_percent=cpu if known.primed else None,
                rss_bytes=rss,
                started_at_s=known.create_time,
            )
            known.primed = cpu is not None
        for pid in list(self._known):
            if pid not in wanted:
                del self._known[pid]
        return out
