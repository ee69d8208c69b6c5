"""The processes' memory history: the rings of the processes in the latest snapshot in
one pair of 2-D arrays (a row each), the others as separate rings.

With 64 processes a GPU, a ring object per process costs a Python call per process
per sample to write, and the advisor one per process to read. Here a sample of every
process is written with a few array operations, and the advisor can test all of a
GPU's processes at once (:class:`ProcessRuns`). A process missing from a snapshot has
its rows moved out to a separate :class:`~gpuwatch.core.history.Ring` of the size it
would have grown to on its own (so memory stays what it was for the many short-lived
processes of a shared box); one that comes back is moved in again. A pid listed again
for another process (another start time) is that process's: it starts a ring of its
own, so a box whose pids come round again does not grow every ring to its bound.

Besides its rows, each process's row of the table keeps when its memory last changed
(``changed_s``: every known value from then on equals ``value``), when its memory was
last known (``known_s``) and that value, so that a rule can tell without reading a
window that its memory has been flat.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, MutableMapping

import numpy as np

from gpuwatch.core.ring import PROCESS_COLUMNS, Ring
from gpuwatch.core.slot_ring import SlotRing

__all__ = ["PROCESS_COLUMNS", "ProcessRings", "ProcessRuns", "ProcessTable", "SlotRing"]
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


class ProcessRings(MutableMapping):
    """``History.processes``: (GPU index, pid) → the process's ring, least recently seen
    first. The latest snapshot's processes live in a :class:`ProcessTable` (their rings
    are views of its rows); the rest are separate rings."""

    def __init__(self, capacity: int, max_processes: int):
        self.max_processes = max_processes
        self.table = ProcessTable(capacity)
        self.others: OrderedDict[ProcessKey, Ring] = OrderedDict()   # least recent first
        self.live: list[ProcessKey] = []       # the table's keys, in the latest order
        self._slots = np.zeros(0, np.intp)     # their slots, in that order
        self.by_gpu: dict[int, slice] = {}     # each GPU's part of ``live``
        self.pids_by_gpu: dict[int, list[int]] | None = {}
        self._listing: list[tuple[int, list[int]]] | None = []   # the last one appended
        self._values: list[float | None] | None = None
        self._array: np.ndarray | None = None              # ``_values`` as float64
        self.newest_s = -np.inf                            # the last append's time
        self._started: dict[ProcessKey, float] = {}       # start time of each key's process

    # --- Mapping ------------------------------------------------------------------
    def __getitem__(self, key: ProcessKey) -> Ring:
        if key in self.table.slot_of:
            return self.table.view(key)
        return self.others[key]

    def get(self, key: ProcessKey, default: Ring | None = None) -> Ring | None:  # type: ignore[override]
        if key in self.table.slot_of:
            return self.table.view(key)
        return self.others.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self.table.slot_of or key in self.others

    def __setitem__(self, key: ProcessKey, ring: Ring) -> None:
        """A ring of one's own (a recorded session replayed): kept as it is given."""
        if key in self.table.slot_of:
            self._drop_live(key)
        self.others[key] = ring
        self.others.move_to_end(key)

    def __delitem__(self, key: ProcessKey) -> None:
        if key in self.table.slot_of:
            self._drop_live(key)
        else:
            del self.others[key]

    def _drop_live(self, key: ProcessKey) -> None:
        self.table.give_back(key)
        i = self.live.index(key)
        self.live = self.live[:i] + self.live[i + 1:]
        self._slots = np.delete(self._slots, i)
        self._unaligned()

    def __iter__(self) -> Iterator[ProcessKey]:
        yield from list(self.others)
        yield from list(self.live)

    def __len__(self) -> int:
        return len(self.others) + len(self.live)

    @property
    def nbytes(self) -> int:
        """The table (every slot, used or not) and the separate rings."""
        return self.table.nbytes + sum(r.nbytes for r in self.others.values())

    # --- a snapshot's processes -----------------------------------------------------
    def append(self, t: float, listing: list[tuple[int, list[int]]],
               values: list[float | None],
               started_of: Callable[[], Mapping[ProcessKey, float | None]] | None = None
               ) -> None:
        """One row for each process of ``listing`` (each GPU's pids, in snapshot order;
        ``values`` their memory, in the same order). ``started_of`` gives the processes'
        start times, asked only when someone new is listed: a pid back with another
        start is another process, and starts a ring of its own."""
        if listing != self._listing:
            keys = [(index, pid) for index, pids in listing for pid in pids]
            if len(set(keys)) < len(keys):
                self._append_with_repeats(t, keys, values, started_of)
                return
            self._relist(keys, started_of)
            self._listing = listing
            self.pids_by_gpu = dict(listing)
            self.by_gpu, first = {}, 0
            for index, pids in listing:
                self.by_gpu[index] = slice(first, first + len(pids))
                first += len(pids)
            if len(self.pids_by_gpu) < len(listing):     # a GPU listed twice
                self.by_gpu, self.pids_by_gpu = {}, None
            self._values, self._array = None, None
        self.newest_s = t
        if values:
            same = values == self._values and self._array is not None   # flat memory
            if not same:
                self._values, self._array = values, np.array(values, dtype=np.float64)
            self.table.write(self._slots, t, self._array, same)   # type: ignore[arg-type]
        self._evict()

    def _relist(self, keys: list[ProcessKey],
                started_of: Callable[[], Mapping[ProcessKey, float | None]] | None = None
                ) -> None:
        """The table holds ``keys`` from now on: rows of processes gone are moved out
        (least recently seen first), those back moved in; a pid listed again for
        another process (another start) starts afresh."""
        table, now = self.table, set(keys)
        for key in self.live:
            if key not in now:
                self.others[key] = table.give_back(key)
        new = [key for key in keys if key not in table.slot_of]
        if new and started_of is not None:
            starts, known = started_of(), self._started
            for key in new:
                start = starts.get(key)
                if start is None:
                    continue
                if key in self.others and known.get(key) not in (None, start):
                    del self.others[key]          # another process with that pid
                known[key] = start
            if len(known) > 2 * self.max_processes:   # forget the long gone
                self._started = {k: v for k, v in known.items() if k in self}
        back = [key for key in new if key in self.others]
        for key in back:
            table.take(key, self.others.pop(key))
        if len(back) < len(new):
            table.take_empty([key for key in new if key not in table.slot_of])
        self.live = list(keys)
        self._slots = np.array([table.slot_of[k] for k in keys], dtype=np.intp)

    def _append_with_repeats(self, t: float, keys: list[ProcessKey],
                             values: list[float | None],
                             started_of: Callable[[], Mapping[ProcessKey, float | None]]
                             | None = None) -> None:
        """A snapshot listing a process twice: its rows are written in turn, and it
        counts as seen where it was last listed."""
        order = list(dict.fromkeys(reversed(keys)))[::-1]
        self._relist(order, started_of)
        self._unaligned()
        passes: list[tuple[list[int], list[float | None]]] = []
        count: dict[ProcessKey, int] = {}
        for key, value in zip(keys, values, strict=True):
            n = count[key] = count.get(key, 0) + 1
            while len(passes) < n:
                passes.append(([], []))
            passes[n - 1][0].append(self.table.slot_of[key])
            passes[n - 1][1].append(value)
        for slots, vals in passes:
            self.table.write(np.array(slots, dtype=np.intp), t,
                             np.array(vals, dtype=np.float64))
        self._evict()

    def _evict(self) -> None:
        over = len(self.others) + len(self.live) - self.max_processes
        while over > 0 and self.others:
            self.others.popitem(last=False)
            over -= 1
        if over > 0:                           # more processes in one snapshot than kept
            for key in self.live[:over]:
                self.table.give_back(key)
            self.live = self.live[over:]
            self._slots = self._slots[over:]
            self._unaligned()

    def _unaligned(self) -> None:
        """The table's order is no longer a snapshot's listing."""
        self.by_gpu, self.pids_by_gpu, self._listing = {}, None, None
        self._values = self._array = None

    def runs(self, gpu_index: int) -> ProcessRuns | None:
        if self.pids_by_gpu is None:
            return None
        span = self.by_gpu.get(gpu_index, slice(0, 0))
        return ProcessRuns(self.table, self._slots[span], self.newest_s)
