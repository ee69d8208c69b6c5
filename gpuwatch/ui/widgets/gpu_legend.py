"""The time plots' legend, beside the plots rather than over their curves.

"GPU", then one entry per GPU: a short sample of its line (colour and dash pattern) and
its number.
Hovering an entry highlights that GPU's lines in the plots; clicking it shows that GPU
alone (and clicking it again, all of them). Entries flow onto a second line where the
width runs out.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QMouseEvent, QPainter, QPaintEvent
from PySide6.QtWidgets import QSizePolicy, QWidget

from gpuwatch.ui.widgets import theme
from gpuwatch.ui.widgets.plot_items import HIGHLIGHT_WIDTH, gpu_pen

SAMPLE_PX = 24      # the line sample's length
GAP_PX = 4          # between a sample and its number
ENTRY_GAP_PX = 12   # between entries
HEAD = "GPU"


class GpuLegend(QWidget):
    hovered = Signal(int)      # a GPU index, or -1 when the mouse left the entries
    clicked = Signal(int)      # a GPU index

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.indices: tuple[int, ...] = ()
        self.highlight: int | None = None
        self.focus: int | None = None
        self._hover: int | None = None
        self._font = QFont(self.font())
        self._font.setPointSizeF(max(7.0, self._font.pointSizeF() * 0.9))
        self._metrics = QFontMetricsF(self._font)
        self._laid: tuple[int, list[tuple[int, QRectF]]] | None = None
        self.setMouseTracking(True)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setAccessibleName("GPU lines legend")
        self.setAccessibleDescription("Each GPU's line colour and dash pattern in the time "
                                      "plots; click one to show that GPU alone")
        self.setToolTip("Hover to highlight a GPU's line; click to show that GPU alone")
        self.hide()

    def set_indices(self, indices: tuple[int, ...]) -> None:
        if indices != self.indices:
            self.indices = indices
            self._laid = None
            self.setVisible(len(indices) > 1)
            self.updateGeometry()
            self.update()

    def set_highlight(self, index: int | None) -> None:
        if index != self.highlight:
            self.highlight = index
            self.update()

    def set_focus(self, index: int | None) -> None:
        if index != self.focus:
            self.focus = index
            self.update()

    # layout --------------------------------------------------------------------------
    def _entry_width(self, index: int) -> float:
        return SAMPLE_PX + GAP_PX + self._metrics.horizontalAdvance(str(index))

    def _head_width(self) -> float:
        return self._metrics.horizontalAdvance(HEAD) + ENTRY_GAP_PX / 2

    def _line_height(self) -> float:
        return self._metrics.height() + 4

    def entries(self, width: int | None = None) -> list[tuple[int, QRectF]]:
        """(GPU index, its rectangle) for each entry, flowed into ``width`` pixels."""
        width = self.width() if width is None else width
        if self._laid is not None and self._laid[0] == width:
            return self._laid[1]
        out, x, y, h = [], self._head_width(), 0.0, self._line_height()
        for index in self.indices:
            w = self._entry_width(index)
            if out and x + w > width:
                x, y = 0.0, y + h
            out.append((index, QRectF(x, y, w, h)))
            x += w + ENTRY_GAP_PX
        self._laid = (width, out)
        return out

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        entries = self.entries(width)
        return int(entries[-1][1].bottom() + 1) if entries else 0

    def sizeHint(self) -> QSize:
        return QSize(400, self.heightForWidth(max(1, self.width()) if self.width() > 50
                                              else 400))

    def minimumSizeHint(self) -> QSize:
        return QSize(0, int(self._line_height()))

    def resizeEvent(self, event: object) -> None:
        super().resizeEvent(event)  # type: ignore[arg-type]
        need = self.heightForWidth(self.width())
        if need != self.height():
            self.setMinimumHeight(need)

    # painting and the mouse --------------------------------------------------------------
    def paintEvent(self, event: QPaintEvent) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.setFont(self._font)
        c = theme.colors()
        text, muted = QColor(c.text), QColor(c.muted)
        p.setPen(muted)
        p.drawText(QRectF(0, 0, self._head_width(), self._line_height()),
                   int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), HEAD)
        for index, rect in self.entries():
            strong = index in (self.highlight, self.focus)
            faded = self.focus is not None and index != self.focus
            pen = gpu_pen(index, HIGHLIGHT_WIDTH if strong else 1.5)
            if faded:
                color = pen.color()
                color.setAlpha(110)
                pen.setColor(color)
            p.setPen(pen)
            mid = rect.center().y()
            p.drawLine(QPointF(rect.left(), mid), QPointF(rect.left() + SAMPLE_PX, mid))
            font = QFont(self._font)
            font.setBold(strong)
            p.setFont(font)
            p.setPen(muted if faded else text)
            p.drawText(rect.adjusted(SAMPLE_PX + GAP_PX, 0, 0, 0),
                       int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter),
                       str(index))
        p.end()

    def index_at(self, pos: QPointF) -> int | None:
        for index, rect in self.entries():
            if rect.adjusted(-2, 0, ENTRY_GAP_PX / 2, 0).contains(pos):
                return index
        return None

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        index = self.index_at(event.position())
        if index != self._hover:
            self._hover = index
            self.setCursor(Qt.CursorShape.PointingHandCursor if index is not None
                           else Qt.CursorShape.ArrowCursor)
            self.hovered.emit(-1 if index is None else index)

    def leaveEvent(self, event: object) -> None:
        if self._hover is not None:
            self._hover = None
            self.hovered.emit(-1)
        super().leaveEvent(event)  # type: ignore[arg-type]

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        index = self.index_at(event.position())
        if index is not None and event.button() == Qt.MouseButton.LeftButton:
            self.clicked.emit(index)
