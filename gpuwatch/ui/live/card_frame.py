"""The frame of a GPU card: its outline, hover, keyboard focus and clicks.

The outline is the card's state: 2 px in the warning or critical colour (set by
:class:`~gpuwatch.ui.live.gpu_card.GpuCard` from the worst open hint, or a lost GPU),
else the hover colour under the mouse. The GPU the window is focused on has an accent
mark at its left edge; the keyboard focus is a dashed ring. A click, Enter or Space
emits :attr:`activated`. Pens are made once per theme; these paint only on a change of
state, hover or focus.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QKeyEvent, QMouseEvent, QPainter, QPen
from PySide6.QtWidgets import QFrame, QWidget

from gpuwatch.core.hints import Severity
from gpuwatch.ui.widgets import theme


class CardFrame(QFrame):
    activated = Signal(int)       # the card's GPU index: clicked, or Enter/Space

    def __init__(self, index: int, parent: QWidget | None = None):
        super().__init__(parent)
        self.index = index
        self.setObjectName("gpuCard")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.outline: Severity | None = None   # the state the outline shows
        self.selected = False                  # the GPU the window is focused on
        self._hover = False
        self._pens: tuple | None = None

    # painting and input ------------------------------------------------------------
    def _outline_pens(self, c: theme.Colors) -> tuple:
        if self._pens is None or self._pens[0] != c:
            focus = QPen(QColor(c.focus), 1.5, Qt.PenStyle.DashLine)
            self._pens = (c, {None: None, Severity.WARNING: QPen(QColor(c.warning), 2),
                              Severity.CRITICAL: QPen(QColor(c.critical), 2)},
                          QPen(QColor(c.hover), 1), focus, QColor(c.focus))
        return self._pens

    def paintEvent(self, event: object) -> None:
        super().paintEvent(event)   # type: ignore[arg-type]
        c = theme.colors()
        _, levels, hover, focus, accent = self._outline_pens(c)
        pen = levels[self.outline] or (hover if self._hover else None)
        if pen is None and not self.selected and not self.hasFocus():
            return
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        r = QRectF(self.rect())
        if pen is not None:
            p.setPen(pen)
            p.drawRoundedRect(r.adjusted(1, 1, -1, -1), 8, 8)
        if self.selected:                   # the GPU the window is focused on
            p.fillRect(QRectF(3, 10, 4, r.height() - 20), accent)
        if self.hasFocus():
            p.setPen(focus)
            p.drawRoundedRect(r.adjusted(4, 4, -4, -4), 6, 6)
        p.end()

    def enterEvent(self, event: object) -> None:
        self._hover = True
        self.update()
        super().enterEvent(event)   # type: ignore[arg-type]

    def leaveEvent(self, event: object) -> None:
        self._hover = False
        self.update()
        super().leaveEvent(event)   # type: ignore[arg-type]

    def focusInEvent(self, event: object) -> None:
        self.update()
        super().focusInEvent(event)   # type: ignore[arg-type]

    def focusOutEvent(self, event: object) -> None:
        self.update()
        super().focusOutEvent(event)   # type: ignore[arg-type]

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            event.accept()          # the release comes here: a click
            return
        super().mousePressEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton and self.rect().contains(
                event.position().toPoint()):
            self.activated.emit(self.index)
        super().mouseReleaseEvent(event)

    _CLICK_KEYS = (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space)

    def event(self, event: QEvent) -> bool:
        # Space is also a window shortcut (pause): a focused card takes it as a click.
        if event.type() == QEvent.Type.ShortcutOverride and \
                isinstance(event, QKeyEvent) and event.key() in self._CLICK_KEYS and \
                event.modifiers() == Qt.KeyboardModifier.NoModifier:
            event.accept()
            return True
        return super().event(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in self._CLICK_KEYS:
            self.activated.emit(self.index)
            return
        super().keyPressEvent(event)
