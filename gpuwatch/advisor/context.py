"""What a rule sees (:class:`RuleContext`) and what it returns (:class:`Finding`).

A rule is a pure function ``(RuleContext) -> list[Finding]``. The context wraps the
history and the latest snapshot, the linked budgets and allocator statistics, and
which hints are open now (so a rule can use a looser threshold to keep a hint open
than to open it: hysteresis in value; the engine adds hysteresis in time). Window
reads are cached for the duration of one evaluation, so rules can share them.

Most memory is flat most of the time. The history knows since when each GPU's and each
process's memory has not changed (its runs), so ``gpu_peak``, ``gpu_flat`` and
``process_peaks`` answer for flat memory without reading a window, all of a GPU's
processes at once; a rule that uses them finds exactly what reading the windows would
(``tests/advisor/test_advisor_flat_runs.py``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from gpuwatch.advisor.budget_link import LinkedBudget
from gpuwatch.advisor.gpu_log import GpuLog
from gpuwatch.advisor.process_log import ProcessExit
from gpuwatch.advisor.settings import MIB, AdvisorSettings
from gpuwatch.core.hints import AllocatorStats, HintAction, HintKey, Severity
from gpuwatch.core.history import History, Ring
from gpuwatch.core.snapshot import GpuSample, GpuState, ProcessSample, Snapshot
from gpuwatch.core.units import format_duration

ProcessKey = tuple[int, int]   # (gpu index, pid)


@dataclass(frozen=True, slots=True)
class Finding:
    """A rule's statement that a condition holds now; the engine turns it into a hint."""

    code: str
    severity: Severity
    gpu_index: int
    pid: int | None
    title: str
    evidence: tuple[str, ...] = ()
    actions: tuple[HintAction, ...] = ()
    process_name: str | None = None
    values: tuple[tuple[str, float | int | None], ...] = ()
    immediate: bool = False     # open at once, without waiting for open_after_s
    clear_after_s: float | None = None   # override the engine's clear_after_s (0: at once)
    ended: bool = False         # not a condition but its end: close an open hint at once
    badge: str | None = None    # the reason in a few words, for a card (Hint.badge)

    @property
    def key(self) -> HintKey:
        return (self.code, self.gpu_index, self.pid)


def ended(code: str, gpu_index: int, pid: int | None = None) -> Finding:
    """A rule's statement that the condition behind an open hint is over now (memory was
    given back when its process exited, say), rather than merely unseen: the engine
    closes the hint at once instead of waiting ``clear_after_s``."""
    return Finding(code, Severity.INFO, gpu_index, pid, "", ended=True)


def recent_rows(ring: Ring, now_s: float, span_s: float,
                columns: Sequence[str]) -> dict[str, np.ndarray]:
    """The ring's rows with ``timestamp_s >= now_s - span_s``, oldest first (read-only:
    views of the ring where they can be, valid for one evaluation)."""
    return ring.since(now_s - span_s, ("timestamp_s", *(c for c in columns
                                                       if c != "timestamp_s")))


class RuleContext:
    """One evaluation's view of the world. Built by the engine; read by the rules."""

    def __init__(self, history: History, settings: AdvisorSettings,
                 links: Mapping[ProcessKey, LinkedBudget],
                 allocator: Mapping[ProcessKey, AllocatorStats],
                 active: frozenset[HintKey], gpu_log: GpuLog,
                 exits: Sequence[ProcessExit] = (), memo: dict | None = None):
        if history.latest is None:
            raise ValueError("the history is empty")
        self.history = history
        self.snapshot: Snapshot = history.latest
        self.now_s = history.latest.timestamp_s
        self.settings = settings
        self.links = links
        self.allocator = allocator
        self.active = active
        self.gpu_log = gpu_log
        self.exits = tuple(exits)      # processes that left a GPU lately, oldest first
        self._cache: dict[tuple, dict[str, np.ndarray]] = {}
        # what a rule worked out on an earlier sample and may reuse while it holds (the
        # advisor keeps it from one evaluation to the next; a fresh one per context else)
        self.memo: dict = {} if memo is None else memo

    def is_active(self, code: str, gpu_index: int, pid: int | None = None) -> bool:
        return (code, gpu_index, pid) in self.active

    def ok_gpus(self) -> tuple[GpuSample, ...]:
        return tuple(g for g in self.snapshot.gpus if g.state == GpuState.OK)

    def gpu_window(self, gpu_index: int, span_s: float,
                   columns: Sequence[str] = ("used_bytes",)) -> dict[str, np.ndarray]:
        key = ("gpu", gpu_index, span_s, tuple(columns))
        if key not in self._cache:
            ring = self.history.gpu(gpu_index)
            self._cache[key] = ({"timestamp_s": np.empty(0)} if ring is None else
                                recent_rows(ring, self.now_s, span_s, columns))
        return self._cache[key]

    def process_window(self, gpu_index: int, pid: int, span_s: float) -> dict[str, np.ndarray]:
        key = _process_key(gpu_index, pid, span_s)
        if key not in self._cache:
            ring = self.history.process(gpu_index, pid)
            self._cache[key] = ({"timestamp_s": np.empty(0), "used_bytes": np.empty(0)}
                                if ring is None else
                                recent_rows(ring, self.now_s, span_s, ("used_bytes",)))
        return self._cache[key]

    def gpu_peak(self, gpu_index: int, span_s: float) -> float | None:
        """The GPU's largest known memory in use over the last ``span_s`` (None: none
        known); from its run when its memory has been flat, else from its rows."""
        peak, sure = self.steady_gpu_peak(gpu_index, span_s)
        if sure:
            return peak
        return Ring.peak_of(self.gpu_window(gpu_index, span_s)["used_bytes"])

    def steady_gpu_peak(self, gpu_index: int, span_s: float) -> tuple[float | None, bool]:
        """(peak, sure): ``gpu_peak`` when the GPU's run alone says it (its memory has
        been flat over ``span_s``, or unknown), else (None, False)."""
        ring, run = self.history.gpu(gpu_index), self.history.gpu_run(gpu_index)
        if ring is None or run is None:
            return None, False
        return run.steady_peak(ring, self.now_s - span_s)

    def gpu_flat(self, gpu_index: int, span_s: float) -> bool:
        """Every known value of the GPU's memory in use over the last ``span_s`` is the
        same (or none is known), as far as its run says (False: it cannot say)."""
        run = self.history.gpu_run(gpu_index)
        return run is not None and run.changed_s <= self.now_s - span_s

    def process_peaks(self, gpu: GpuSample, span_s: float) -> list[float | None]:
        """``process_peak`` of each of the GPU's processes, in its order: from their runs
        where their memory has been flat (most processes, most of the time), from their
        rows for the rest."""
        runs = self.history.process_runs(gpu.index)
        if runs is None or len(runs.value) != len(gpu.processes):
            return [self.process_peak(gpu.index, p.pid, span_s) for p in gpu.processes]
        peaks, sure = runs.steady_peaks(self.now_s - span_s)
        out: list[float | None] = [None if v != v else v for v in peaks.tolist()]
        if not sure.all():
            for i in np.flatnonzero(~sure).tolist():
                out[i] = self.process_peak(gpu.index, gpu.processes[i].pid, span_s)
        return out

    def process_peak(self, gpu_index: int, pid: int, span_s: float) -> float | None:
        window = self._cache.get(_process_key(gpu_index, pid, span_s))
        if window is not None:                   # read already by another rule
            return Ring.peak_of(window["used_bytes"])
        ring = self.history.process(gpu_index, pid)
        return None if ring is None else ring.peak_since("used_bytes", self.now_s - span_s)

    def first_seen_s(self, gpu_index: int, pid: int) -> float | None:
        return first_seen_s(self.history, gpu_index, pid)

    def last_exit_s(self, gpu_index: int) -> float | None:
        """When a process last left the GPU (the first snapshot without it), if lately."""
        times = [e.exited_at_s for e in self.exits if e.gpu_index == gpu_index]
        return max(times) if times else None

    def limit_bytes(self, gpu: GpuSample) -> float | None:
        """What can be used before allocations fail: total − reserved − a safety margin."""
        total = gpu.memory.total_bytes
        if not total:
            return None
        reserved = gpu.memory.reserved_bytes or 0
        return total - reserved - self.settings.full_margin_fraction * total

    def others_bytes(self, gpu: GpuSample, pid: int) -> float | None:
        """What everything but ``pid`` holds on the GPU now (other processes and the driver)."""
        used = gpu.memory.used_bytes
        mine = next((p.used_bytes for p in gpu.processes if p.pid == pid), None)
        if used is not None and mine is not None:
            return max(0.0, float(used - mine))
        known = [p.used_bytes for p in gpu.processes if p.pid != pid and p.used_bytes is not None]
        return float(sum(known)) if known or used is not None else None


def first_seen_s(history: History, gpu_index: int, pid: int) -> float | None:
    """When the process was first seen on the GPU; None when unknown, or when it is
    older than its ring reaches (a full ring: it has run for an hour at least)."""
    ring = history.process(gpu_index, pid)
    if ring is None or not len(ring) or len(ring) >= ring.capacity:
        return None
    return ring.first("timestamp_s")


def _process_key(gpu_index: int, pid: int, span_s: float) -> tuple:
    """A process window's key in ``RuleContext``'s per-evaluation cache."""
    return ("process", gpu_index, pid, span_s)


def process_of(gpu: GpuSample, pid: int) -> ProcessSample | None:
    return next((p for p in gpu.processes if p.pid == pid), None)


def format_growth(bytes_per_s: float) -> str:
    """``72 MiB/min`` or ``2.9 GiB/min``."""
    per_min = bytes_per_s * 60
    if abs(per_min) >= 1024 * MIB:
        return f"{per_min / (1024 * MIB):.1f} GiB/min"
    return f"{per_min / MIB:.0f} MiB/min"


def format_eta(seconds: float) -> str:
    """A time to come, rounded as people say it: ``45 s``, ``1 min 50 s``, ``12 min``,
    ``3 h 10 min`` (5 s steps under a minute, 10 s under 10 min, minutes under 2 h,
    then 10 min)."""
    step = 5 if seconds < 60 else 10 if seconds < 600 else 60 if seconds < 7200 else 600
    return format_duration(max(step, round(seconds / step) * step))


def steadily(tau: float) -> str:
    """Kendall's tau of a climb in words."""
    return "steadily" if tau >= 0.9 else "fairly steadily" if tau >= 0.7 else "unevenly"


def finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)
