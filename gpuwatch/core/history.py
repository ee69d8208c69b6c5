"""Bounded, preallocated history of snapshots: numpy ring buffers per GPU and per process.

Memory is fixed up front for GPUs (no growth over a long session) and bounded for
processes (each process ring grows by doubling up to its capacity, and only the most
recently seen ``max_processes`` are kept). See ``docs/history.md`` for figures.

The processes of the latest snapshot are held in one table (``process_rings``), so a
sample of hundreds of processes is written with a few array operations. Besides the
rows, the history keeps for each GPU and each process since when its memory has not
changed (``gpu_run``, ``process_runs``): the advisor's rules skip the windows of
memory that has been flat.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from gpuwatch.core.process_rings import PROCESS_COLUMNS, ProcessRings
from gpuwatch.core.process_table import ProcessRuns
from gpuwatch.core.ring import Ring
from gpuwatch.core.snapshot import GpuSample, Snapshot

DAY_AT_1HZ = 24 * 3600
HOUR_AT_1HZ = 3600

# Column name -> dtype. Byte counts stay float64 (exact to 2**53 B, and NaN means unknown).
GPU_COLUMNS: Mapping[str, type] = {
    "timestamp_s": np.float64,
    "used_bytes": np.float64,
    "reserved_bytes": np.float64,
    "total_bytes": np.float64,
    "gpu_util_percent": np.float32,
    "memory_busy_percent": np.float32,
    "estimated_bandwidth_bytes_per_s": np.float32,
    "pcie_tx_bytes_per_s": np.float32,
    "pcie_rx_bytes_per_s": np.float32,
    "temperature_c": np.float32,
    "power_w": np.float32,
    # measured by the GPU's performance monitor (GPM), NaN where it has none
    "measured_bandwidth_bytes_per_s": np.float32,
}
__all__ = ["DAY_AT_1HZ", "GPU_COLUMNS", "HOUR_AT_1HZ", "PROCESS_COLUMNS", "GpuRun", "History",
           "ProcessRuns", "Ring"]


def _gpu_row(timestamp_s: float, g: GpuSample) -> tuple[float | None, ...]:
    """A GPU's row, in ``GPU_COLUMNS`` order."""
    m = g.memory
    return (timestamp_s, m.used_bytes, m.reserved_bytes, m.total_bytes, g.gpu_util_percent,
            g.memory_busy_percent, g.estimated_bandwidth_bytes_per_s, g.pcie_tx_bytes_per_s,
            g.pcie_rx_bytes_per_s, g.temperature_c, g.power_w, g.measured_bandwidth_bytes_per_s)


@dataclass(slots=True)
class GpuRun:
    """A GPU's memory in use, as ``ProcessRuns`` has it for processes: every known value
    from ``changed_s`` on equals ``value`` (−inf: every row), the newest known is from
    ``known_s`` (−inf: none)."""

    changed_s: float = -np.inf
    known_s: float = -np.inf
    value: float = np.nan
    newest_s: float = -np.inf       # the newest row's time, known or not

    def observe(self, t: float, used: float | None) -> None:
        later = t > self.newest_s
        if used is not None:
            if used != self.value and self.value == self.value:
                self.changed_s = t
            self.value, self.known_s = float(used), t
        if not later:       # a second row at a time (a GPU listed twice): only after it
            self.changed_s = float(np.nextafter(self.newest_s, np.inf))
        self.newest_s = max(t, self.newest_s)

    def steady_peak(self, ring: Ring, since_s: float) -> tuple[float | None, bool]:
        """(peak, sure): the largest known ``used_bytes`` of the rows with ``timestamp_s >=
        since_s`` (None: none known), when the run alone says it; (None, False) when the
        rows must be read."""
        if self.known_s < since_s:
            return None, True
        if self.changed_s <= since_s and (self.known_s == self.newest_s
                                          or self.known_s > (ring.first("timestamp_s")
                                                             or np.inf)):
            return self.value, True         # (the known row is still in the ring)
        return None, False


ProcessKey = tuple[int, int]   # (gpu index, pid)


class History:
    """Everything sampled so far, bounded.

    Each GPU keeps ``capacity`` rows (a day at 1 Hz by default), preallocated. Each
    process keeps its last ``process_capacity`` rows (an hour at 1 Hz), growing by
    doubling, and only the ``max_processes`` most recently seen processes are kept.
    """

    def __init__(self, capacity: int = DAY_AT_1HZ, max_processes: int = 1024,
                 process_capacity: int = HOUR_AT_1HZ):
        self.capacity = capacity
        self.max_processes = max_processes
        self.process_capacity = min(process_capacity, capacity)
        self.gpus: dict[int, Ring] = {}
        # least recently seen first; a mapping of rings, mostly views of one table
        self.processes: ProcessRings = ProcessRings(self.process_capacity, max_processes)
        self.latest: Snapshot | None = None
        self._runs: dict[int, GpuRun] = {}
        self._appended: Snapshot | None = None   # the last snapshot given to append

    def append(self, snapshot: Snapshot) -> None:
        t = snapshot.timestamp_s
        listing: list[tuple[int, list[int]]] = []   # each GPU's pids, in snapshot order
        values: list[float | None] = []
        for g in snapshot.gpus:
            ring = self.gpus.get(g.index)
            if ring is None:
                ring = self.gpus[g.index] = Ring(self.capacity, GPU_COLUMNS)
            ring.append_values(_gpu_row(t, g))
            run = self._runs.get(g.index)
            if run is None:
                run = self._runs[g.index] = GpuRun()
            run.observe(t, g.memory.used_bytes)
            if g.processes:
                listing.append((g.index, [p.pid for p in g.processes]))
                values += [p.used_bytes for p in g.processes]
        self.processes.append(t, listing, values, lambda: {
            (g.index, p.pid): p.started_at_s for g in snapshot.gpus for p in g.processes})
        if len(self.gpus) > len(snapshot.gpus):
            self._release({g.index for g in snapshot.gpus})
        self.latest = self._appended = snapshot

    def _release(self, listed: set[int]) -> None:
        """Free the rows of GPUs the source no longer lists. A local GPU is listed for
        as long as the program runs (a lost one too); a Prometheus source stops listing
        a GPU whose host has been gone for long, so hosts that come back under new
        names do not hold a day of rows each for ever."""
        for index in [i for i in self.gpus if i not in listed]:
            del self.gpus[index]
            self._runs.pop(index, None)

    def extend(self, snapshots: Iterable[Snapshot]) -> None:
        for s in snapshots:
            self.append(s)

    def gpu(self, index: int) -> Ring | None:
        return self.gpus.get(index)

    def process(self, gpu_index: int, pid: int) -> Ring | None:
        return self.processes.get((gpu_index, pid))

    def process_runs(self, gpu_index: int) -> ProcessRuns | None:
        """The runs of the GPU's processes in ``latest``, in its order (for tests of all
        of them at once); None when they are not known (a history loaded, not appended)."""
        if self.latest is None or self.latest is not self._appended:
            return None
        return self.processes.runs(gpu_index)

    def listed_pids(self) -> dict[int, list[int]] | None:
        """Each GPU's pids in ``latest``, in its order (do not change the lists); None
        when not known (a history loaded, not appended, or a GPU listed twice)."""
        if self.latest is None or self.latest is not self._appended:
            return None
        return self.processes.pids_by_gpu

    def gpu_run(self, gpu_index: int) -> GpuRun | None:
        """The run of the GPU's memory in use; None when not known (as ``process_runs``)."""
        if self.latest is None or self.latest is not self._appended:
            return None
        return self._runs.get(gpu_index)

    @property
    def nbytes(self) -> int:
        return sum(r.nbytes for r in self.gpus.values()) + self.processes.nbytes

    @staticmethod
    def bytes_per_gpu(capacity: int = DAY_AT_1HZ) -> int:
        """Preallocated bytes for one GPU's ring (the figure quoted in the docs)."""
        return capacity * sum(np.dtype(dt).itemsize for dt in GPU_COLUMNS.values())

    @staticmethod
    def bytes_per_process_max(capacity: int = HOUR_AT_1HZ) -> int:
        return capacity * sum(np.dtype(dt).itemsize for dt in PROCESS_COLUMNS.values())
