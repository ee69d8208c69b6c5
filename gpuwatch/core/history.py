"""Bounded, preallocated history of snapshots: numpy ring buffers per GPU and per process.

Memory is fixed up front for GPUs (no growth over a long session) and bounded for
processes (each process ring grows by doubling up to its capacity, and only the most
recently seen ``max_processes`` are kept). See ``docs/history.md`` for figures.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

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
}
PROCESS_COLUMNS: Mapping[str, type] = {"timestamp_s": np.float64, "used_bytes": np.float64}


class Ring:
    """Columns of equal length in a circular buffer; reads come back oldest first."""

    def __init__(self, capacity: int, columns: Mapping[str, type], initial: int | None = None):
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._size = capacity if initial is None else max(1, min(initial, capacity))
        self._names = tuple(columns)
        self._arrays = [np.full(self._size, np.nan, dtype=dt) for dt in columns.values()]
        self._start = 0   # index of the oldest row
        self._len = 0

    def __len__(self) -> int:
        return self._len

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self._arrays)

    def _grow(self) -> None:
        new_size = min(self.capacity, self._size * 2)
        for i, arr in enumerate(self._arrays):
            grown = np.full(new_size, np.nan, dtype=arr.dtype)
            grown[: self._size] = np.concatenate([arr[self._start:], arr[: self._start]])
            self._arrays[i] = grown
        self._start = 0
        self._size = new_size

    def append_values(self, values: Sequence[float | None]) -> None:
        """Add a row given in column order (None stores NaN: unknown, never 0)."""
        if self._len == self._size and self._size < self.capacity:
            self._grow()
        if self._len < self._size:
            at = (self._start + self._len) % self._size
            self._len += 1
        else:  # full: overwrite the oldest
            at = self._start
            self._start = (self._start + 1) % self._size
        for arr, value in zip(self._arrays, values, strict=True):
            arr[at] = np.nan if value is None else value

    def append_pair(self, first: float, second: float | None) -> None:
        """``append_values`` for a two-column ring (a process's time and memory), the
        per-process cost of every sample: no tuple, no loop."""
        size = self._size
        if self._len == size and size < self.capacity:
            self._grow()
            size = self._size
        if self._len < size:
            at = (self._start + self._len) % size
            self._len += 1
        else:
            at = self._start
            self._start = (at + 1) % size
        a, b = self._arrays
        a[at] = first
        b[at] = np.nan if second is None else second

    def append(self, row: Mapping[str, float | None]) -> None:
        self.append_values([row.get(name) for name in self._names])

    def load_columns(self, columns: Mapping[str, np.ndarray]) -> None:
        """Replace the contents with whole columns of equal length, oldest first (a
        recorded session being replayed). Only the newest ``capacity`` rows are kept; a
        column not given is unknown (NaN)."""
        lengths = {len(v) for v in columns.values()}
        if len(lengths) > 1:
            raise ValueError("columns must have equal lengths")
        n = lengths.pop() if lengths else 0
        keep = min(n, self.capacity)
        size = max(1, keep, min(self._size, self.capacity))
        arrays = []
        for name, arr in zip(self._names, self._arrays, strict=True):
            fresh = np.full(size, np.nan, dtype=arr.dtype)
            if name in columns and keep:
                fresh[:keep] = np.asarray(columns[name])[n - keep:]
            arrays.append(fresh)
        self._arrays = arrays
        self._size = size
        self._start = 0
        self._len = keep

    def column(self, name: str, last: int | None = None) -> np.ndarray:
        """The column in time order (a copy), optionally only its ``last`` rows."""
        arr = self._arrays[self._names.index(name)]
        n = self._len if last is None else max(0, min(last, self._len))
        first = (self._start + self._len - n) % self._size
        if first + n <= self._size:
            return arr[first : first + n].copy()
        return np.concatenate([arr[first:], arr[: (first + n) % self._size]])

    def peak_since(self, name: str, since_s: float) -> float | None:
        """The largest known value of ``name`` in the rows with ``timestamp_s >=
        since_s``; None when there is none (no rows, or only unknown values)."""
        return self.peak_of(self.since(since_s, (name,))[name])

    @staticmethod
    def peak_of(values: np.ndarray) -> float | None:
        """The largest known value; None when there is none."""
        if values.size == 0:
            return None
        peak = float(np.fmax.reduce(values))     # NaN (unknown) only where every value is
        return None if peak != peak else peak

    def since(self, since_s: float, names: Sequence[str]) -> dict[str, np.ndarray]:
        """The rows with ``timestamp_s >= since_s`` (timestamps ascending), oldest first,
        as read-only views of the ring where those rows lie in one piece (a copy where
        they wrap around its end). Cheaper than ``column`` for the advisor's many short
        reads of the newest minutes: no copy, one binary search. The views change with
        the next ``append``: use them at once."""
        ts = self._arrays[self._names.index("timestamp_s")]
        start, n, size = self._start, self._len, self._size
        newer = start + n - size          # rows that wrapped to the front of the buffer
        if newer > 0 and ts[0] <= since_s:
            first = int(ts[:newer].searchsorted(since_s, side="left"))
            parts: tuple[slice, ...] = (slice(first, newer),)
        elif newer > 0:
            first = start + int(ts[start:].searchsorted(since_s, side="left"))
            parts = (slice(first, size), slice(0, newer))
        else:
            first = start + int(ts[start:start + n].searchsorted(since_s, side="left"))
            parts = (slice(first, start + n),)
        out = {}
        for name in names:
            arr = self._arrays[self._names.index(name)]
            if len(parts) == 1:
                view = arr[parts[0]]
                view.flags.writeable = False
            else:
                view = np.concatenate([arr[parts[0]], arr[parts[1]]])
            out[name] = view
        return out

    def first(self, name: str) -> float | None:
        """The oldest row's value of ``name`` (None: no rows, or unknown)."""
        if not self._len:
            return None
        value = self._arrays[self._names.index(name)][self._start]
        return None if np.isnan(value) else float(value)

    def last(self, name: str) -> float | None:
        if not self._len:
            return None
        arr = self._arrays[self._names.index(name)]
        value = arr[(self._start + self._len - 1) % self._size]
        return None if np.isnan(value) else float(value)


def _gpu_row(timestamp_s: float, g: GpuSample) -> dict[str, float | None]:
    m = g.memory
    return {
        "timestamp_s": timestamp_s,
        "used_bytes": m.used_bytes,
        "reserved_bytes": m.reserved_bytes,
        "total_bytes": m.total_bytes,
        "gpu_util_percent": g.gpu_util_percent,
        "memory_busy_percent": g.memory_busy_percent,
        "estimated_bandwidth_bytes_per_s": g.estimated_bandwidth_bytes_per_s,
        "pcie_tx_bytes_per_s": g.pcie_tx_bytes_per_s,
        "pcie_rx_bytes_per_s": g.pcie_rx_bytes_per_s,
        "temperature_c": g.temperature_c,
        "power_w": g.power_w,
    }


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
        self.processes: OrderedDict[ProcessKey, Ring] = OrderedDict()  # least recently seen first
        self.latest: Snapshot | None = None

    def append(self, snapshot: Snapshot) -> None:
        t = snapshot.timestamp_s
        for g in snapshot.gpus:
            ring = self.gpus.get(g.index)
            if ring is None:
                ring = self.gpus[g.index] = Ring(self.capacity, GPU_COLUMNS)
            ring.append(_gpu_row(t, g))
            for p in g.processes:
                key = (g.index, p.pid)
                pring = self.processes.get(key)
                if pring is None:
                    pring = self.processes[key] = Ring(self.process_capacity, PROCESS_COLUMNS,
                                                          initial=64)
                else:
                    self.processes.move_to_end(key)
                pring.append_pair(t, p.used_bytes)
        while len(self.processes) > self.max_processes:
            self.processes.popitem(last=False)
        self.latest = snapshot

    def extend(self, snapshots: Iterable[Snapshot]) -> None:
        for s in snapshots:
            self.append(s)

    def gpu(self, index: int) -> Ring | None:
        return self.gpus.get(index)

    def process(self, gpu_index: int, pid: int) -> Ring | None:
        return self.processes.get((gpu_index, pid))

    @property
    def nbytes(self) -> int:
        return sum(r.nbytes for r in self.gpus.values()) + sum(
            r.nbytes for r in self.processes.values()
        )

    @staticmethod
    def bytes_per_gpu(capacity: int = DAY_AT_1HZ) -> int:
        """Preallocated bytes for one GPU's ring (the figure quoted in the docs)."""
        return capacity * sum(np.dtype(dt).itemsize for dt in GPU_COLUMNS.values())

    @staticmethod
    def bytes_per_process_max(capacity: int = HOUR_AT_1HZ) -> int:
        return capacity * sum(np.dtype(dt).itemsize for dt in PROCESS_COLUMNS.values())
