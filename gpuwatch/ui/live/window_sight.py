"""Whether a shown window can be seen at all: its native surface exposed.

A window may be shown and not minimised, yet nothing it paints reaches the screen: on
X11 a window manager unmaps the windows of the other workspaces, and Qt then marks the
window not exposed. Left open on another workspace all day, the window should rest as it
does in the tray. :class:`WindowSight` answers whether the window can be seen and says
when it is exposed again, before Qt paints it, so the window catches up in that first
paint instead of a sample later.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Signal
from PySide6.QtGui import QWindow
from PySide6.QtWidgets import QWidget


class WindowSight(QObject):
    exposed_again = Signal()     # the window's surface can be seen (again)

    def __init__(self, window: QWidget):
        super().__init__(window)
        self._window = window
        self._handle: QWindow | None = None

    def exposed(self) -> bool:
        """False only when the window has a native surface that cannot be seen."""
        handle = self._window.windowHandle()
        return handle is None or handle.isExposed()

    def out_of_sight(self, just_shown: bool = False) -> bool:
        """Hidden (in the tray), minimised, or not exposed. A window ``just_shown`` is
        taken as seen: its surface is exposed a moment later."""
        w = self._window
        return not w.isVisible() or w.isMinimized() or not (just_shown or self.exposed())

    def follow(self) -> None:
        """Watch the window's native surface: call once it is shown (it exists then)."""
        handle = self._window.windowHandle()
        if handle is not None and handle is not self._handle:
            handle.installEventFilter(self)
            self._handle = handle

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        # Qt marks the surface exposed before it delivers the event, and paints after
        if event.type() == QEvent.Type.Expose and watched is self._handle and self.exposed():
            self.exposed_again.emit()
        return False
