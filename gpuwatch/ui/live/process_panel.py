"""The process table with its filter and context menu, over the selected process's history.

Right-click (or the keyboard) offers: copy the command line, link to a budget, and
terminate — the last only for the user's own running processes on real GPUs, after
asking (never for an exited row: its pid may belong to another process by now).
The history under the table is :class:`~gpuwatch.ui.live.process_plot.ProcessPlot`.
"""

from __future__ import annotations

import getpass
import os
import signal

from PySide6.QtCore import QItemSelectionModel, QPoint, Qt, Signal
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QMessageBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from gpuwatch.core.history import History
from gpuwatch.core.snapshot import BackendKind, ProcessSample, Snapshot
from gpuwatch.core.units import UnitSystem, format_bytes
from gpuwatch.core.wording import plural
from gpuwatch.ui.live.column_fit import ColumnFit
from gpuwatch.ui.live.probe_view import ProbeHistory
from gpuwatch.ui.live.process_model import MEMORY, Key, ProcessModel, command_line
from gpuwatch.ui.live.process_plot import ProcessPlot
from gpuwatch.ui.live.process_table import ProcessTable, SortHeader
from gpuwatch.ui.live.process_texts import CPU, RSS, RUNNING


def current_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name at all (some containers)
        return str(os.getuid())


class ProcessPanel(QWidget):
    link_requested = Signal(object)      # Key
    unlink_requested = Signal(object)    # Key
    selection_changed = Signal(object)   # Key | None
    columns_widened = Signal()           # a longer text widened a column (see column_fit)

    def __init__(self, history: History, parent: QWidget | None = None):
        super().__init__(parent)
        self.history = history
        self.simulated = False
        self.units: UnitSystem = "iec"
        self.window_s = 600
        self.user = current_user()
        self._detail_stale = False
        self._auto_key: Key | None = None   # the row selected for the user, not by them
        self._exited_version = -1     # the model's exited rows the actions were set for
        self.model = ProcessModel()
        self._remote = False          # the host-only columns are hidden
        self.probe_history = ProbeHistory()   # fed by the window, one snapshot at a time

        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter by name, user, pid, command, container…  (Ctrl+F)")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self._filter_changed)
        self.filter.setAccessibleName("Filter processes")
        self.filter.setAccessibleDescription("Show only the processes whose name, user, pid, "
                                             "command or container contain these words")
        self.count = QLabel()
        self.count.setProperty("muted", True)
        self.count.setAccessibleName("Process count")

        self.table = ProcessTable()
        self.table.setModel(self.model)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(MEMORY, Qt.SortOrder.DescendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setAlternatingRowColors(True)
        self.table.setShowGrid(False)
        self.table.setWordWrap(False)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(24)
        self.table.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        header.setHighlightSections(False)
        self.column_fit = ColumnFit(self.table)
        header.sortIndicatorChanged.connect(lambda *_: self._fit_sorted())
        self.table.verticalScrollBar().valueChanged.connect(self._fit_texts)
        self.fit_columns()
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._context_menu)
        self.table.selectionModel().selectionChanged.connect(self._selected)

        self.detail = ProcessPlot(history, self.probe_history)
        # its parts, as the window and its checks know them
        self.detail_title = self.detail.detail_title
        self.detail_plot = self.detail.detail_plot
        self.detail_curve = self.detail.detail_curve
        self.alloc_curve = self.detail.alloc_curve
        self.peak_line = self.detail.peak_line

        self.copy_action = QAction("Copy command line", self)
        self.copy_action.setShortcut(QKeySequence.StandardKey.Copy)
        self.copy_action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.copy_action.triggered.connect(self.copy_command_line)
        self.terminate_action = QAction("Terminate…", self)
        self.terminate_action.setShortcut(QKeySequence.StandardKey.Delete)
        self.terminate_action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.terminate_action.triggered.connect(self.terminate_selected)
        self.link_action = QAction("Link to the budget in the form", self)
        self.link_action.setShortcut(QKeySequence("Ctrl+L"))
        self.link_action.triggered.connect(lambda: self._emit_for_selected(self.link_requested))
        self.unlink_action = QAction("Unlink budget", self)
        self.unlink_action.triggered.connect(lambda: self._emit_for_selected(self.unlink_requested))
        self.table.addActions([self.copy_action, self.terminate_action])

        head = QHBoxLayout()
        head.addWidget(self.filter, 1)
        head.addWidget(self.count)
        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addLayout(head)
        top_layout.addWidget(self.table)
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setObjectName("processSplitter")
        self.splitter.addWidget(top)
        self.splitter.addWidget(self.detail)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([600, 200])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.splitter)

    def fit_columns(self, keep_widths: bool = False) -> None:
        """Default column widths (unless ``keep_widths``: the user's, restored), and room
        for the sort arrow in the sorted column. Run again once the window's stylesheet is
        in force: it sets the headers' padding."""
        if not keep_widths:
            with self.column_fit.sizing():
                for col, width in enumerate(self.default_widths()):
                    self.table.setColumnWidth(col, width)
        self._fit_sorted()

    def _fit_sorted(self) -> None:
        header = self.table.horizontalHeader()
        assert isinstance(header, SortHeader)
        with self.column_fit.sizing():
            header.fit_sorted()

    def _fit_texts(self) -> None:
        """Widen the columns whose texts in view do not fit (see column_fit)."""
        if self.column_fit.fit():
            self.columns_widened.emit()

    def shown_widths(self) -> list[int]:
        """Each column's width as it is now (0: hidden)."""
        header = self.table.horizontalHeader()
        return [0 if header.isSectionHidden(c) else header.sectionSize(c)
                for c in range(header.count())]

    HOST_ONLY = (CPU, RSS, RUNNING)   # what only the processes' own host can read

    def _hide_unknowable(self, snap: Snapshot) -> None:
        """Read from a Prometheus server (other hosts' GPUs) the host-only columns
        cannot be known: hidden rather than a column of n/a."""
        remote = snap.backend.kind is BackendKind.PROMETHEUS
        if remote != self._remote:
            self._remote = remote
            for col in self.HOST_ONLY:
                self.table.setColumnHidden(col, remote)

    def default_widths(self) -> list[int]:
        """Column widths from the font: each shows its sample text and its header."""
        return self.column_fit.defaults()

    # updates -------------------------------------------------------------------------
    def refresh(self) -> None:
        snap = self.history.latest
        if snap is None:
            return
        model = self.model
        model.update_snapshot(snap)
        self._hide_unknowable(snap)
        total = len(snap.processes)
        shown = model.live_rows
        text = (f"{shown} of {plural(total, 'process', 'processes')}" if shown != total
                else plural(total, "process", "processes"))
        if model.gpu is not None:
            text += f" · GPU {model.gpu} only"
        unseen = sum(1 for k in model.keys[model.live_rows:]
                     if (e := model.exited.rows.get(k)) is not None and e.unseen)
        if model.exited_rows - unseen:
            text += f" · {model.exited_rows - unseen} exited"
        if unseen:
            text += f" · {unseen} unknown"
        self.count.setText(text)
        self.table.set_empty_text(self.empty_text())
        self._fit_texts()
        if model.exited.version != self._exited_version:   # a process left or went
            self._exited_version = model.exited.version
            self._sync_actions()
        if not self.select_default():
            self._refresh_detail()

    def empty_text(self) -> str:
        """Why the table has no row: no sample yet, no process, or the filter's doing."""
        snap = self.history.latest
        if snap is None:
            return "Waiting for the first sample…"
        gpu, words = self.model.gpu, self.model.filter_text
        if words:
            where = "" if gpu is None else f" on GPU {gpu}"
            return f"No process{where} matches “{words}”"
        errors = [g for g in snap.gpus if g.processes_error and gpu in (None, g.index)]
        if errors:
            g = errors[0]
            return f"GPU {g.index}'s process list could not be read: {g.processes_error}"
        if not snap.gpus:
            return "No GPU to list processes for"
        return "No process is using GPU memory" if gpu is None else \
            f"No process is using memory on GPU {gpu}"

    def _no_selection_text(self) -> str | None:
        """What the plot under the table says with no row selected (None: the hint)."""
        if self.model.rowCount() == 0:
            return self.empty_text()
        if self.model.live_rows == 0:
            return ("No process is using GPU memory now; select an exited row to see its "
                    "memory until it left")
        return None

    def select_default(self) -> bool:
        """With no row selected, select the first running process (the largest user of
        memory, unless sorted otherwise), so the plot under the table shows someone;
        True if it did. Exited rows are never chosen for the user, and a process chosen
        this way that exits gives way to the next (the user's own choice stays)."""
        selected = self.selected_key()
        if selected is not None and selected == self._auto_key \
                and self.model.is_exited(selected):
            self.table.selectionModel().clearSelection()
            selected = None
        if selected is not None or self.model.live_rows == 0:
            return False
        key = self._auto_key = self.model.key_at(0)
        return key is not None and self.select(key)

    def set_gpu_filter(self, index: int | None) -> None:
        """List only GPU ``index``'s processes (None: every GPU's)."""
        self.model.set_gpu(index)
        self.refresh()

    def _filter_changed(self, text: str) -> None:
        self.model.set_filter(text)
        self.table.set_empty_text(self.empty_text())
        self.select_default()

    def restyle(self) -> None:
        self.detail.restyle()

    def set_units(self, units: UnitSystem) -> None:
        self.units = units
        self.model.set_units(units)
        self._refresh_detail()

    def selected_key(self) -> Key | None:
        rows = self.table.selectionModel().selectedRows()
        return self.model.key_at(rows[0].row()) if rows else None

    def selected_sample(self) -> ProcessSample | None:
        key = self.selected_key()
        return None if key is None else self.model.sample(key)

    def select(self, key: Key) -> bool:
        row = self.model.row_of(key)
        if row < 0:
            return False
        self.table.selectionModel().setCurrentIndex(
            self.model.index(row, 0),
            QItemSelectionModel.SelectionFlag.ClearAndSelect
            | QItemSelectionModel.SelectionFlag.Rows)
        return True

    def _selected(self, *_: object) -> None:
        self._sync_actions()
        self._refresh_detail()
        self.selection_changed.emit(self.selected_key())

    def _sync_actions(self) -> None:
        """Terminate is off for an exited row (there is nothing to signal)."""
        key = self.selected_key()
        self.terminate_action.setEnabled(key is None or not self.model.is_exited(key))

    def showEvent(self, event: object) -> None:
        super().showEvent(event)  # type: ignore[arg-type]
        if self._detail_stale:
            self._refresh_detail()

    def _refresh_detail(self) -> None:
        # The history plot is only redrawn while it can be seen (the tab is current);
        # showing the tab brings it up to date.
        self._detail_stale = self.window().isVisible() and not self.isVisible()
        if self._detail_stale:
            return
        key = self.selected_key()
        p = None if key is None else self.model.sample(key)
        if key is None or p is None:
            self.detail.show_none(self.window_s, self._no_selection_text())
            return
        self.detail.show_process(key, p, self.model.budget(key), self.model.exited_row(key),
                                 self.model.probe(key), self.units, self.window_s)

    # actions -------------------------------------------------------------------------
    def _emit_for_selected(self, sig: Signal) -> None:
        key = self.selected_key()
        if key is not None:
            sig.emit(key)

    def can_terminate(self, p: ProcessSample) -> tuple[bool, str]:
        gone = self.model.exited_row((p.gpu_index, p.pid))
        if gone is not None:
            return False, (f"pid {p.pid} exited at {gone.clock}: there is nothing to "
                           "terminate")
        if self.simulated:
            return False, "Simulated process: there is nothing to terminate"
        if not p.resolved or p.user is None:
            return False, "The owner of this process is unknown here"
        if p.user != self.user:
            return False, f"Only your own processes can be terminated (this one is {p.user}'s)"
        return True, f"Send SIGTERM to pid {p.pid}"

    def copy_command_line(self) -> None:
        p = self.selected_sample()
        if p is not None:
            QGuiApplication.clipboard().setText(command_line(p))

    def terminate_selected(self) -> None:
        p = self.selected_sample()
        if p is None:
            return
        ok, why = self.can_terminate(p)
        if not ok:
            QMessageBox.information(self, "Terminate process", why)
            return
        answer = QMessageBox.question(
            self, "Terminate process",
            f"Send SIGTERM to {p.name or '?'} (pid {p.pid}) on GPU {p.gpu_index}?\n\n"
            f"{command_line(p)}\n\nIt holds {format_bytes(p.used_bytes, self.units)} of GPU "
            "memory. Unsaved work in it may be lost.",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Cancel)
        if answer != QMessageBox.StandardButton.Yes:
            return
        try:
            os.kill(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            QMessageBox.information(self, "Terminate process", f"pid {p.pid} has already ended.")
        except PermissionError:
            QMessageBox.warning(self, "Terminate process",
                                f"Not allowed to signal pid {p.pid}.")

    def _context_menu(self, pos: QPoint) -> None:
        index = self.table.indexAt(pos)
        if not index.isValid():
            return
        self.table.selectRow(index.row())
        p = self.selected_sample()
        if p is None:
            return
        menu = QMenu(self)
        menu.addAction(self.copy_action)
        menu.addSeparator()
        menu.addAction(self.link_action)
        key = self.selected_key()
        self.unlink_action.setEnabled(key is not None and self.model.budget(key) is not None)
        menu.addAction(self.unlink_action)
        menu.addSeparator()
        ok, why = self.can_terminate(p)
        self.terminate_action.setEnabled(ok)
        self.terminate_action.setToolTip(why)
        menu.setToolTipsVisible(True)
        menu.addAction(self.terminate_action)
        menu.exec(self.table.viewport().mapToGlobal(pos))
        self._sync_actions()

