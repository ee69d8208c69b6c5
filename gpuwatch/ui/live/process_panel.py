"""The process table with its filter, context menu, and the selected process's history.

Right-click (or the keyboard) offers: copy the command line, link to a budget, and
terminate — the last only for the user's own running processes on real GPUs, after
asking (never for an exited row: its pid may belong to another process by now).
For a process that runs the probe, the history plot draws what PyTorch has allocated
under the measured line.
"""

from __future__ import annotations

import getpass
import os
import signal

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QItemSelectionModel, QPoint, Qt, Signal
from PySide6.QtGui import QAction, QColor, QFontMetrics, QGuiApplication, QKeySequence
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
from gpuwatch.core.snapshot import ProcessSample
from gpuwatch.core.units import UnitSystem, format_bytes
from gpuwatch.core.wording import plural
from gpuwatch.ui.live.probe_view import ProbeHistory
from gpuwatch.ui.live.process_model import MEMORY, NAME, Key, ProcessModel, command_line
from gpuwatch.ui.live.process_table import PADDING, SWATCH, SWATCH_GAP, ProcessTable, SortHeader
from gpuwatch.ui.live.text_lines import Run, TextLines
from gpuwatch.ui.widgets import theme
from gpuwatch.ui.widgets.axes import fast_axes
from gpuwatch.ui.widgets.plot_ranges import StickyRange, bounds, label_px, top_with_room
from gpuwatch.ui.widgets.plots import (
    WindowCurve,
    byte_unit,
    cache_text_items,
    quiet_hidden_axes,
    restyle_plot,
    ring_curve,
    settle,
)

NO_SELECTION = "Select a process to see its memory over time"
# What a cell typically says, per column but the last (Command, which takes the rest): the
# default widths show these whole, and each header beside its sort arrow when sorted.
COLUMN_SAMPLES = ("4194304", "username", "gnome-shell", "0", "88.8 GiB", "probe · 88.8 GiB",
                  "100 %", "88.8 GiB", "exited 00:00:00", "docker:0123456789ab")


def current_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name at all (some containers)
        return str(os.getuid())


class ProcessPanel(QWidget):
    link_requested = Signal(object)      # Key
    unlink_requested = Signal(object)    # Key
    selection_changed = Signal(object)   # Key | None

    def __init__(self, history: History, parent: QWidget | None = None):
        super().__init__(parent)
        self.history = history
        self.simulated = False
        self.units: UnitSystem = "iec"
        self.window_s = 600
        self.user = current_user()
        self._detail_stale = False
        self._exited_version = -1     # the model's exited rows the actions were set for
        self.model = ProcessModel()
        self.probe_history = ProbeHistory()   # fed by the window, one snapshot at a time

        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter by name, user, pid, command, container…  (Ctrl+F)")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self.model.set_filter)
        self.count = QLabel()
        self.count.setProperty("muted", True)

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
        header.sortIndicatorChanged.connect(lambda *_: header.fit_sorted())
        self.fit_columns()
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._context_menu)
        self.table.selectionModel().selectionChanged.connect(self._selected)

        self.detail_title = TextLines()
        self.detail_title.set(NO_SELECTION)
        self.detail_plot = pg.PlotWidget(axisItems=fast_axes())
        self.detail_plot.setMenuEnabled(False)
        self.detail_plot.hideButtons()
        self.detail_plot.setMouseEnabled(x=False, y=False)
        self.detail_plot.setMinimumHeight(90)
        quiet_hidden_axes(self.detail_plot)
        self.detail_plot.showGrid(x=True, y=True, alpha=theme.colors().grid_alpha)
        self.alloc_curve = WindowCurve(pen=pg.mkPen("#4e79a7", width=1))
        self.detail_curve = WindowCurve(pen=pg.mkPen("#4e79a7", width=1))
        self.detail_plot.addItem(self.alloc_curve)
        self.detail_plot.addItem(self.detail_curve)
        self._styled: tuple | None = None    # (unit name, pid, colour) the plot is set up for
        self._y_range = StickyRange()
        self._y_set: tuple[float, float] | None = None   # the y range the plot shows
        self._peak: float | None = None      # where the predicted-peak line is, if shown
        self.detail_plot.disableAutoRange(axis="y")
        self.detail_plot.getViewBox().sigResized.connect(lambda *_: self._fit_y())
        self.peak_line = pg.InfiniteLine(angle=0, pen=pg.mkPen(theme.UNEXPLAINED_COLOR, width=1.2,
                                                               style=Qt.PenStyle.DashLine),
                                         label="predicted peak",
                                         labelOpts={"position": 0.02,
                                                    "color": theme.UNEXPLAINED_COLOR,
                                                    "anchors": [(0, 1), (0, 1)]})
        self.detail_plot.addItem(self.peak_line)
        cache_text_items(self.detail_plot)        # the line's label too, while it is in
        self._show_peak(None)

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
        bottom = QWidget()
        bottom_layout = QVBoxLayout(bottom)
        bottom_layout.setContentsMargins(0, 0, 0, 0)
        bottom_layout.setSpacing(2)
        bottom_layout.addWidget(self.detail_title)
        bottom_layout.addWidget(self.detail_plot)
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setObjectName("processSplitter")
        self.splitter.addWidget(top)
        self.splitter.addWidget(bottom)
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
            for col, width in enumerate(self.default_widths()):
                self.table.setColumnWidth(col, width)
        header = self.table.horizontalHeader()
        assert isinstance(header, SortHeader)
        header.fit_sorted()

    def default_widths(self) -> list[int]:
        """Column widths from the font: each shows its sample text and its header."""
        metrics = QFontMetrics(self.table.font())
        header = self.table.horizontalHeader()
        assert isinstance(header, SortHeader)
        widths = []
        for col, sample in enumerate(COLUMN_SAMPLES):
            cell = metrics.horizontalAdvance(sample) + 2 * PADDING + 2
            if col == NAME:
                cell += SWATCH + SWATCH_GAP
            widths.append(max(cell, header.width_for(col, arrow=False)))
        return widths

    # updates -------------------------------------------------------------------------
    def refresh(self) -> None:
        snap = self.history.latest
        if snap is None:
            return
        model = self.model
        model.update_snapshot(snap)
        total = len(snap.processes)
        shown = model.live_rows
        text = (f"{shown} of {plural(total, 'process', 'processes')}" if shown != total
                else plural(total, "process", "processes"))
        if model.exited_rows:
            text += f" · {model.exited_rows} exited"
        self.count.setText(text)
        if model.exited.version != self._exited_version:   # a process left or went
            self._exited_version = model.exited.version
            self._sync_actions()
        self._refresh_detail()

    def restyle(self) -> None:
        restyle_plot(self.detail_plot)
        c = theme.colors()
        # opaque: a new figure in the title repaints the title alone, not the panels under it
        self.detail_title.set_colors(QColor(c.muted), QColor(c.window))
        self._styled = None

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
        self.table.selectionModel().select(
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
            self.detail_title.set(NO_SELECTION)
            self.detail_curve.setData([], [])
            self.alloc_curve.setData([], [])
            self._show_peak(None)
            if self.history.latest is not None:
                now = self.history.latest.timestamp_s
                self.detail_plot.setXRange(now - self.window_s, now, padding=0)
            return
        name, scale = byte_unit(self.units)
        budget = self.model.budget(key)
        gone = self.model.exited_row(key)
        held = format_bytes(p.used_bytes, self.units)
        title = [Run(p.name or "?", bold=True),
                 Run(f" (pid {p.pid}, GPU {p.gpu_index}) · " + (
                     held if gone is None else
                     f"exited {gone.clock}, holding {held} when last seen"))]
        if budget is not None:
            title.append(Run(f" · predicted peak {format_bytes(budget, self.units)}"))
        report = self.model.probe(key)
        alloc_ring = None if report is None else self.probe_history.ring(p.pid)
        if report is not None and report.allocator is not None:
            color = theme.process_color(p.pid).darker(140).name()
            title += [Run(" · "), Run("╌ allocated "
                      f"{format_bytes(report.allocator.allocated_bytes, self.units)}", color),
                      Run(" (probe)")]
        self.detail_title.set_runs(title)
        self._style_detail(name, p.pid)
        ring = self.history.process(*key)
        snap = self.history.latest
        shown: list[np.ndarray] = []
        if ring is not None and snap is not None:
            now = snap.timestamp_s
            pixels = max(200, self.detail_plot.width())
            x, y = ring_curve(ring, "used_bytes", now - self.window_s, now, pixels, scale)
            self.detail_curve.setData(x, y, connect="finite")
            shown.append(y)
            if alloc_ring is not None:
                x, y = ring_curve(alloc_ring, "allocated_bytes", now - self.window_s, now,
                                  pixels, scale)
                self.alloc_curve.setData(x, y, connect="finite")
                shown.append(y)
        if alloc_ring is None:
            self.alloc_curve.setData([], [])
        if snap is not None:
            self.detail_plot.setXRange(snap.timestamp_s - self.window_s, snap.timestamp_s,
                                       padding=0)
        self._show_peak(None if budget is None else budget / scale)
        if budget is not None:
            shown.append(np.array([budget / scale]))
        if self._y_range.fit(*bounds(*shown)) is not None or budget is not None:
            self._fit_y()
        settle(self.detail_plot)

    def _fit_y(self) -> None:
        """The fitted range, raised where the predicted-peak line needs room above it for
        its label (the plot's edge would cut it)."""
        fitted = self._y_range.shown
        if fitted is None:
            return
        low, top = fitted
        peak = self._peak
        if peak is not None:
            room, _ = label_px()
            top = top_with_room(low, peak, top, self.detail_plot.getViewBox().height(), room)
        if (low, top) != self._y_set:
            self._y_set = (low, top)
            self.detail_plot.setYRange(low, top, padding=0)

    def _show_peak(self, value: float | None) -> None:
        """The predicted-peak line at ``value``, or out of the plot: a line in the plot
        moves its label on every change of the view (each second), shown or not."""
        self._peak = value
        line = self.peak_line
        attached = line.scene() is not None
        if value is None:
            if attached:
                self.detail_plot.removeItem(line)
            line.hide()
            return
        line.setPos(value)
        if not attached:
            self.detail_plot.addItem(line)
        line.show()

    def _style_detail(self, unit_name: str, pid: int) -> None:
        """Axis label and pens, set only when they change: pyqtgraph re-lays out an axis
        label and invalidates the curve on every call, even with the same values."""
        color = theme.process_color(pid)
        style = (unit_name, pid, color.rgba())
        if style == self._styled:
            return
        if style[:2] != (self._styled or ())[:2]:
            self._y_range = StickyRange()     # another process, or unit: fit it afresh
        self._styled = style
        self.detail_plot.setLabel("left", unit_name)
        self.detail_curve.setPen(pg.mkPen(color, width=1))
        self.alloc_curve.setPen(pg.mkPen(color.darker(140), width=1,
                                         style=Qt.PenStyle.DashLine))

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

