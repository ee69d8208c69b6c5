"""The "system" theme follows the desktop's light/dark switch while the window runs.

Qt 6.5 and later announce the switch (``QStyleHints.colorSchemeChanged``); on an older
Qt, or a platform that never reports a scheme, nothing is connected and the theme is
the one found at start, as before.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject
from PySide6.QtGui import QGuiApplication

from gpuwatch.ui.widgets import theme

if TYPE_CHECKING:
    from gpuwatch.ui.live.main_window import MainWindow

log = logging.getLogger(__name__)


class SystemThemeFollower(QObject):
    """Restyles ``window`` when the system scheme changes and its theme is "system"."""

    def __init__(self, window: MainWindow):
        super().__init__(window)
        self.window = window
        hints = QGuiApplication.styleHints()
        signal = getattr(hints, "colorSchemeChanged", None)     # Qt >= 6.5
        self.available = signal is not None
        self.dark: bool | None = theme.system_prefers_dark() if self.available else None
        if signal is not None:
            signal.connect(self._scheme_changed)

    def _scheme_changed(self, *_scheme: object) -> None:
        dark = theme.system_prefers_dark()
        if dark == self.dark:
            return
        self.dark = dark
        log.info("the system switched to its %s scheme", "dark" if dark else "light")
        if self.window.prefs.theme == "system":
            self.window.restyle()
