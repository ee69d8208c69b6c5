"""The session browser (Sessions → Browse sessions…, Ctrl+O): recorded sessions in a table,
with Open (replay), Delete and Export….

Each file's figures come from the session reader on a worker thread, a few rows at a
time, so a folder of many (or long) sessions never freezes the window. A file that cannot
be read gets a row that says why instead of figures.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
    QThreadPool,
    Signal,
    Slot,
)
from PySide6.QtGui import QBrush, QColor, QDesktopServices
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from gpuwatch.core.units import format_bytes, format_duration
from gpuwatch.sessions import paths
from gpuwatch.sessions.errors import SessionFileError
from gpuwatch.sessions.reader import SessionReader
from gpuwatch.ui.sessions.export_dialog import ExportRunner
from gpuwatch.ui.sessions.recording import file_size

COLUMNS = ("File", "Started", "Duration", "GPUs", "Peak", "Hints", "Size")
SORT_ROLE = Qt.ItemDataRole.UserRole + 1
CHUNK = 8           # rows handed to the GUI at a time
_ROOT = QModelIndex()


@dataclass(frozen=True)
class SessionEntry:
    path: Path
    size_bytes: int
    started_at_s: float | None = None
    duration_s: float | None = None
    gpus: int | None = None
    peak_bytes: int | None = None
    hints: int | None = None
    ended: bool = True               # False: still recording, or the recorder was killed
    source: str = ""                 # "NVML" or "simulated · scenario"
    error: str | None = None         # why the file cannot be read

    @property
    def name(self) -> str:
        return self.path.name


def read_entry(path: Path) -> SessionEntry:
    """One row's figures (any thread). Never raises for a bad file: the row says why."""
    size = file_size(path)
    try:
        with SessionReader(path) as r:
            info = r.info()
            gpus = len(r.gpus())
            peak = r.peak_used_bytes()
            hints = len(r.hints())
    except SessionFileError as exc:
        return SessionEntry(path, size, error=exc.reason)
    source = "NVML" if info.backend_kind == "nvml" else \
        f"simulated · {info.scenario}" if info.scenario else info.backend_kind
    return SessionEntry(path, size, info.started_at_s, info.duration_s, gpus, peak, hints,
                        info.ended_at_s is not None, source)


class SessionTableModel(QAbstractTableModel):
    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.entries: list[SessionEntry] = []
        self.current: Path | None = None        # the session being recorded now

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = _ROOT) -> int:
        return 0 if parent.isValid() else len(self.entries)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = _ROOT) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def clear(self) -> None:
        self.beginResetModel()
        self.entries = []
        self.endResetModel()

    def add(self, entries: Sequence[SessionEntry]) -> None:
        if not entries:
            return
        first = len(self.entries)
        self.beginInsertRows(QModelIndex(), first, first + len(entries) - 1)
        self.entries.extend(entries)
        self.endInsertRows()

    def remove(self, path: Path) -> None:
        for row, e in enumerate(self.entries):
            if e.path == path:
                self.beginRemoveRows(QModelIndex(), row, row)
                del self.entries[row]
                self.endRemoveRows()
                return

    def entry(self, row: int) -> SessionEntry:
        return self.entries[row]

    def text(self, e: SessionEntry, column: int) -> str:
        if column == 0:
            return e.name + ("  (recording)" if e.path == self.current else "")
        if e.error is not None:
            return f"unreadable: {e.error}" if column == 1 else \
                format_bytes(e.size_bytes) if column == 6 else ""
        if column == 1:
            return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.started_at_s or 0))
        if column == 2:
            text = format_duration(e.duration_s)
            return text if e.ended or e.path == self.current else f"{text} (not closed)"
        if column == 3:
            return str(e.gpus)
        if column == 4:
            return format_bytes(e.peak_bytes)
        if column == 5:
            return str(e.hints)
        return format_bytes(e.size_bytes)

    def sort_key(self, e: SessionEntry, column: int) -> object:
        values = (e.name, e.started_at_s, e.duration_s, e.gpus, e.peak_bytes, e.hints,
                  e.size_bytes)
        value = values[column]
        return -1 if value is None else value

    def data(self, index: QModelIndex | QPersistentModelIndex,
             role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if not index.isValid():
            return None
        e = self.entries[index.row()]
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self.text(e, col)
        if role == SORT_ROLE:
            return self.sort_key(e, col)
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{e.path}\n{e.error}" if e.error else f"{e.path}\n{e.source}"
        if role == Qt.ItemDataRole.ForegroundRole and e.error is not None:
            return QBrush(QColor("#c0392b"))
        if role == Qt.ItemDataRole.TextAlignmentRole and col >= 2:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None


class SessionLister(QObject):
    """Reads the folder's sessions on a worker thread and feeds the model in chunks."""

    rows = Signal(int, object)       # (generation, list[SessionEntry])
    loaded = Signal(int)             # generation

    def __init__(self, model: SessionTableModel, parent: QObject | None = None):
        super().__init__(parent)
        self.model = model
        self.generation = 0
        self.loading = False
        self._cancel = threading.Event()
        self.rows.connect(self._rows)
        self.loaded.connect(self._loaded)

    def reload(self, files: Sequence[Path] | None = None) -> None:
        self._cancel.set()               # a load still running stops after its chunk
        self._cancel = cancel = threading.Event()
        self.generation += 1
        generation = self.generation
        self.loading = True
        self.model.clear()

        def work() -> None:
            found = list(files) if files is not None else paths.list_sessions()
            chunk: list[SessionEntry] = []
            for path in found:
                if cancel.is_set():
                    return
                chunk.append(read_entry(path))
                if len(chunk) >= CHUNK:
                    self.rows.emit(generation, chunk)
                    chunk = []
            self.rows.emit(generation, chunk)
            self.loaded.emit(generation)

        QThreadPool.globalInstance().start(work)

    @Slot(int, object)
    def _rows(self, generation: int, entries: list[SessionEntry]) -> None:
        if generation == self.generation:
            self.model.add(entries)

    @Slot(int)
    def _loaded(self, generation: int) -> None:
        if generation == self.generation:
            self.loading = False


class _Proxy(QSortFilterProxyModel):
    def lessThan(self, left: QModelIndex | QPersistentModelIndex,
                 right: QModelIndex | QPersistentModelIndex) -> bool:
        a, b = left.data(SORT_ROLE), right.data(SORT_ROLE)
        try:
            return a < b
        except TypeError:
            return str(a) < str(b)


def delete_session(path: Path) -> None:
    """Remove a session file with its SQLite write-ahead log and shared-memory files."""
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        p.unlink(missing_ok=True)


class SessionBrowser(QDialog):
    """A non-modal window over the sessions folder."""

    def __init__(self, parent: QWidget | None = None,
                 current: Callable[[], Path | None] | None = None):
        super().__init__(parent)
        self.setWindowTitle("Recorded sessions")
        self.resize(980, 460)
        self.current = current or (lambda: None)
        self.model = SessionTableModel(self)
        self.lister = SessionLister(self.model, self)
        self.proxy = _Proxy(self)
        self.proxy.setSourceModel(self.model)
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(1, Qt.SortOrder.DescendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(False)
        self.table.doubleClicked.connect(lambda _: self.open_selected())
        self.table.selectionModel().selectionChanged.connect(lambda *_: self._update_buttons())

        self.summary = QLabel()
        self.summary.setProperty("muted", True)
        self.open_button = QPushButton("Open")
        self.open_button.setToolTip("Replay the session in its own window")
        self.delete_button = QPushButton("Delete…")
        self.export_button = QPushButton("Export…")
        self.refresh_button = QPushButton("Refresh")
        self.folder_button = QPushButton("Open folder")
        self.open_button.clicked.connect(self.open_selected)
        self.delete_button.clicked.connect(self.delete_selected)
        self.export_button.clicked.connect(self.export_selected)
        self.refresh_button.clicked.connect(self.reload)
        self.folder_button.clicked.connect(self._open_folder)
        buttons = QHBoxLayout()
        for b in (self.open_button, self.export_button, self.delete_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        buttons.addWidget(self.refresh_button)
        buttons.addWidget(self.folder_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.summary)
        layout.addLayout(buttons)

        self.exporter = ExportRunner(self)
        self.replays: list[QWidget] = []
        self.model.rowsInserted.connect(lambda *_: self._update_summary())
        self.model.modelReset.connect(self._update_summary)
        self.lister.loaded.connect(lambda _: self._update_summary())
        self._update_buttons()

    # loading ----------------------------------------------------------------------------
    def reload(self) -> None:
        self.model.current = self.current()
        self.lister.reload()
        self._update_summary()

    def _update_summary(self) -> None:
        n = len(self.model.entries)
        total = sum(e.size_bytes for e in self.model.entries)
        loading = "  · reading…" if self.lister.loading else ""
        self.summary.setText(f"{n} session{'s' if n != 1 else ''} · {format_bytes(total)} in "
                             f"{paths.sessions_dir()}{loading}")
        if n and not self.table.selectionModel().hasSelection():
            self.table.selectRow(0)
        self._update_buttons()

    # selection --------------------------------------------------------------------------
    def selected(self) -> SessionEntry | None:
        rows = self.table.selectionModel().selectedRows()
        if not rows:
            return None
        return self.model.entry(self.proxy.mapToSource(rows[0]).row())

    def select_path(self, path: Path) -> None:
        for row, e in enumerate(self.model.entries):
            if e.path == path:
                self.table.selectRow(self.proxy.mapFromSource(self.model.index(row, 0)).row())
                return

    def _update_buttons(self) -> None:
        e = self.selected()
        readable = e is not None and e.error is None
        self.open_button.setEnabled(readable)
        self.export_button.setEnabled(readable)
        self.delete_button.setEnabled(e is not None and e.path != self.model.current)

    # actions ----------------------------------------------------------------------------
    def open_selected(self) -> QWidget | None:
        e = self.selected()
        if e is None or e.error is not None:
            return None
        from gpuwatch.ui.sessions.session_replay import ReplayWindow

        window = ReplayWindow(e.path, recording=e.path == self.model.current)
        window.destroyed.connect(lambda *_: self.replays.remove(window)
                                 if window in self.replays else None)
        self.replays.append(window)
        window.show()
        window.start()
        return window

    def delete_selected(self, confirm: bool = True) -> bool:
        e = self.selected()
        if e is None:
            return False
        if e.path == self.model.current:
            QMessageBox.information(self, "Delete session",
                                    "This session is being recorded; stop recording first.")
            return False
        if confirm:
            answer = QMessageBox.question(
                self, "Delete session",
                f"Delete {e.name} ({format_bytes(e.size_bytes)})? This cannot be undone.",
                QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                QMessageBox.StandardButton.No)
            if answer != QMessageBox.StandardButton.Yes:
                return False
        try:
            delete_session(e.path)
        except OSError as exc:
            QMessageBox.warning(self, "Delete session",
                                f"{e.path}: could not delete ({exc.strerror or exc})")
            return False
        self.model.remove(e.path)
        self._update_summary()
        return True

    def export_selected(self) -> None:
        e = self.selected()
        if e is not None and e.error is None:
            self.exporter.ask_and_start(e.path)

    def _open_folder(self) -> None:
        from PySide6.QtCore import QUrl

        folder = paths.sessions_dir()
        folder.mkdir(parents=True, exist_ok=True)
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder)))
