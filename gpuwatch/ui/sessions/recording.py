"""Recording what the window samples into a session file, and the Sessions menu.

The controller opens a :class:`~gpuwatch.sessions.recorder.Recorder` on the first
snapshot it is given (so a window that never samples leaves no empty file), hands it
every snapshot after that, and closes it when the window closes or the app quits, so the
file gets its end time. The recorder writes on its own thread: the GUI thread only puts
snapshots on a queue. A write failure stops the recording, says so in the status bar,
and leaves the window running.

On opening a session, old ones are pruned (age, then total size, from the preferences)
on a worker thread; the session being recorded is never touched.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from PySide6.QtCore import QObject, QThreadPool, Signal, Slot
from PySide6.QtGui import QAction, QColor, QKeySequence
from PySide6.QtWidgets import QApplication, QMainWindow, QMenu, QWidget

from gpuwatch.core.hints import HintEvent
from gpuwatch.core.snapshot import BackendKind, Snapshot
from gpuwatch.core.units import format_bytes
from gpuwatch.sessions import paths
from gpuwatch.sessions.errors import SessionFileError
from gpuwatch.sessions.recorder import Recorder
from gpuwatch.ui.live.text_lines import TextLines
from gpuwatch.ui.settings import Preferences
from gpuwatch.ui.widgets import theme

GIB = 1 << 30
SIZE_REFRESH_MS = 2000


def file_size(path: Path | None) -> int:
    """A session's bytes on disk, its write-ahead log included."""
    if path is None:
        return 0
    total = 0
    for p in (path, Path(f"{path}-wal")):
        with contextlib.suppress(OSError):
            total += p.stat().st_size
    return total


def sessions_menu(window: QMainWindow) -> QMenu:
    """The window's Sessions menu, created just before Help (or last) when missing."""
    bar = window.menuBar()
    for action in bar.actions():
        menu = action.menu()
        if isinstance(menu, QMenu) and menu.title().replace("&", "") == "Sessions":
            return menu
    menu = QMenu("&Sessions", bar)
    help_action = next((a for a in bar.actions() if a.text().replace("&", "") == "Help"), None)
    if help_action is not None:
        bar.insertMenu(help_action, menu)
    else:
        bar.addMenu(menu)
    return menu


class RecordingController(QObject):
    """Feeds the window's snapshots to a session file; owns the Sessions menu entries."""

    state_changed = Signal(str)            # "recording", "paused", "off" or "failed"
    _recorder_failed = Signal(str)         # from the recorder's thread
    _pruned = Signal(int, int)             # (files removed, bytes freed), from a worker

    def __init__(self, window: QMainWindow, interval_s: float | None = None,
                 prefs: Preferences | None = None):
        super().__init__(window)
        self.window = window
        self.interval_s = interval_s
        prefs = prefs or getattr(window, "prefs", None) or Preferences()
        self.enabled = prefs.record_sessions
        self.retention_days = prefs.retention_days
        self.retention_bytes = int(prefs.retention_max_gib * GIB)
        self.recorder: Recorder | None = None
        self.path: Path | None = None
        self.paused = False
        self.error: str | None = None
        self.closed = False
        self._last_ts: float | None = None
        self._kind: BackendKind | None = None
        self._pruned_once = False
        self.browser: QWidget | None = None
        self._size_shown_at = -math.inf       # monotonic time the file size was last shown

        # Painted text, not a QLabel: a label's every setText asks the status bar for a
        # layout pass, and the bar then repaints whole, with the window beneath it. This
        # asks only when the text outgrows its room, and paints its own background.
        self.label = TextLines(fit_text=True, inset=6)
        self.label.set_colors(None, QColor(theme.colors().window))  # as the bar's others
        self.label.setAccessibleName("Session recording")
        self.label.set("", "Session recording — Sessions menu to pause or browse")
        window.statusBar().addPermanentWidget(self.label)
        self.pause_action = QAction("Pause recording", self)
        self.pause_action.setCheckable(True)
        self.pause_action.toggled.connect(self.set_paused)
        self.browse_action = QAction("Browse sessions…", self)
        self.browse_action.setShortcut(QKeySequence("Ctrl+O"))
        self.browse_action.triggered.connect(self.show_browser)
        menu = sessions_menu(window)
        menu.addAction(self.browse_action)
        menu.addAction(self.pause_action)
        window.addAction(self.browse_action)     # the shortcut works with the menu closed

        self._recorder_failed.connect(self._on_failed)
        self._pruned.connect(self._on_pruned)
        if hasattr(window, "closing"):
            window.closing.connect(self.close)
        if hasattr(window, "preferences_changed"):
            window.preferences_changed.connect(self.apply_preferences)
        hint_source = getattr(window, "hint_source", None)     # the window's advisor
        if hint_source is not None and hasattr(hint_source, "events"):
            hint_source.events.connect(self.on_hint_events)
        app = QApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.close)
        if not self.enabled:
            self._prune(None)
        self._update_label()

    # state ------------------------------------------------------------------------------
    @property
    def state(self) -> str:
        if self.error is not None:
            return "failed"
        if not self.enabled or self.closed:
            return "off"
        return "paused" if self.paused else "recording"

    @property
    def recording(self) -> bool:
        return self.state == "recording"

    # feeding ----------------------------------------------------------------------------
    @Slot(object)
    def on_snapshots(self, snaps: Sequence[Snapshot]) -> None:
        """Every snapshot the window receives (connected beside ``window.on_snapshots``)."""
        if not snaps:
            return
        self._last_ts = snaps[-1].timestamp_s
        self._kind = snaps[-1].backend.kind
        if not self.recording:
            return
        if self.recorder is None and not self._open():
            return
        assert self.recorder is not None
        for snap in snaps:
            self.recorder.add_snapshot(snap)
        self._refresh_size()

    def on_snapshot(self, snap: Snapshot) -> None:
        self.on_snapshots([snap])

    def on_hint_events(self, events: Iterable[HintEvent]) -> None:
        """The advisor's hint changes, stored in the session beside the samples."""
        if self.recorder is None or not self.recording:
            return
        for event in events:
            self.recorder.add_hint_event(event)

    def _open(self) -> bool:
        path = paths.new_session_path()
        try:
            self.recorder = Recorder(path, self.interval_s,
                                     on_error=lambda exc: self._recorder_failed.emit(str(exc)))
        except SessionFileError as exc:
            self._on_failed(str(exc))
            return False
        self.path = path
        self._prune(path)
        self._update_label()
        return True

    def _now(self) -> float:
        """Session time: the last snapshot's clock (virtual on simulated GPUs)."""
        if self._kind is not BackendKind.SIMULATED or self._last_ts is None:
            return max(time.time(), self._last_ts or 0.0)
        return self._last_ts

    # controls ---------------------------------------------------------------------------
    @Slot(bool)
    def set_paused(self, paused: bool) -> None:
        if paused == self.paused:
            return
        self.paused = paused
        if self.recorder is not None and self.error is None:
            if paused:
                self.recorder.pause(self._now())
            else:
                self.recorder.resume(self._now())
        if self.pause_action.isChecked() != paused:
            self.pause_action.blockSignals(True)
            self.pause_action.setChecked(paused)
            self.pause_action.blockSignals(False)
        self._update_label()

    def toggle_pause(self) -> None:
        self.set_paused(not self.paused)

    def set_enabled(self, enabled: bool) -> None:
        """Turning recording off ends the current session; on starts a new one."""
        if enabled == self.enabled:
            return
        self.enabled = enabled
        if not enabled:
            self._close_recorder()
        else:
            self.error = None
            self.closed = False
        self._update_label()

    @Slot(object)
    def apply_preferences(self, prefs: Preferences) -> None:
        self.retention_days = prefs.retention_days
        self.retention_bytes = int(prefs.retention_max_gib * GIB)
        self.set_enabled(prefs.record_sessions)

    @Slot()
    def close(self) -> None:
        """End the session (sets its end time). Safe to call more than once."""
        self._close_recorder()
        self.closed = True
        self._update_label()

    def _close_recorder(self) -> None:
        recorder, self.recorder = self.recorder, None
        if recorder is not None:
            recorder.close(self._now())

    # the Sessions browser -----------------------------------------------------------------
    def show_browser(self) -> None:
        from gpuwatch.ui.sessions.session_browser import SessionBrowser

        if self.browser is None:
            self.browser = SessionBrowser(self.window, current=lambda: self.path)
        self.browser.show()
        self.browser.raise_()
        self.browser.activateWindow()
        self.browser.reload()  # type: ignore[attr-defined]

    # retention ----------------------------------------------------------------------------
    def _prune(self, keep: Path | None) -> None:
        if self._pruned_once:
            return
        self._pruned_once = True
        days, limit = self.retention_days, self.retention_bytes

        def work() -> None:
            try:
                result = paths.prune(days, limit, keep=keep)
            except OSError:
                return
            if result.removed:
                self._pruned.emit(len(result.removed), result.freed_bytes)

        QThreadPool.globalInstance().start(work)

    @Slot(int, int)
    def _on_pruned(self, count: int, freed: int) -> None:
        self.window.statusBar().showMessage(
            f"Deleted {count} old session{'s' if count != 1 else ''} "
            f"({format_bytes(freed)}) by the retention settings", 6000)

    # status -----------------------------------------------------------------------------
    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self.error = message
        self.window.statusBar().showMessage(f"Recording stopped: {message}", 15000)
        self._update_label()
        self.state_changed.emit(self.state)

    def label_text(self) -> str:
        state = self.state
        if state == "failed":
            return "Recording failed"
        if state == "off":
            return "Not recording"
        if state == "paused":
            return "Paused"
        if self.recorder is None:
            return "● Recording"
        return f"● Recording · {format_bytes(file_size(self.path))}"

    def _refresh_size(self) -> None:
        """Show the file's growing size, at most every ``SIZE_REFRESH_MS`` and only while
        the label can be seen: driven by the samples rather than a timer of its own, so
        the window repaints once a sample and a window in the tray is never woken."""
        now = time.monotonic()
        seen = self.label.isVisible() and not self.window.isMinimized()
        if now - self._size_shown_at >= SIZE_REFRESH_MS / 1000 and seen:
            self._size_shown_at = now
            self._update_label()

    def _update_label(self) -> None:
        text = self.label_text()
        if text != self.label.text():
            self.label.set(text, f"{text}\n{self.path}"
                           if self.path is not None and self.state != "off"
                           else f"{text} — Sessions menu to browse")
            self.label.setAccessibleDescription(text)
            self.state_changed.emit(self.state)
        self.pause_action.setEnabled(self.enabled and self.error is None and not self.closed)
