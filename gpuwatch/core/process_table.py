"""The rows of the processes in the latest snapshot: one pair of 2-D arrays (``ts`` and
``used``, a row each), each row a ring with its own start and length, written for every
process at once with a few array operations (:class:`ProcessTable`), and what a GPU's
processes have held since their memory last changed (:class:`ProcessRuns`). The mapping
from process to ring around it is :mod:`gpuwatch.core.process_rings`.
"""

from __future__ import annotations

import numpy as np

from gpuwatch.core.ring import PROCESS_COLUMNS, Ring
from gpuwatch.core.slot_ring import SlotRing

ProcessKey = tuple[int, int]   # (gpu index, pid)
FIRST_ROWS = 64                # a process's first rows; its ring doubles from here
FIRST_SLOTS = 16


class ProcessRuns:
    """For each process of a GPU in the latest snapshot (in its order): since when every
    known value equals ``value`` (``changed_s``, −inf: every row in the ring), the newest
    known value's time (``known_s``, −inf: none known) and the oldest row's time
    (``oldest_s``, worked out when first asked for)."""

    __slots__ = ("_oldest", "_slots", "_table", "changed_s", "known_s", "newest_s", "value")

    def __init__(self, table: ProcessTable, slots: np.ndarray, newest_s: float):
        self._table, self._slots = table, slots
        self._oldest: np.ndarray | None = None
        self.changed_s = table.changed_s[slots]
        self.known_s = table.known_s[slots]
        self.value = table.value[slots]
        self.newest_s = newest_s          # the time of the latest snapshot's rows

    @property
    def oldest_s(self) -> np.ndarray:
        if self._oldest is None:
            table, slots = self._table, self._slots
            oldest = table.ts[slots, table.start[slots]]
            self._oldest = np.where(table.length[slots] > 0, oldest, np.inf)
        return self._oldest

    def steady_peaks(self, since_s: float) -> tuple[np.ndarray, np.ndarray]:
        """(peak, sure): the largest known value of each process's rows with ``timestamp_s
        >= since_s`` (NaN: none known), where ``sure`` says it follows from the runs
        alone; elsewhere the rows must be read."""
        known_s = self.known_s
        none_known = known_s < since_s
        kept = known_s == self.newest_s           # known in the newest row: still held
        if not kept.all():
            kept |= known_s > self.oldest_s
        flat = (self.changed_s <= since_s) & kept
        peak = np.where(none_known, np.nan, self.value)
        return peak, none_known | flat


class ProcessTable:
    """Rows of equal width, one per live process: ``ts`` and ``used`` (float64, NaN
    unknown), each row a ring with its own start and length."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.width = min(FIRST_ROWS, capacity)
        self._allocate(FIRST_SLOTS, self.width)
        self.slot_of: dict[ProcessKey, int] = {}
        self.free: list[int] = list(range(FIRST_SLOTS - 1, -1, -1))
        self.views: dict[int, SlotRing] = {}
        self._all_known = False        # every value of the last write was known
        self._last_t = -np.inf         # the latest time written

    def _allocate(self, slots: int, width: int) -> None:
        self.ts = np.empty((slots, width))          # (read only where written)
        self.used = np.empty((slots, width))
        self.start = np.zeros(slots, np.int64)
        self.length = np.zeros(slots, np.int64)
        self.changed_s = np.full(slots, -np.inf)
        self.known_s = np.full(slots, -np.inf)
        self.value = np.full(slots, np.nan)

    @property
    def nbytes_per_row(self) -> int:
        return 16 * self.width

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, n).nbytes for n in ("ts", "used", "start", "length",
                                                      "changed_s", "known_s", "value"))

    # --- shape --------------------------------------------------------------------
    def _widen(self) -> None:
        new = min(self.capacity, self.width * 2)
        for name in ("ts", "used"):
            # (the columns past a row's length are never read: left as they come, their
            # pages are touched only as rows reach them)
            grown = np.empty((len(self.start), new))
            # below the capacity no row has wrapped (a row is widened before it would):
            # every row starts at 0
            grown[:, : self.width] = getattr(self, name)
            setattr(self, name, grown)
        self.width = new

    def _more_slots(self, needed: int = 1) -> None:
        """At least ``needed`` free slots (the count doubled as often as it takes)."""
        old = new = len(self.start)
        while new - old + len(self.free) < needed:
            new *= 2
        if new == old:
            return
        arrays = {n: getattr(self, n) for n in ("ts", "used", "start", "length", "changed_s",
                                                  "known_s", "value")}
        self._allocate(new, self.width)
        for name, arr in arrays.items():
            getattr(self, name)[:old] = arr
        self.free[:0] = range(new - 1, old - 1, -1)    # (the old free ones are taken first)

    def take_empty(self, keys: list[ProcessKey]) -> None:
        """Empty slots for ``keys``, all at once (a first sample lists hundreds)."""
        self._more_slots(len(keys))
        slots = [self.free.pop() for _ in keys]
        self.slot_of.update(zip(keys, slots, strict=True))
        self.start[slots] = self.length[slots] = 0
        self.changed_s[slots] = self.known_s[slots] = -np.inf
        self.value[slots] = np.nan

    # --- slots ----------------------------------------------------------------------
    def take(self, key: ProcessKey, ring: Ring | None = None) -> int:
        """A slot for ``key``, empty or holding ``ring``'s newest rows."""
        if not self.free:
            self._more_slots()
        slot = self.free.pop()
        self.slot_of[key] = slot
        self.start[slot] = 0
        self.changed_s[slot] = self.known_s[slot] = -np.inf
        self.value[slot] = np.nan
        if ring is not None and len(ring):
            t, used = ring.column("timestamp_s"), ring.column("used_bytes")
            n = min(len(t), self.capacity)
            while self.width < n:
                self._widen()
            t, used = t[-n:], used[-n:]
            self.ts[slot, :n], self.used[slot, :n] = t, used
            self.length[slot] = n
            self._runs_from(slot, t, used)
        else:
            self.length[slot] = 0
        return slot

    def _runs_from(self, slot: int, t: np.ndarray, used: np.ndarray) -> None:
        known = ~np.isnan(used)
        if not known.any():
            return
        kt, kv = t[known], used[known]
        differs = np.flatnonzero(kv != kv[-1])
        if differs.size:      # from the row after the last other value (after its time)
            last = differs[-1]
            self.changed_s[slot] = max(kt[last + 1], np.nextafter(kt[last], np.inf))
        else:
            self.changed_s[slot] = -np.inf
        self.known_s[slot], self.value[slot] = kt[-1], kv[-1]

    def give_back(self, key: ProcessKey) -> Ring:
        """Free ``key``'s slot; its rows as a separate ring, as large as the ring would
        have grown on its own (64 rows doubling, up to the capacity)."""
        slot = self.slot_of.pop(key)
        n = int(self.length[slot])
        size = FIRST_ROWS
        while size < n:
            size *= 2
        ring = Ring(self.capacity, PROCESS_COLUMNS, initial=min(size, self.capacity))
        view = self.views.pop(slot, None)
        if n:
            order = (int(self.start[slot]) + np.arange(n)) % self.width
            ring.load_columns({"timestamp_s": self.ts[slot, order],
                               "used_bytes": self.used[slot, order]})
        if view is not None:
            view.moved = ring
        self.free.append(slot)
        return ring

    def view(self, key: ProcessKey) -> SlotRing:
        slot = self.slot_of[key]
        ring = self.views.get(slot)
        if ring is None:
            ring = self.views[slot] = SlotRing(self, slot)
        return ring

    # --- writing ----------------------------------------------------------------------
    def write(self, slots: np.ndarray, t: float, values: np.ndarray,
              same: bool = False) -> None:
        """Append (t, value) to each slot's ring (each slot once). ``same``: the slots
        and values of the last call again (flat memory), which changes no run."""
        length = self.length[slots]
        width = self.width
        if width < self.capacity:
            # no row has filled its width yet (it would have been widened), so every
            # row starts at 0 and the next free column is its length
            if (length == width).any():
                self._widen()
            self.ts[slots, length] = t
            self.used[slots, length] = values
            self.length[slots] = length + 1
        else:
            start = self.start[slots]
            full = length == width
            at = (start + length) % width
            self.ts[slots, at] = t
            self.used[slots, at] = values
            if full.any():
                self.start[slots] = np.where(full, (start + 1) % width, start)
                self.length[slots] = np.minimum(length + 1, width)
            else:
                self.length[slots] = length + 1
        later = t > self._last_t
        if same and self._all_known and later:
            self.known_s[slots] = t
            self._last_t = t
            return
        known = values == values
        self._all_known = bool(known.all())
        before = self.value[slots]
        differs = known & (values != before) & (before == before)
        if differs.any():
            self.changed_s[slots[differs]] = t
        if self._all_known:
            self.value[slots] = values
            self.known_s[slots] = t
        else:
            self.value[slots[known]] = values[known]
            self.known_s[slots[known]] = t
        if not later:
            # rows at a time already written (a process listed twice): the rows of that
            # time may differ, so no run is said to hold from it, only from after it
            self.changed_s[slots] = np.nextafter(self._last_t, np.inf)
        self._last_t = max(t, self._last_t)
