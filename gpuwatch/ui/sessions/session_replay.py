"""Replaying a recorded session: its timelines in the window's time plots, a slider to scrub
through time, and the hints, processes and events it recorded.

A replay is its own window (the main window keeps sampling live behind it). The session
is read on a worker thread into a :class:`~gpuwatch.core.history.History` — whole columns
at once — and the plots draw from that exactly as they draw live data. The file is opened
read-only and never modified.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, QSize, Qt, QThreadPool, QTimer, Signal, Slot
from PySide6.QtGui import QKeySequence, QScreen, QShortcut
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMessageBox,
    QSlider,
    QSplitter,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gpuwatch.core.history import History
from gpuwatch.core.units import format_bytes, format_duration
from gpuwatch.sessions import replay
from gpuwatch.sessions.errors import SessionFileError
from gpuwatch.sessions.reader import (
    SessionReader,
)
from gpuwatch.sessions.replay import ReplayData, load_overview, load_replay
from gpuwatch.ui.settings import PLOT_WINDOWS_S
from gpuwatch.ui.widgets import theme
from gpuwatch.ui.widgets.plots import TimePlots


def pick_window(duration_s: float) -> int:
    """The smallest plot window that shows the whole session (else the largest)."""
    return next((w for w in PLOT_WINDOWS_S if w >= duration_s), PLOT_WINDOWS_S[-1])


DEATHS = {"likely-oom": "OOM", "gpu-lost": "GPU lost"}   # hint codes marked on the plots


def fitting_size(screen: QScreen | None, wanted: tuple[int, int] = (1300, 850)) -> QSize:
    """``wanted``, or the screen's free area less a title bar where that is smaller."""
    want = QSize(*wanted)
    if screen is None:
        return want
    free = screen.availableGeometry()
    return want.boundedTo(QSize(free.width(), free.height() - 40))


def clock_text(t_abs: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t_abs))


class _Loader(QObject):
    overview = Signal(object)  # ReplayData, for a long session, before the full one
    loaded = Signal(object)    # ReplayData
    failed = Signal(str)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.overview_shown = threading.Event()

    def start(self, path: Path) -> None:
        def work() -> None:
            try:
                with SessionReader(path) as r:
                    info = r.info()
                if info.samples > replay.OVERVIEW_ABOVE:
                    self.overview.emit(load_overview(path, info=info))
                    # let the GUI paint it before competing with it for the interpreter
                    self.overview_shown.wait(5.0)
                data = load_replay(path)
            except SessionFileError as exc:
                self.failed.emit(str(exc))
            except Exception as exc:       # a damaged file must not take the window down
                self.failed.emit(f"{path}: cannot be replayed ({type(exc).__name__}: {exc})")
            else:
                self.loaded.emit(data)

        QThreadPool.globalInstance().start(work)


class ReplayWindow(QMainWindow):
    """One recorded session, read-only, with a time slider."""

    loaded = Signal()            # every sample is in the plots
    first_shown = Signal()       # something is in the plots (an overview of a long session)
    failed = Signal(str)

    def __init__(self, path: str | Path, parent: QWidget | None = None,
                 recording: bool = False):
        super().__init__(parent)
        self.path = Path(path)
        self.recording = recording      # the window is recording this session right now
        self.death_marks: list[pg.InfiniteLine] = []
        self.data: ReplayData | None = None
        self.error: str | None = None
        self.cursor_s: float | None = None
        self._series: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.setWindowTitle(f"Replay — {self.path.name}")
        self.resize(fitting_size(self.screen()))

        self.banner = QFrame()
        self.banner.setObjectName("banner")
        self.banner_label = QLabel(f"Replaying <b>{self.path.name}</b> — reading…")
        self.banner_label.setWordWrap(True)
        b = QHBoxLayout(self.banner)
        b.setContentsMargins(12, 6, 12, 6)
        b.addWidget(self.banner_label)

        self.plots = TimePlots(History())
        self.plots.pause_button.hide()            # replay has no live edge to follow
        self.plots.state_label.hide()
        self.plots.window_changed.connect(lambda _: self._apply_view())
        for key, seconds in enumerate(PLOT_WINDOWS_S, start=1):    # 1–4, as in the window
            QShortcut(QKeySequence(str(key)), self,
                      lambda seconds=seconds: self.plots.set_window(seconds))
        pen = pg.mkPen(theme.colors().muted, width=1, style=Qt.PenStyle.DashLine)
        self.cursor_lines = [pg.InfiniteLine(angle=90, movable=True, pen=pen),
                             pg.InfiniteLine(angle=90, movable=False, pen=pen)]
        self.plots.memory.addItem(self.cursor_lines[0])
        self.plots.bandwidth.addItem(self.cursor_lines[1])
        self.cursor_lines[0].sigDragged.connect(
            lambda line: self.set_cursor(float(line.value()), follow=False))

        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setEnabled(False)
        self.slider.valueChanged.connect(self._slider_moved)
        self.time_label = QLabel("")
        self.values_label = QLabel("")
        self.values_label.setProperty("muted", True)
        self.values_label.setWordWrap(True)
        scrub = QHBoxLayout()
        scrub.setContentsMargins(8, 0, 8, 0)
        scrub.addWidget(QLabel("Time:"))
        scrub.addWidget(self.slider, 1)
        scrub.addWidget(self.time_label)

        self.hints = QTreeWidget()
        self.hints.setHeaderLabels(["At", "Severity", "Hint", "GPU", "PID", "Closed"])
        self.hints.setRootIsDecorated(False)
        self.hints.itemActivated.connect(self._jump_to_item)
        self.hints.itemClicked.connect(self._jump_to_item)
        self.processes = QTreeWidget()
        self.processes.setHeaderLabels(["GPU", "PID", "Name", "User", "First seen",
                                        "Last seen", "Peak"])
        self.processes.setRootIsDecorated(False)
        self.processes.itemClicked.connect(self._jump_to_item)
        self.events = QTreeWidget()
        self.events.setHeaderLabels(["At", "Event", "GPU", "PID", "Detail"])
        self.events.setRootIsDecorated(False)
        self.events.itemClicked.connect(self._jump_to_item)
        self.tabs = QTabWidget()
        self.tabs.addTab(self.hints, "Hints")
        self.tabs.addTab(self.processes, "Processes")
        self.tabs.addTab(self.events, "Events")

        top = QWidget()
        v = QVBoxLayout(top)
        v.setContentsMargins(0, 0, 0, 4)
        v.addWidget(self.plots, 1)
        v.addLayout(scrub)
        v.addWidget(self.values_label)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(top)
        split.addWidget(self.tabs)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.banner)
        layout.addWidget(split, 1)
        self.setCentralWidget(central)
        self._loader = _Loader(self)
        self._loader.overview.connect(self.show_data)
        self._loader.loaded.connect(self.show_data)
        self._loader.failed.connect(self._failed)

    # loading ----------------------------------------------------------------------------
    def start(self) -> None:
        """Read the session on a worker thread; :attr:`loaded` or :attr:`failed` follows."""
        self._loader.start(self.path)

    @Slot(object)
    def show_data(self, data: ReplayData) -> None:
        """Show an overview or the full session; the full one replaces an overview in
        place, keeping the cursor and the window."""
        first = self.data is None
        self.data = data
        info = data.info
        self.plots.history = data.history
        self._series = {index: (ring.column("timestamp_s"), ring.column("used_bytes"))
                        for index, ring in data.history.gpus.items()}
        source = "NVML" if info.backend_kind == "nvml" else \
            f"simulated GPUs · {info.scenario}" if info.scenario else info.backend_kind
        unclosed = "" if info.ended_at_s is not None else \
            " — <i>still being recorded; shown up to its last commit</i>" if self.recording \
            else (" — <i>the recording was not closed (a crash or kill); shown up to its "
                  "last commit</i>")
        detail = " — <i>overview; every sample is still loading…</i>" if data.overview else ""
        self.banner_label.setText(
            f"Replaying <b>{self.path.name}</b> (recorded {clock_text(info.started_at_s)}, "
            f"{format_duration(info.duration_s)}, {len(data.gpus)} GPU"
            f"{'s' if len(data.gpus) != 1 else ''}, {source}){unclosed}{detail}")
        if first:
            self._fill_lists(data)
            self._mark_deaths(data)
            self.slider.setRange(0, max(0, round(data.end_s - data.start_s)))
            self.slider.setEnabled(True)
            self.plots.set_window(pick_window(info.duration_s))
            self.set_cursor(data.end_s)
            self.first_shown.emit()
            if data.overview:
                QTimer.singleShot(0, self._loader.overview_shown.set)   # after this paints
        else:
            self.plots.clear()
            self.set_cursor(self.cursor_s if self.cursor_s is not None else data.end_s)
        if not data.overview:
            self.loaded.emit()

    @Slot(str)
    def _failed(self, message: str) -> None:
        self.error = message
        self.banner_label.setText(f"Cannot replay <b>{self.path.name}</b>")
        self.failed.emit(message)
        box = QMessageBox(QMessageBox.Icon.Warning, "Cannot replay the session", message,
                          QMessageBox.StandardButton.Ok, self)
        box.finished.connect(lambda _: self.close())
        box.open()

    def _fill_lists(self, data: ReplayData) -> None:
        t0 = data.start_s
        for h in data.hints:
            item = QTreeWidgetItem([
                clock_text(t0 + h.first_seen_s), h.severity, h.title,
                "" if h.gpu is None else str(h.gpu), "" if h.pid is None else str(h.pid),
                "" if h.closed_s is None else clock_text(t0 + h.closed_s)])
            item.setData(0, Qt.ItemDataRole.UserRole, t0 + h.first_seen_s)
            item.setToolTip(2, "\n".join(filter(None, [h.detail, *h.actions])))
            self.hints.addTopLevelItem(item)
        for p in data.processes:
            item = QTreeWidgetItem([
                str(p.gpu), str(p.pid), p.name or "", p.user or "",
                clock_text(t0 + p.first_seen_s), clock_text(t0 + p.last_seen_s),
                format_bytes(p.peak_used_bytes)])
            item.setData(0, Qt.ItemDataRole.UserRole, t0 + p.first_seen_s)
            item.setToolTip(2, " ".join(p.cmdline))
            self.processes.addTopLevelItem(item)
        for e in data.events:
            item = QTreeWidgetItem([clock_text(t0 + e.t_s), e.kind,
                                    "" if e.gpu is None else str(e.gpu),
                                    "" if e.pid is None else str(e.pid), e.detail or ""])
            item.setData(0, Qt.ItemDataRole.UserRole, t0 + e.t_s)
            self.events.addTopLevelItem(item)
        self.tabs.setTabText(0, f"Hints ({len(data.hints)})")
        self.tabs.setTabText(1, f"Processes ({len(data.processes)})")
        self.tabs.setTabText(2, f"Events ({len(data.events)})")
        for tree in (self.hints, self.processes, self.events):
            for col in range(tree.columnCount()):
                tree.resizeColumnToContents(col)

    def _mark_deaths(self, data: ReplayData) -> None:
        """A red line where a process died out of memory, or a GPU was lost, in both
        plots, labelled in the memory plot ("OOM · pid 71310")."""
        c = theme.colors()
        pen = pg.mkPen(c.critical, width=1.5, style=Qt.PenStyle.DashLine)
        for h in data.hints:
            if h.code not in DEATHS:
                continue
            at = data.start_s + h.first_seen_s
            label = DEATHS[h.code] + ("" if h.pid is None else f" · pid {h.pid}") + \
                ("" if h.gpu is None else f" · GPU {h.gpu}")
            for plot, text in ((self.plots.memory, label), (self.plots.bandwidth, None)):
                line = pg.InfiniteLine(
                    at, angle=90, movable=False, pen=pen, label=text,
                    labelOpts={"position": 0.92, "color": c.critical,
                               "fill": pg.mkBrush(c.plot_bg), "anchors": [(1, 0), (1, 0)]})
                line.setToolTip(f"{label}: {h.title}")
                plot.addItem(line)
                self.death_marks.append(line)

    # scrubbing --------------------------------------------------------------------------
    def _slider_moved(self, value: int) -> None:
        if self.data is not None:
            self.set_cursor(self.data.start_s + value)

    def _jump_to_item(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        t = item.data(0, Qt.ItemDataRole.UserRole)
        if isinstance(t, float):
            self.set_cursor(t)

    def set_cursor(self, t_abs: float, follow: bool = True) -> None:
        """Move the cursor to a moment; with ``follow`` the view scrolls to keep it in."""
        data = self.data
        if data is None:
            return
        t_abs = min(max(t_abs, data.start_s), data.end_s)
        self.cursor_s = t_abs
        for line in self.cursor_lines:
            if abs(line.value() - t_abs) > 1e-9:
                line.blockSignals(True)
                line.setValue(t_abs)
                line.blockSignals(False)
        value = round(t_abs - data.start_s)
        if self.slider.value() != value:
            self.slider.blockSignals(True)
            self.slider.setValue(value)
            self.slider.blockSignals(False)
        self.time_label.setText(f"{clock_text(t_abs)}  (+{format_duration(t_abs - data.start_s)})")
        self.values_label.setText(self.values_at(t_abs))
        if follow:
            self._apply_view()

    def view_range(self) -> tuple[float, float]:
        """The visible span: the whole session when it fits the window, else the window
        ending at the cursor (kept inside the session)."""
        data = self.data
        assert data is not None
        w = float(self.plots.window_s)
        if data.end_s - data.start_s <= w:      # the session across the plot, not a corner
            return data.start_s, max(data.end_s, data.start_s + 60.0)
        cursor = self.cursor_s if self.cursor_s is not None else data.end_s
        x1 = max(cursor, data.start_s + w)
        return x1 - w, x1

    def _apply_view(self) -> None:
        if self.data is None:
            return
        x0, x1 = self.view_range()
        if self.plots.live:
            self.plots.set_live(False)
        self.plots.memory.setXRange(x0, x1, padding=0)
        self.plots.refresh(force=True)

    def values_at(self, t_abs: float) -> str:
        parts = []
        for index, (ts, used) in sorted(self._series.items()):
            i = int(np.searchsorted(ts, t_abs, side="right")) - 1
            value = None if i < 0 or np.isnan(used[i]) else float(used[i])
            parts.append(f"GPU {index} {format_bytes(value)}")
        return "Used at the cursor: " + " · ".join(parts) if parts else ""
