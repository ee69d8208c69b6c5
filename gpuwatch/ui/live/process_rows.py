"""The process table's rows, kept in line with the samples: reused, sorted and filtered in place.

Each sample reconciles rows by (GPU, pid): vanished processes are removed, new ones
inserted. When the order of the rows holds, only the cells whose text changed are
announced (per column, in short runs: the view then repaints those cells, where one
range over every row would repaint the whole table); when rows move, the whole table
is. Sorting and filtering happen here rather than in a QSortFilterProxyModel, because a
proxy re-sorts by calling ``data()`` (Python) thousands of times per sample; one
``sorted()`` with a key is far cheaper. What each row shows is
:class:`~gpuwatch.ui.live.process_model.ProcessModel`'s.

The exited rows (:mod:`~gpuwatch.ui.live.exited_rows`) are the tail of the row list,
always below the live rows and sorted among themselves by the same column; a sample with
the same processes re-sorts only the live part.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

from gpuwatch.core.snapshot import ProcessSample
from gpuwatch.ui.live.exited_rows import ExitedProcesses
from gpuwatch.ui.live.process_texts import (
    BUDGET,
    COLUMNS,
    COMMAND,
    CONTAINER,
    CPU,
    GPU,
    MEMORY,
    NAME,
    PID,
    RSS,
    RUNNING,
    USER,
    command_line,
    running_step,
    shown_name,
)

Key = tuple[int, int]   # (gpu index, pid)
Index = QModelIndex | QPersistentModelIndex

RUN = 100   # rows per dataChanged: Qt repaints the whole viewport for larger ranges

# What the rows' order depends on, per sort column, read from the samples in one pass:
# while these hold, a quiet re-sort has nothing to do. (Running time sorts by start: its
# order does not change as the clock moves.)
_ORDER_FIELDS = {PID: attrgetter("pid"), USER: attrgetter("user"), NAME: shown_name,
                 GPU: attrgetter("gpu_index"), MEMORY: attrgetter("used_bytes"),
                 CPU: attrgetter("cpu_percent"), RSS: attrgetter("rss_bytes"),
                 RUNNING: attrgetter("started_at_s"), CONTAINER: attrgetter("container"),
                 COMMAND: attrgetter("cmdline", "name")}


class ProcessRows(QAbstractTableModel):
    """Which rows the table has, in what order, and which of their cells changed."""

    def __init__(self) -> None:
        super().__init__()
        self._keys: list[Key] = []               # visible rows, in display order
        self._samples: dict[Key, ProcessSample] = {}
        self._budgets: dict[Key, int] = {}       # predicted peak bytes of linked processes
        self._now_s = 0.0
        self._filter = ""
        self._gpu: int | None = None             # show only this GPU's processes
        self._sort_column = MEMORY
        self._sort_order = Qt.SortOrder.DescendingOrder
        self.exited = ExitedProcesses()
        self._exited_keys: list[Key] = []        # the exited rows shown: the tail of _keys
        # the live rows as last sorted, and what their order was worked out from
        self._ordered: tuple[list[Key], tuple[int, Qt.SortOrder, list[Any]]] | None = None
        # The rows a view shows (first, last), when it says: changes to the others'
        # cells are not announced (the view paints them fresh when they come into view).
        self.rows_in_view: Callable[[], tuple[int, int]] | None = None

    # Qt model API -------------------------------------------------------------------
    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._keys)

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        self._sort_column, self._sort_order = column, order
        self._exited_keys = self._sorted_exited(self._exited_keys)
        self._resort()

    # rows ---------------------------------------------------------------------------
    @property
    def live_rows(self) -> int:
        return len(self._keys) - len(self._exited_keys)

    @property
    def exited_rows(self) -> int:
        return len(self._exited_keys)

    def key_at(self, row: int) -> Key | None:
        return self._keys[row] if 0 <= row < len(self._keys) else None

    def row_of(self, key: Key) -> int:
        try:
            return self._keys.index(key)
        except ValueError:
            return -1

    @property
    def keys(self) -> list[Key]:
        """Every row's key in display order, exited rows (at the end) included."""
        return list(self._keys)

    @property
    def live_keys(self) -> list[Key]:
        return self._keys[:len(self._keys) - len(self._exited_keys)]

    # internals ----------------------------------------------------------------------
    @property
    def filtering(self) -> bool:
        """Whether some processes may be left out (a filter text or one GPU)."""
        return bool(self._filter) or self._gpu is not None

    def _accepts(self, p: ProcessSample) -> bool:
        if self._gpu is not None and p.gpu_index != self._gpu:
            return False
        f = self._filter
        if not f:
            return True
        hay = " ".join((str(p.pid), p.name or "", p.user or "", p.container or "",
                        " ".join(p.cmdline), f"gpu {p.gpu_index}")).lower()
        return all(word in hay for word in f.split())

    def _reconcile(self, old: dict[Key, ProcessSample] | None = None,
                   old_now_s: float = 0.0, exited_changed: bool = False,
                   same: bool | None = None) -> None:
        """Bring the rows in line with the samples, the exited processes and the filter.
        With ``old`` (the previous sample), rows that stayed in place are announced cell
        by cell; ``same``, when known, says whether the running rows are still the ones
        wanted."""
        if same is None or exited_changed or not same:
            wanted = [k for k, p in self._samples.items() if self._accepts(p)] \
                if self.filtering else list(self._samples)
            wanted_set = set(wanted)
            live = self._keys[:len(self._keys) - len(self._exited_keys)] \
                if self._exited_keys else self._keys
            same = wanted_set == set(live)
        if exited_changed or not same:                   # processes came, went or left
            exited = self._sorted_exited([k for k, e in self.exited.rows.items()
                                          if k not in wanted_set and self._accepts(e.sample)])
            wanted += exited
            self._remove_and_append(wanted, set(wanted))
            self._exited_keys = exited
            self._resort()
            self._changed_all()
            return
        # the same processes: reorder; then the cells that changed, or everything
        if self._resort(quietly=True):
            self._changed_all()   # the same rows in another order: repaint them all
            return
        if old is None:
            self._changed_all()
        else:
            self._changed_cells(old, old_now_s)

    def _remove_and_append(self, wanted: list[Key],
                           wanted_set: set[Key]) -> tuple[bool, list[Key]]:
        """Rows of vanished processes out, rows of new ones in at the end: (any removed,
        the new keys)."""
        # 1. remove vanished rows, in contiguous runs from the bottom up
        removed = False
        row = len(self._keys) - 1
        while row >= 0:
            if self._keys[row] in wanted_set:
                row -= 1
                continue
            end = row
            while row >= 0 and self._keys[row] not in wanted_set:
                row -= 1
            removed = True
            self.beginRemoveRows(QModelIndex(), row + 1, end)
            del self._keys[row + 1 : end + 1]
            self.endRemoveRows()
        # 2. append new rows
        present = set(self._keys)
        new = [k for k in wanted if k not in present]
        if new:
            n = len(self._keys)
            self.beginInsertRows(QModelIndex(), n, n + len(new) - 1)
            self._keys.extend(new)
            self.endInsertRows()
        return removed, new

    def _changed_cells(self, old: dict[Key, ProcessSample], old_now_s: float) -> None:
        """One dataChanged per column and run of changed rows (at most ``RUN`` long).
        Exited rows do not change: only the live ones are compared, and of those only
        the ones in view when a view says which (:attr:`rows_in_view`)."""
        now = self._now_s
        changed: dict[int, list[int]] = {}
        keys = self._keys[:len(self._keys) - len(self._exited_keys)] if self._exited_keys \
            else self._keys
        rows = range(len(keys))
        if self.rows_in_view is not None:
            first, last = self.rows_in_view()
            rows = range(max(0, first), min(len(keys), last + 1))
        samples = self._samples
        for row in rows:
            key = keys[row]
            p, q = samples[key], old.get(key)
            if q is None:
                cols = range(len(COLUMNS))
            elif p is q or p == q:
                if running_step(p.started_at_s, now) != running_step(q.started_at_s,
                                                                      old_now_s):
                    changed.setdefault(RUNNING, []).append(row)
                continue
            else:
                cols = [c for c, a, b in (
                    (USER, p.user, q.user), (NAME, p.name, q.name),
                    (MEMORY, p.used_bytes, q.used_bytes), (CPU, p.cpu_percent, q.cpu_percent),
                    (RSS, p.rss_bytes, q.rss_bytes), (CONTAINER, p.container, q.container),
                    (COMMAND, (p.cmdline, p.name), (q.cmdline, q.name))) if a != b]
                if running_step(p.started_at_s, now) != running_step(q.started_at_s,
                                                                      old_now_s):
                    cols.append(RUNNING)
            for col in cols:
                changed.setdefault(col, []).append(row)
        for col, runs in changed.items():
            start = prev = runs[0]
            for row in [*runs[1:], -2]:
                if row != prev + 1 or row - start >= RUN:
                    self.dataChanged.emit(self.index(start, col), self.index(prev, col))
                    start = row
                prev = row

    def _changed_all(self) -> None:
        if self._keys:
            self.dataChanged.emit(self.index(0, 0),
                                  self.index(len(self._keys) - 1, len(COLUMNS) - 1))

    def _resort(self, quietly: bool = False) -> bool:
        """Sort the rows; True when any moved.

        ``quietly`` moves the persistent indexes (selection, current row) without
        ``layoutChanged``, for a re-sort of the same rows, every sample while memory
        changes. ``layoutChanged`` makes the view lay out again a pass later, resize its
        scroll bars and header and repaint the table's frame and every widget under it
        (~30 % of the table's cost per sample); this view has no per-row state (uniform
        row heights, no spans, no hidden rows), so moving the indexes and repainting the
        rows is all a re-sort needs. The selection is one row (``SingleSelection``), so
        its range moves with its persistent corners.

        The exited rows (``_exited_keys``, sorted when they change) follow the live
        ones; a quiet re-sort sorts only the live ones."""
        key_fn, samples = self._sort_key(self._sort_column), self._samples
        tail = self._exited_keys
        if quietly:
            live = self._keys[:len(self._keys) - len(tail)] if tail else self._keys
            if self._ordered is not None and self._ordered[0] == live \
                    and self._ordered[1] == self._order_basis(live):
                return False          # the same rows, sorted on the same values
        else:
            live = [k for k in self._keys if k in samples] if tail else self._keys
        decorated = [(key_fn(samples[k], k), k) for k in live]
        decorated.sort(reverse=self._sort_order == Qt.SortOrder.DescendingOrder)
        ordered = [k for _, k in decorated]
        self._ordered = (ordered, self._order_basis(ordered))
        if tail:
            if quietly and ordered == live:
                return False
            ordered += tail
        if ordered == self._keys:
            return False
        if not quietly:
            self.layoutAboutToBeChanged.emit()
        old = self.persistentIndexList()      # the selection and current row: a few rows
        new_row = {k: ordered.index(k) for k in {self._keys[i.row()] for i in old}}
        moved = [self.index(new_row[self._keys[i.row()]], i.column()) for i in old]
        self._keys = ordered
        self.changePersistentIndexList(old, moved)
        if not quietly:
            self.layoutChanged.emit()
        return True

    def _order_basis(self, live: list[Key]) -> tuple[int, Qt.SortOrder, list[Any]]:
        """What the order of the ``live`` rows follows from: the sort column and order,
        and each row's value in it (its budget, for the Budget column)."""
        col = self._sort_column
        if col == BUDGET:
            values = list(map(self._budgets.get, live))
        else:
            values = list(map(_ORDER_FIELDS[col], map(self._samples.__getitem__, live)))
        return col, self._sort_order, values

    def _sorted_exited(self, keys: list[Key]) -> list[Key]:
        """Exited rows in the order of the sort column (their last samples), the most
        recent exit first among equals."""
        if not keys:
            return []
        rows = self.exited.rows
        key_fn = self._sort_key(self._sort_column)
        by_exit = sorted(keys, key=lambda k: -rows[k].exited_at_s)
        return sorted(by_exit, key=lambda k: key_fn(rows[k].sample, k),
                      reverse=self._sort_order == Qt.SortOrder.DescendingOrder)

    def _sort_key(self, col: int) -> Callable[[ProcessSample, Key], Any]:
        big = float("-inf")
        if col == PID:
            return lambda p, k: p.pid
        if col == USER:
            return lambda p, k: p.user or ""
        if col == NAME:
            return lambda p, k: shown_name(p).lower()     # as the column reads
        if col == GPU:
            return lambda p, k: p.gpu_index
        if col == MEMORY:
            return lambda p, k: big if p.used_bytes is None else p.used_bytes
        if col == BUDGET:
            return lambda p, k: self._budgets.get(k, big)
        if col == CPU:
            return lambda p, k: big if p.cpu_percent is None else p.cpu_percent
        if col == RSS:
            return lambda p, k: big if p.rss_bytes is None else p.rss_bytes
        if col == RUNNING:
            return lambda p, k: big if p.started_at_s is None else self._now_s - p.started_at_s
        if col == CONTAINER:
            return lambda p, k: p.container or ""
        return lambda p, k: command_line(p)
