"""A process's ring that is a row of the history's process table (``process_table``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from gpuwatch.core.ring import PROCESS_COLUMNS, Ring

if TYPE_CHECKING:
    from gpuwatch.core.process_table import ProcessTable


class SlotRing(Ring):
    """A process's ring that is a row of a :class:`ProcessTable`: reads as a ring does
    (its history writes it). Once its process has left the table, it reads the
    separate ring its rows were moved to (no longer written)."""

    def __init__(self, table: ProcessTable, slot: int):   # a view: no columns of its own
        self._table = table
        self._slot = slot
        self.moved: Ring | None = None
        self.capacity = table.capacity

    def _ring(self) -> Ring:
        """A ring over the row as it is now (cheap: no copy)."""
        if self.moved is not None:
            return self.moved
        table, slot = self._table, self._slot
        ring = Ring.__new__(Ring)
        ring.capacity = table.capacity
        ring._size = table.width
        ring._names = tuple(PROCESS_COLUMNS)
        ring._arrays = [table.ts[slot], table.used[slot]]
        ring._start = int(table.start[slot])
        ring._len = int(table.length[slot])
        return ring

    def __len__(self) -> int:
        return len(self.moved) if self.moved is not None else int(self._table.length[self._slot])

    @property
    def nbytes(self) -> int:
        return self.moved.nbytes if self.moved is not None else self._table.nbytes_per_row

    def column(self, name: str, last: int | None = None) -> np.ndarray:
        return self._ring().column(name, last)

    def since(self, since_s: float, names: Sequence[str]) -> dict[str, np.ndarray]:
        return self._ring().since(since_s, names)

    def peak_since(self, name: str, since_s: float) -> float | None:
        return self._ring().peak_since(name, since_s)

    def first(self, name: str) -> float | None:
        return self._ring().first(name)

    def last(self, name: str) -> float | None:
        return self._ring().last(name)

    def _written_by_history(self, *args: object) -> None:
        raise TypeError("a process ring of a History is written by History.append")

    append_values = append_pair = append = load_columns = _written_by_history  # type: ignore[assignment]


