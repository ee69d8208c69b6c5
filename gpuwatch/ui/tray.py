"""The system tray: an icon coloured by the worst open hint, notifications, close-to-tray.

Where the desktop has a tray (on Linux: a StatusNotifierWatcher on the session bus),
the icon's colour follows the worst active hint, its tooltip sums up each GPU, and
warning/critical hints become desktop notifications within the limits of
:mod:`gpuwatch.ui.notifications`; clicking one opens the window at that hint. Closing
the window then keeps gpuwatch running in the tray (a setting). Where there is no
tray, or while notifications are off or paused, the window's hint banner shows the
alerts instead, so none is lost.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QAction, QColor, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import QApplication, QMenu, QSystemTrayIcon

from gpuwatch.core.hints import Hint, HintEvent, Severity
from gpuwatch.core.resources import resource_path
from gpuwatch.core.snapshot import GpuState
from gpuwatch.core.units import format_bytes
from gpuwatch.ui.app_icon import app_icon
from gpuwatch.ui.notifications import PAUSE_S, Notification, Notifier
from gpuwatch.ui.settings import Preferences

if TYPE_CHECKING:
    from gpuwatch.ui.live.main_window import MainWindow

log = logging.getLogger(__name__)

ICON_LEVELS = ("ok", "info", "warning", "critical")
ICON_COLORS = {"ok": "#4f8a5b", "info": "#3b7dd8", "warning": "#e69500", "critical": "#d32f2f"}
TOOLTIP_EVERY_MS = 5000
_MESSAGE_ICON = {Severity.CRITICAL: QSystemTrayIcon.MessageIcon.Critical,
                 Severity.WARNING: QSystemTrayIcon.MessageIcon.Warning,
                 Severity.INFO: QSystemTrayIcon.MessageIcon.Information}
_icons: dict[str, QIcon] = {}


def icon_level(hints: list[Hint]) -> str:
    """"ok", or the worst severity among ``hints``."""
    worst = max((h.severity for h in hints), default=None)
    return "ok" if worst is None else worst.value


def tray_icon(level: str) -> QIcon:
    """The tray icon for a level (the SVG in resources/icons, or a painted dot)."""
    if level not in _icons:
        icon = QIcon(str(resource_path("icons", f"gpuwatch-{level}.svg")))
        if icon.isNull() or icon.pixmap(32, 32).isNull():
            pixmap = QPixmap(32, 32)
            pixmap.fill(Qt.GlobalColor.transparent)
            painter = QPainter(pixmap)
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            painter.setBrush(QColor(ICON_COLORS[level]))
            painter.setPen(Qt.PenStyle.NoPen)
            painter.drawEllipse(3, 3, 26, 26)
            painter.end()
            icon = QIcon(pixmap)
        _icons[level] = icon
    return _icons[level]


def tooltip_text(window: MainWindow, hints: list[Hint]) -> str:
    """One line per GPU (memory and its worst hint), after a headline."""
    alerts = [h for h in hints if h.severity >= Severity.WARNING]
    head = "gpuwatch — " + (f"{len(alerts)} alert{'s' if len(alerts) != 1 else ''}"
                            if alerts else "no alerts")
    snap = window.history.latest
    lines = [head]
    if snap is None:
        return head
    worst = {}
    for h in hints:                      # worst first: keep the first per GPU
        worst.setdefault(h.gpu_index, h)
    for g in snap.gpus:
        name = (g.name or "").removeprefix("NVIDIA ")
        if g.state is GpuState.LOST:
            text = "lost"
        elif g.memory.used_bytes is not None and g.memory.total_bytes:
            text = (f"{format_bytes(g.memory.used_bytes, window.units)} / "
                    f"{format_bytes(g.memory.total_bytes, window.units)}")
        else:
            text = "memory unknown"
        h = worst.get(g.index)
        if h is not None:
            text += f" — {h.severity.value}: {h.title}"
        lines.append(f"GPU {g.index} {name}: {text}")
    return "\n".join(lines)


class TrayController(QObject):
    def __init__(self, window: MainWindow, available: bool | None = None):
        super().__init__(window)
        self.window = window
        # ``available`` forces the answer (tests); otherwise the desktop is asked
        self.available = (QSystemTrayIcon.isSystemTrayAvailable() if available is None
                          else available)
        self.messages = self.available and (available is not None
                                            or QSystemTrayIcon.supportsMessages())
        self.notifier = Notifier(self._show_message)
        self.notifier.enabled = window.prefs.notifications
        self.level = "ok"
        self.tray: QSystemTrayIcon | None = None
        self._quitting = False
        self._resume_timer = QTimer(self)
        self._resume_timer.setSingleShot(True)
        self._resume_timer.timeout.connect(self.resume_alerts)
        source = window.hint_source
        source.hints_changed.connect(self._hints_changed)
        source.events.connect(self._events)
        window.preferences_changed.connect(self._preferences)
        window.quit_requested.connect(self._quit_requested)
        window.closing.connect(self._closed)
        if self.available:
            self._build_tray()
        self._update_banner()

    def _build_tray(self) -> None:
        self.tray = QSystemTrayIcon(tray_icon("ok"), self)
        self.tray.setToolTip("gpuwatch")
        menu = QMenu(self.window)
        self.show_action = QAction(app_icon(), "Show gpuwatch", menu)
        self.show_action.triggered.connect(self.show_window)
        self.pause_action = QAction("Pause alerts for 1 h", menu)
        self.pause_action.setCheckable(True)
        self.pause_action.toggled.connect(self._pause_toggled)
        quit_action = QAction("Quit", menu)
        quit_action.triggered.connect(self.window.quit)
        menu.addAction(self.show_action)
        menu.addSeparator()
        menu.addAction(self.pause_action)
        menu.addSeparator()
        menu.addAction(quit_action)
        self.menu = menu
        self.tray.setContextMenu(menu)
        self.tray.activated.connect(self._activated)
        self.tray.messageClicked.connect(self.message_clicked)
        self.tray.show()
        app = QApplication.instance()
        if isinstance(app, QApplication):
            app.setQuitOnLastWindowClosed(False)   # the tray keeps us; _closed quits
        self.window.installEventFilter(self)
        self._tooltip_timer = QTimer(self)
        self._tooltip_timer.timeout.connect(self._update_tooltip)
        self._tooltip_timer.start(TOOLTIP_EVERY_MS)

    # hints in -----------------------------------------------------------------------
    def _hints_changed(self, hints: list[Hint]) -> None:
        level = icon_level(hints)
        if level != self.level:
            self.level = level
            if self.tray is not None:
                self.tray.setIcon(tray_icon(level))
        self._update_tooltip()

    def _events(self, events: list[HintEvent]) -> None:
        if self.delivers:
            self.notifier.handle(events)

    @property
    def delivers(self) -> bool:
        """Whether notifications reach the desktop now (else the banner stands in)."""
        return (self.tray is not None and self.messages and self.notifier.enabled
                and not self.notifier.paused)

    def _update_banner(self) -> None:
        self.window.hint_banner.set_enabled(not self.delivers, self.window.hint_source.active)

    def _update_tooltip(self) -> None:
        if self.tray is not None:
            text = tooltip_text(self.window, self.window.hint_source.active)
            if text != self.tray.toolTip():
                self.tray.setToolTip(text)

    # notifications ------------------------------------------------------------------
    def _show_message(self, n: Notification) -> None:
        assert self.tray is not None
        log.info("notify %s %s: %s", n.severity.value, "/".join(map(str, n.key)), n.summary)
        self.tray.showMessage(n.summary, n.body, _MESSAGE_ICON[n.severity], 15000)

    def message_clicked(self) -> None:
        """A notification was clicked: the window comes forward at that hint."""
        n = self.notifier.last
        self.show_window()
        found = self.window.hint_source.open_hint(None if n is None else n.key)
        log.info("notification clicked: window shown at %s (visible=%s, tab=%s, hint %s, "
                 "process %s)", None if n is None else "/".join(map(str, n.key)),
                 self.window.isVisible(), self.window.tabs.tabText(self.window.tabs.currentIndex()),
                 "selected" if found else "gone", self.window.processes.selected_key())

    def pause_alerts(self, seconds: float = PAUSE_S) -> None:
        self.notifier.pause(seconds)
        self._resume_timer.start(int(seconds * 1000))
        if self.tray is not None:
            until = time.strftime("%H:%M", time.localtime(time.time() + seconds))
            self.pause_action.blockSignals(True)
            self.pause_action.setChecked(True)
            self.pause_action.setText(f"Alerts paused until {until}")
            self.pause_action.blockSignals(False)
        self._update_banner()

    def resume_alerts(self) -> None:
        self.notifier.resume()
        self._resume_timer.stop()
        if self.tray is not None:
            self.pause_action.blockSignals(True)
            self.pause_action.setChecked(False)
            self.pause_action.setText("Pause alerts for 1 h")
            self.pause_action.blockSignals(False)
        self._update_banner()

    def _pause_toggled(self, checked: bool) -> None:
        if checked:
            self.pause_alerts()
        else:
            self.resume_alerts()

    # the window -----------------------------------------------------------------------
    def show_window(self) -> None:
        w = self.window
        if w.isMinimized():
            w.showNormal()
        w.show()
        w.raise_()
        w.activateWindow()
        w.catch_up(just_shown=True)     # seen now, though exposed (again) a moment later

    def _activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason is QSystemTrayIcon.ActivationReason.Trigger:
            if self.window.isVisible() and not self.window.isMinimized():
                self.window.hide()
            else:
                self.show_window()

    @property
    def keeps_running(self) -> bool:
        """Closing the window hides it (gpuwatch stays in the tray)."""
        return self.tray is not None and self.window.prefs.close_to_tray and not self._quitting

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if obj is self.window and event.type() == QEvent.Type.Close and self.keeps_running:
            event.ignore()
            self.window.save_state()
            self.window.hide()
            log.info("window closed to the tray")
            return True
        return False

    def _quit_requested(self) -> None:
        self._quitting = True

    def _closed(self) -> None:
        if self.tray is not None:
            self.tray.hide()
            QTimer.singleShot(0, QApplication.quit)

    def _preferences(self, prefs: Preferences) -> None:
        self.notifier.enabled = prefs.notifications
        self._update_banner()
