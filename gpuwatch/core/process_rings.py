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

from gpuwatch.core.process_table import ProcessKey, ProcessRuns, ProcessTable
from gpuwatch.core.ring import PROCESS_COLUMNS, Ring
from gpuwatch.core.slot_ring import SlotRing

__all__ = ["PROCESS_COLUMNS", "ProcessRings", "ProcessRuns", "ProcessTable", "SlotRing"]


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
