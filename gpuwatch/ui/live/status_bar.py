"""A status bar whose messages fit beside its permanent texts.

QStatusBar draws a message (``showMessage``) from its left edge up to its first
permanent widget and cuts whatever is longer ("Linked pid 66120 to gpt2-medium · bat" at
1024 px, where the source, pace and sampling texts take most of the line). Here a
message too long for that room is shortened with "…" in its middle, so its start says
what happened and its end why ("Linked pid 66120 to gpt2-medi…ZeRO-2 ×8", "Recording
stopped: /home/…/sessions cannot be created"), the whole text in the bar's tooltip while
it shows, and fitted again when the room changes (the window resized, a permanent text
grown) for the rest of its time.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QStatusBar, QWidget
from shiboken6 import isValid

# as QStatusBar places a message (qstatusbar.cpp, messageRect)
MESSAGE_LEFT = 6          # px from the bar's left edge
MESSAGE_GAP = 2           # px before the first permanent widget
MESSAGE_RIGHT = 12        # px from the right edge with no permanent widget


class FittingStatusBar(QStatusBar):
    """``showMessage`` elides to the room there is; the full text is the tooltip."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._permanent: list[QWidget] = []
        self.full_message = ""        # the text last given to showMessage
        self._shown = ""              # what of it is drawn
        self._until = 0.0             # time.monotonic() when it goes (0: stays)
        self.messageChanged.connect(self._message_changed)

    def addPermanentWidget(self, widget: QWidget, stretch: int = 0) -> None:
        super().addPermanentWidget(widget, stretch)
        self._watch(widget)

    def insertPermanentWidget(self, index: int, widget: QWidget, stretch: int = 0) -> int:
        at = super().insertPermanentWidget(index, widget, stretch)
        self._watch(widget)
        return at

    def _watch(self, widget: QWidget) -> None:
        self._permanent.append(widget)

    def _shown_permanent(self) -> list[QWidget]:
        self._permanent = [w for w in self._permanent if isValid(w)]   # not deleted since
        return [w for w in self._permanent if w.isVisible()]

    def message_room(self) -> int:
        """The px a message has: from the left up to the first permanent widget shown."""
        right = self.width() - MESSAGE_RIGHT
        xs = [w.x() for w in self._shown_permanent()]
        if xs:
            right = min(right, min(xs) - MESSAGE_GAP)
        return max(0, right - MESSAGE_LEFT)

    def showMessage(self, text: str, timeout: int = 0) -> None:
        self.full_message = text
        self._until = time.monotonic() + timeout / 1000 if timeout > 0 else 0.0
        self._show(timeout)

    def _show(self, timeout: int) -> None:
        text = self.full_message
        shown = self.fontMetrics().elidedText(text, Qt.TextElideMode.ElideMiddle,
                                              self.message_room())
        self._shown = shown
        self.setToolTip(text if shown != text else "")
        super().showMessage(shown, timeout)

    def _message_changed(self, text: str) -> None:
        if text != self._shown:          # gone (timed out, cleared) or another's
            self._shown = ""
            self.full_message = text
            self.setToolTip("")

    def _refit(self) -> None:
        """Fit the message showing to the room as it is now, for the rest of its time."""
        if not self._shown or self.currentMessage() != self._shown:
            return
        left_ms = 0
        if self._until:
            left_ms = int((self._until - time.monotonic()) * 1000)
            if left_ms <= 0:
                return
        shown = self.fontMetrics().elidedText(self.full_message, Qt.TextElideMode.ElideMiddle,
                                              self.message_room())
        if shown != self._shown:
            self._show(left_ms)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._refit()

    def event(self, event: QEvent) -> bool:
        done = super().event(event)
        if event.type() == QEvent.Type.LayoutRequest:   # a permanent text grew or went
            self._refit()
        return done
