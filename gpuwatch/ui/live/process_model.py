"""The process table's model: what each row shows, and the samples, budgets and probes it shows.

The rows themselves (which, in what order, which cells changed) are kept by
:class:`~gpuwatch.ui.live.process_rows.ProcessRows`. A row's texts are formatted once per
sample, when the view first asks for them, so ``data()`` is a lookup. A process that runs
the probe says "probe" in the Budget column, with the allocator's figures in its tooltip
(made on hover).

A process that left its GPU stays for :data:`EXITED_ROW_KEEP_S` as an *exited* row
(:mod:`~gpuwatch.ui.live.exited_rows`): its last memory, "exited 12:03:41" in the Running
column, always below the live rows. Their texts are made once, since they do not change.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtGui import QFont

from gpuwatch.core.probe_format import ProbeReport
from gpuwatch.core.snapshot import HostStatus, ProcessSample, Snapshot
from gpuwatch.core.units import UnitSystem
from gpuwatch.ui.live.exited_rows import Exited
from gpuwatch.ui.live.probe_view import probe_tooltip
from gpuwatch.ui.live.process_rows import Index, Key, ProcessRows
from gpuwatch.ui.live.process_texts import (
    BUDGET,
    COLUMNS,
    COMMAND,
    CONTAINER,
    CPU,
    MEMORY,
    NAME,
    NUMERIC,
    PID,
    RUNNING,
    budget_tooltip_text,
    command_line,
    exited_row_texts,
    exited_tooltip,
    next_row_texts,
    row_texts,
    running_step,
)
from gpuwatch.ui.widgets import theme

# the columns and names the window, the table and the tests take from here
__all__ = ["BUDGET", "COLUMNS", "COMMAND", "CONTAINER", "CPU", "EXITED", "HOLDING", "LIVE",
           "MEMORY", "NAME", "NUMERIC", "PID", "RUNNING", "SAMPLE_ROLE", "Key",
           "ProcessModel", "command_line"]

SAMPLE_ROLE = Qt.ItemDataRole.UserRole + 1

_DISPLAY = Qt.ItemDataRole.DisplayRole
_ALIGN = Qt.ItemDataRole.TextAlignmentRole
_ALIGN_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
_ALIGN_LEFT = int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
_ALIGNMENTS = tuple(_ALIGN_RIGHT if c in NUMERIC else _ALIGN_LEFT for c in range(len(COLUMNS)))
_DECORATION = Qt.ItemDataRole.DecorationRole
_TOOLTIP = Qt.ItemDataRole.ToolTipRole
_FONT = Qt.ItemDataRole.FontRole

# What a row is, for the view: running; exited (gone from its GPU, greyed); or listed by
# the driver though the host has no such process (a zombie: it still holds memory).
LIVE, EXITED, HOLDING = "live", "exited", "holding"


class ProcessModel(ProcessRows):
    def __init__(self) -> None:
        super().__init__()
        self._probes: dict[Key, ProbeReport] = {}   # this sample's probe reports
        self._texts: dict[Key, list[str]] = {}   # this sample's row texts, made on demand
        # the texts last made per row: (sample, running step, budget, probed, texts)
        self._made: dict[Key, tuple[ProcessSample, int | None, int | None, bool, list[str]]] = {}
        self._seen: dict[Key, ProcessSample] = {}   # the processes of the last snapshot seen
        self._shown_version = 0                     # of ``exited``, as the rows show it
        self._exited_texts: dict[Key, list[str]] = {}   # made once: they do not change
        self.units: UnitSystem = "iec"
        self._bold = QFont()
        self._bold.setBold(True)
        self._italic = QFont()
        self._italic.setItalic(True)

    # Qt model API -------------------------------------------------------------------
    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal:
            if role == Qt.ItemDataRole.DisplayRole:
                return COLUMNS[section]
            if role == Qt.ItemDataRole.TextAlignmentRole and section in NUMERIC:
                return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if role == Qt.ItemDataRole.ToolTipRole and section == BUDGET:
                return ("Predicted peak of the budget linked to this process; "
                        "\"probe\": the process runs the in-process probe")
        return None

    def data(self, index: Index, role: int = _DISPLAY) -> Any:
        if not index.isValid():
            return None
        if role == _DISPLAY:
            return self._texts_of(self._keys[index.row()])[index.column()]
        if role == _ALIGN:
            return _ALIGNMENTS[index.column()]
        col = index.column()
        if role == _DECORATION:
            if col == NAME:
                return theme.process_color(self._keys[index.row()][1])
            return None
        if role == _TOOLTIP:
            key = self._keys[index.row()]
            gone = self.exited_row(key)
            if col in (NAME, COMMAND):
                return command_line(self._sample_of(key))
            if col == CONTAINER:
                return self._sample_of(key).container
            if gone is not None:
                return exited_tooltip(gone, self.units)
            if col == BUDGET:
                return self._budget_tooltip(key)
            return None
        if role == _FONT:
            key = self._keys[index.row()]
            if key not in self._samples:
                return self._italic
            if col == BUDGET and key in self._budgets:
                return self._bold
            return None
        if role == SAMPLE_ROLE:
            return self._sample_of(self._keys[index.row()])
        return None

    # updates ------------------------------------------------------------------------
    def update_snapshot(self, snapshot: Snapshot) -> None:
        old, old_now = self._samples, self._now_s
        self._now_s = snapshot.timestamp_s
        samples = self._samples = {(p.gpu_index, p.pid): p for p in snapshot.processes}
        self._texts = {}
        seen = self._seen
        same = self._note_exits(samples, snapshot)
        if not same and len(self._made) > len(samples):   # forget the rows of the gone
            self._made = {k: v for k, v in self._made.items() if k in samples}
        changed = self.exited.version != self._shown_version
        self._shown_version = self.exited.version
        # unfiltered rows are the last sample's processes: then ``same`` says they hold
        self._reconcile(old, old_now, exited_changed=changed,
                        same=same if seen is old and not self.filtering else None)

    def pass_snapshot(self, snapshot: Snapshot) -> None:
        """A snapshot the table will not show (one of a burst, before the newest): only
        the processes that left in it are noted, so none is missed."""
        self._note_exits({(p.gpu_index, p.pid): p for p in snapshot.processes}, snapshot)

    def _note_exits(self, samples: dict[Key, ProcessSample], snapshot: Snapshot) -> bool:
        """Note who left since the last snapshot seen; True when the processes are the
        same (the common case: one comparison, no bookkeeping)."""
        seen, self._seen = self._seen, samples
        exited = self.exited
        # in the same order (as samples come) the keys compare without hashing
        same = len(samples) == len(seen) and (list(samples) == list(seen)
                                              or samples.keys() == seen.keys())
        changed = not same and exited.observe(seen, samples, snapshot)
        changed = exited.settle(snapshot) or changed
        if exited.expire(snapshot.timestamp_s) or changed:
            self._exited_texts = {}
        return same

    def set_filter(self, text: str) -> None:
        self._filter = text.strip().lower()
        self._reconcile(exited_changed=True)

    def set_gpu(self, index: int | None) -> None:
        """Show only the processes on GPU ``index`` (None: on every GPU)."""
        if index != self._gpu:
            self._gpu = index
            self._reconcile(exited_changed=True)

    @property
    def gpu(self) -> int | None:
        return self._gpu

    @property
    def filter_text(self) -> str:
        return self._filter

    def set_budgets(self, budgets: dict[Key, int]) -> None:
        if budgets != self._budgets:
            self._budgets = dict(budgets)
            self._texts = {}
            self._changed_all()

    def set_probes(self, probes: dict[Key, ProbeReport]) -> None:
        """This sample's probe reports; the badges are redrawn only when one comes or goes."""
        came_or_went = probes.keys() != self._probes.keys()
        self._probes = probes
        if came_or_went:
            self._texts = {}
            self._changed_all()

    def probe(self, key: Key) -> ProbeReport | None:
        return self._probes.get(key)

    def set_units(self, units: UnitSystem) -> None:
        self.units = units
        self._texts = {}
        self._made = {}
        self._exited_texts = {}
        self._changed_all()

    def budget(self, key: Key) -> int | None:
        return self._budgets.get(key)

    def row_paint(self, row: int) -> tuple[list[str], int, bool, str]:
        """What the view paints for a row: its texts, the process's pid (its colour),
        whether the Budget cell is bold (a linked budget) and its state (see
        :meth:`row_state`); ``data()`` without the per-cell, per-role calls."""
        key = self._keys[row]
        p = self._samples.get(key)
        state = EXITED if p is None else HOLDING if p.host_status is HostStatus.EXITED \
            else LIVE
        return self._texts_of(key), key[1], key in self._budgets, state

    def row_state(self, row: int) -> str:
        """``LIVE``, ``EXITED`` (gone from its GPU: greyed) or ``HOLDING`` (the driver
        lists it, the host has no such process: it still holds memory)."""
        p = self._samples.get(self._keys[row])
        if p is None:
            return EXITED
        return HOLDING if p.host_status is HostStatus.EXITED else LIVE

    def exited_row(self, key: Key) -> Exited | None:
        """The exited process shown in row ``key``; None for a running one."""
        return None if key in self._samples else self.exited.rows.get(key)

    def is_exited(self, key: Key) -> bool:
        return key not in self._samples and key in self.exited.rows

    def sample(self, key: Key) -> ProcessSample | None:
        """The process's sample: this one, or its last for an exited row."""
        p = self._samples.get(key)
        if p is None:
            gone = self.exited.rows.get(key)
            return None if gone is None else gone.sample
        return p

    # internals ----------------------------------------------------------------------
    def _sample_of(self, key: Key) -> ProcessSample:
        p = self._samples.get(key)
        return self.exited.rows[key].sample if p is None else p

    def _budget_tooltip(self, key: Key) -> str | None:
        linked = budget_tooltip_text(self._budgets.get(key), self.units)
        report = self._probes.get(key)
        if report is None:
            return linked
        sample = self._samples.get(key)
        text = probe_tooltip(report, None if sample is None else sample.used_bytes, self.units)
        return text if linked is None else f"{linked}\n{text}"

    def _texts_of(self, key: Key) -> list[str]:
        """The row's texts for this sample, made the first time they are asked for: from
        the row's last texts when there are some (only what changed is formatted again),
        or the same list when nothing it shows changed."""
        texts = self._texts.get(key)
        if texts is None:
            p = self._samples.get(key)
            if p is None:
                return self._exited_texts_of(key)
            now = self._now_s
            step = running_step(p.started_at_s, now)
            budget, probed = self._budgets.get(key), key in self._probes
            made = self._made.get(key)
            if made is None or made[2] != budget or made[3] != probed:
                texts = row_texts(p, self.units, now, budget, probed)
            elif made[1] == step and (made[0] is p or made[0] == p):
                texts = made[4]
            else:
                texts = next_row_texts(made[0], made[4], p, self.units, now)
            self._texts[key] = texts
            self._made[key] = (p, step, budget, probed, texts)
        return texts

    def _exited_texts_of(self, key: Key) -> list[str]:
        texts = self._exited_texts.get(key)
        if texts is None:
            texts = self._exited_texts[key] = exited_row_texts(self.exited.rows[key],
                                                               self.units)
        return texts
