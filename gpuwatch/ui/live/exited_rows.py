"""Processes that left their GPU lately: the process table keeps them, greyed, for a while.

A process that vanishes from a GPU's list is remembered with its last sample and the
time of the first snapshot without it (as the advisor's ``likely-oom`` hint counts it),
for :data:`EXITED_ROW_KEEP_S`, then forgotten (and the oldest beyond
:data:`EXITED_ROW_LIMIT` sooner). It holds nothing any more, so it is never part of a
card or a total: only the table shows it.

The work happens when the set of processes changes (:meth:`ExitedProcesses.observe`)
and when the oldest entry is due (:meth:`ExitedProcesses.expire`); a sample with the
same processes costs one comparison.

A lost GPU, or one whose list NVML would not give (``processes_error``), has not lost
its processes, we just cannot see them: they are kept the same way, greyed, with
``unseen`` saying why ("GPU lost") instead of an exit, so the table neither drops them
nor moves the selection. When their GPU is read again a process listed again is a
running row again; one no longer listed has exited (at that sample).
"""

from __future__ import annotations

import math
import time
from typing import NamedTuple

from gpuwatch.core.snapshot import GpuState, ProcessSample, Snapshot

Key = tuple[int, int]   # (gpu index, pid)

EXITED_ROW_KEEP_S = 600.0   # ten minutes: as long as the likely-oom hint stays open
EXITED_ROW_LIMIT = 1000     # rows kept at most (a box running a short job a second)


class Exited(NamedTuple):
    sample: ProcessSample     # its last sample: what it held, its name and command line
    exited_at_s: float        # the first snapshot without it
    unseen: str | None = None  # why it could not be seen ("GPU lost"): not known to exit
    reason: str | None = None  # the driver's words for it

    @property
    def clock(self) -> str:
        """The exit time on the wall clock, "12:03:41"."""
        return time.strftime("%H:%M:%S", time.localtime(self.exited_at_s))


class ExitedProcesses:
    def __init__(self, keep_s: float = EXITED_ROW_KEEP_S, limit: int = EXITED_ROW_LIMIT):
        self.keep_s = keep_s
        self.limit = limit
        self.rows: dict[Key, Exited] = {}    # oldest first
        self._due_s = math.inf               # when the oldest row is to go
        self._newest_s = -math.inf           # the latest exit (a clock going back drops it)
        self.version = 0                     # changes whenever ``rows`` does

    def observe(self, old: dict[Key, ProcessSample], new: dict[Key, ProcessSample],
                snapshot: Snapshot) -> bool:
        """The processes were ``old`` and are now ``new`` (a different set): remember the
        ones that left a readable GPU, forget the ones that came back. True on a change."""
        rows = self.rows
        changed = False
        for key in new.keys() & rows.keys():          # back on its GPU: it had not gone
            del rows[key]
            changed = True
        gone = old.keys() - new.keys()
        if gone:
            unreadable = _unreadable(snapshot)
            now = snapshot.timestamp_s
            for key in sorted(gone):
                rows.pop(key, None)
                why = unreadable.get(key[0])
                rows[key] = Exited(old[key], now) if why is None else \
                    Exited(old[key], now, why[0], why[1])
                changed = True
            if len(rows) > self.limit:                     # the oldest go first
                for key in list(rows)[:len(rows) - self.limit]:
                    del rows[key]
        if changed:
            self._changed()
        return changed

    def settle(self, snapshot: Snapshot) -> bool:
        """Rows unseen on a GPU that is read again and does not list them have exited
        (at this snapshot). Costs nothing while no row is unseen. True on a change."""
        if not any(e.unseen for e in self.rows.values()):
            return False
        unreadable = _unreadable(snapshot)
        listed = {(p.gpu_index, p.pid) for p in snapshot.processes}
        now = snapshot.timestamp_s
        changed = False
        for key, e in list(self.rows.items()):
            if e.unseen and key[0] not in unreadable:
                if key in listed:
                    del self.rows[key]
                else:
                    self.rows[key] = Exited(e.sample, now)
                changed = True
        if changed:
            self._changed()
        return changed

    def expire(self, now_s: float) -> bool:
        """Forget the rows older than ``keep_s`` (or from the future: a clock that went
        back). Costs one comparison until the oldest row is due. True on a change."""
        if now_s < self._due_s and not (self.rows and now_s < self._newest_s):
            return False
        keep = self.keep_s
        stale = [k for k, e in self.rows.items()
                 if now_s - e.exited_at_s >= keep or now_s < e.exited_at_s]
        for key in stale:
            del self.rows[key]
        if stale:
            self._changed()
        return bool(stale)

    def _changed(self) -> None:
        self.version += 1
        times = [e.exited_at_s for e in self.rows.values()]
        self._due_s = min(times) + self.keep_s if times else math.inf
        self._newest_s = max(times) if times else -math.inf


def _unreadable(snapshot: Snapshot) -> dict[int, tuple[str, str | None]]:
    """GPU index -> (why its processes cannot be seen, the driver's words)."""
    out = {}
    for g in snapshot.gpus:
        if g.state is not GpuState.OK:
            out[g.index] = ("GPU lost" if g.state is GpuState.LOST else "GPU unreadable",
                            g.error)
        elif g.processes_error is not None:
            out[g.index] = ("process list unreadable", g.processes_error)
    return out
