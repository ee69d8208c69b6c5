"""Which processes left their GPU lately, and how things stood as they went: fed one
snapshot at a time (like :class:`~gpuwatch.advisor.gpu_log.GpuLog`), so that rules can
speak about a process after it is gone (``likely-oom``) and know when memory was given
back (``oom-risk`` closes at once).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from gpuwatch.advisor.budget_link import LinkedBudget
from gpuwatch.core.hints import Hint, HintKey
from gpuwatch.core.history import History
from gpuwatch.core.snapshot import GpuState, Snapshot

ProcessKey = tuple[int, int]   # (gpu index, pid)
OOM_RISK = "oom-risk"
_NONE: list[int] = []


@dataclass(frozen=True, slots=True)
class ProcessExit:
    """A process that was on a GPU in one snapshot and is missing from the next."""

    gpu_index: int
    pid: int
    name: str | None
    cmdline: tuple[str, ...]
    last_seen_s: float                 # its last snapshot
    exited_at_s: float                 # the first snapshot without it
    used_bytes: float | None           # what it held in its last snapshot
    gpu_peak_bytes: float | None       # the GPU's peak use over its last seconds
    gpu_total_bytes: int | None
    gpu_reserved_bytes: int | None
    oom_risk: Hint | None = None       # the oom-risk hint open on its GPU as it went
    budget: LinkedBudget | None = None  # the budget linked to it, if any

    @property
    def key(self) -> ProcessKey:
        return (self.gpu_index, self.pid)

    @property
    def gpu_capacity_bytes(self) -> int | None:
        if not self.gpu_total_bytes:
            return None
        return self.gpu_total_bytes - (self.gpu_reserved_bytes or 0)


@dataclass
class ProcessLog:
    exits: dict[ProcessKey, ProcessExit] = field(default_factory=dict)   # oldest first
    _previous: Snapshot | None = None
    _pids: dict[int, list[int]] = field(default_factory=dict)   # the previous one's, per GPU

    def observe(self, history: History, open_hints: Mapping[HintKey, Hint],
                links: Mapping[ProcessKey, LinkedBudget], peak_window_s: float,
                keep_s: float) -> None:
        """Record the processes missing from ``history.latest`` that the snapshot before
        it had, on GPUs still answering (a lost GPU takes its processes with it: that is
        ``gpu-lost``'s to say). A pid back on its GPU was not gone; exits older than
        ``keep_s`` are forgotten."""
        snap, previous = history.latest, self._previous
        if snap is None:
            return
        self._previous = snap
        now = snap.timestamp_s
        # each GPU's pids, compared as lists: a GPU whose list is the one it had before
        # lost no process (a snapshot lists a GPU's processes under its index)
        pids = history.listed_pids()
        if pids is None:
            pids = {g.index: [p.pid for p in g.processes] for g in snap.gpus}
        else:
            pids = {g.index: pids.get(g.index, _NONE) for g in snap.gpus}
        if len(pids) < len(snap.gpus):        # a GPU listed twice: compare every process
            pids = {}
        before, self._pids = self._pids, pids
        if self.exits or not pids:
            present = {(p.gpu_index, p.pid) for p in snap.processes}
            for key in present & self.exits.keys():
                del self.exits[key]
        if previous is not None:
            ok = {g.index for g in snap.gpus if g.state == GpuState.OK}
            for g in previous.gpus:
                if g.index not in ok or g.state != GpuState.OK:
                    continue
                mine = pids.get(g.index)
                if mine is not None and before.get(g.index) == mine:
                    continue
                here = ({p.pid for p in snap.processes if p.gpu_index == g.index}
                        if mine is None else set(mine))
                for p in g.processes:
                    if p.pid in here:
                        continue
                    self.exits[(g.index, p.pid)] = ProcessExit(
                        gpu_index=g.index, pid=p.pid, name=p.name, cmdline=p.cmdline,
                        last_seen_s=previous.timestamp_s, exited_at_s=now,
                        used_bytes=None if p.used_bytes is None else float(p.used_bytes),
                        gpu_peak_bytes=_peak_before(history, g.index, previous.timestamp_s,
                                                    peak_window_s),
                        gpu_total_bytes=g.memory.total_bytes,
                        gpu_reserved_bytes=g.memory.reserved_bytes,
                        oom_risk=open_hints.get((OOM_RISK, g.index, None)),
                        budget=links.get((g.index, p.pid)))
        for key in [k for k, e in self.exits.items() if now - e.exited_at_s > keep_s]:
            del self.exits[key]


def _peak_before(history: History, gpu_index: int, until_s: float,
                 span_s: float) -> float | None:
    """The GPU's peak use over ``[until_s - span_s, until_s]``."""
    ring = history.gpu(gpu_index)
    if ring is None:
        return None
    w = ring.since(until_s - span_s, ("timestamp_s", "used_bytes"))
    used = w["used_bytes"][w["timestamp_s"] <= until_s]
    if used.size == 0 or np.isnan(used).all():
        return None
    return float(np.nanmax(used))
