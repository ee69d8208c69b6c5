"""A circular buffer of equal-length numpy columns: the storage of ``History``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

# A process's columns (its time and memory in use); the GPUs' are in ``history``.
PROCESS_COLUMNS: Mapping[str, type] = {"timestamp_s": np.float64, "used_bytes": np.float64}


def _filled(size: int, dtype: type | np.dtype) -> np.ndarray:
    """A column of ``size`` unknown values (NaN; 0 for a column of integers), every page
    written."""
    unknown = np.nan if np.issubdtype(dtype, np.inexact) else 0
    return np.full(size, unknown, dtype=dtype)


class Ring:
    """Columns of equal length in a circular buffer; reads come back oldest first."""

    def __init__(self, capacity: int, columns: Mapping[str, type], initial: int | None = None):
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._size = capacity if initial is None else max(1, min(initial, capacity))
        self._names = tuple(columns)
        # Filled (NaN) when made, though rows are only read once written: a buffer left
        # as it comes takes its pages as rows reach them, so a GPU's day at 1 Hz (5 MB)
        # would add to the resident set all day long, which reads as a leak. Filled, the
        # memory it will hold is taken at once and stays flat.
        self._arrays = [_filled(self._size, dt) for dt in columns.values()]
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
            grown = _filled(new_size, arr.dtype)
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
        if newer > 0 and ts[size - 1] < since_s:     # none of the older part is wanted
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
