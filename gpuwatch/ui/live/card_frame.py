"""The frame of a GPU card: its painted parts, outline, hover, keyboard focus and clicks.

The card's texts and figures are :class:`~gpuwatch.ui.live.card_parts.Part` s, painted
here in one ``paintEvent`` over the card's own background: a sample repaints only the
parts whose content changed, with one painter. The style sheet's background of the
card (rounded, bordered) is drawn here too, as Qt would draw it, but without Qt's own
styled-background pass before each paint of the card, which costs tens of
microseconds even for a small region (measured).

The outline is the card's state: 2 px in the warning or critical colour (set by
:class:`~gpuwatch.ui.live.gpu_card.GpuCard` from the worst open hint, or a lost GPU),
else the hover colour under the mouse. The GPU the window is focused on has an accent
mark at its left edge; the keyboard focus is a dashed ring. A click, Enter or Space
emits :attr:`activated`. Pens are made once per theme; these paint only on a change of
state, hover or focus, and only where a paint reaches the card's edge.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QHelpEvent, QKeyEvent, QMouseEvent, QPainter, QPen, QRegion
from PySide6.QtWidgets import QFrame, QStyle, QStyleOption, QToolTip, QWidget

from gpuwatch.core.hints import Severity
from gpuwatch.ui.live.card_parts import Part
from gpuwatch.ui.widgets import theme

EDGE = 10    # px: the outline, focus ring, accent mark and rounded corners lie within


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
        self.parts: list[Part] = []            # painted by the card, in this order
        self._covered: QRegion | None = None   # what the parts' own backgrounds cover
        self._styled = False      # the style sheet gives the card a background to draw

    # painting and input ------------------------------------------------------------
    def _outline_pens(self, c: theme.Colors) -> tuple:
        if self._pens is None or self._pens[0] != c:
            focus = QPen(QColor(c.focus), 1.5, Qt.PenStyle.DashLine)
            self._pens = (c, {None: None, Severity.WARNING: QPen(QColor(c.warning), 2),
                              Severity.CRITICAL: QPen(QColor(c.critical), 2)},
                          QPen(QColor(c.hover), 1), focus, QColor(c.focus))
        return self._pens

    def paintEvent(self, event: object) -> None:
        dirty = event.rect()   # type: ignore[attr-defined]
        region = event.region()   # type: ignore[attr-defined]
        # Qt draws a style sheet's background itself before every paint of the card; the
        # first paint after a (re)polish lets it, then the card draws it (the same call)
        by_qt = self.testAttribute(Qt.WidgetAttribute.WA_StyledBackground)
        if by_qt:
            self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, False)
            self._styled = True
        p = QPainter(self)
        edge = not self.rect().adjusted(EDGE, EDGE - 4, -EDGE, 4 - EDGE).contains(dirty)
        # inside the edge, the parts paint their own background: the card's is drawn only
        # where the dirty region reaches past them (a clipped rounded fill costs ~30 µs)
        if self._styled and not by_qt and (
                edge or not region.subtracted(self._covered_region()).isEmpty()):
            option = QStyleOption()
            option.initFrom(self)
            self.style().drawPrimitive(QStyle.PrimitiveElement.PE_Widget, option, p, self)
        if edge:
            self.drawFrame(p)
        for part in self.parts:
            if not part._hidden and region.intersects(part.rect):
                part.paint(p)
        p.setClipping(False)
        if edge:
            self._paint_outline(p)
        p.end()

    def _paint_outline(self, p: QPainter) -> None:
        c = theme.colors()
        _, levels, hover, focus, accent = self._outline_pens(c)
        pen = levels[self.outline] or (hover if self._hover else None)
        if pen is None and not self.selected and not self.hasFocus():
            return
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

    def _covered_region(self) -> QRegion:
        if self._covered is None:
            self._covered = QRegion()
            for part in self.parts:
                if not part._hidden and part.opaque():
                    self._covered += part.rect
        return self._covered

    def parts_moved(self) -> None:
        """A part moved, came, went or changed its background."""
        self._covered = None

    def part_at(self, x: int, y: int) -> Part | None:
        for part in self.parts:
            if not part._hidden and part.rect.contains(x, y):
                return part
        return None

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            for part in self.parts:
                part.set_font(self.font())
        elif event.type() == QEvent.Type.StyleChange:    # a new style sheet, repolished
            self._styled = self.testAttribute(Qt.WidgetAttribute.WA_StyledBackground)

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
        if event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
            part = self.part_at(event.pos().x(), event.pos().y())
            if part is not None and part.toolTip():      # the part's, for its rectangle
                QToolTip.showText(event.globalPos(), part.toolTip(), self, part.rect)
            else:
                QToolTip.hideText()
                event.ignore()
            return True
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
