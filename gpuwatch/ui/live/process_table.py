"""The process table's view: Qt's table for headers, scrolling, selection, keys and
tooltips, with the visible rows painted in one pass.

Qt's item painting asks the model for half a dozen roles per cell and lays out each
cell's text through the style on every paint: ~10 ms for a screenful of rows, even with
a trivial ``data()``, and the whole table is repainted whenever rows re-sort (every
sample while memory changes). Here one ``paintEvent`` reads each visible row's texts
from the model in one call and draws them (:mod:`~gpuwatch.ui.live.cell_texts`): the
texts that stay as ``QStaticText``, laid out (and elided) once per distinct string and
column width and kept while shown, so a repaint is mostly glyph blits; a text shown only
once (a running time that changes every second) shaped as it is drawn.

An exited row (its process left the GPU) is painted in the muted text colour and in
italics, with its colour square outlined rather than filled: it holds nothing now. A
process the driver lists but the host cannot find (a zombie, which does hold memory)
keeps the normal text, with its name in the warning colour.
"""

from __future__ import annotations

import weakref

from PySide6.QtCore import QAbstractItemModel, QPointF, QRect, QRectF, QSize, Qt
from PySide6.QtGui import (
    QColor,
    QFocusEvent,
    QFont,
    QFontMetrics,
    QPainter,
    QPaintEvent,
    QPalette,
    QPen,
    QPolygonF,
    QStaticText,
)
from PySide6.QtWidgets import QHeaderView, QStyle, QStyleOptionHeader, QTableView, QWidget

from gpuwatch.ui.live.cell_texts import BOLD, ITALIC, NORMAL, CellTexts
from gpuwatch.ui.live.process_model import (
    BUDGET,
    EXITED,
    HOLDING,
    LIVE,
    NAME,
    NUMERIC,
    ProcessModel,
)
from gpuwatch.ui.live.window_chrome import focus_ring_color
from gpuwatch.ui.widgets import theme

PADDING = 4          # px between a cell's edge and its text
SWATCH = 16          # px, the process colour square in the Name column (Qt's icon size)
SWATCH_GAP = 6       # px between the square and the name


ARROW_GAP = 4        # px between a header's text and its sort arrow


class SortHeader(QHeaderView):
    """A header whose sort arrow has a place of its own, after the text.

    Qt's Fusion style (with the window's stylesheet) draws the arrow in the middle of the
    section and a right-aligned text up to its edge, so the two overlap at any width
    ("GPU memor▾"). Here the style draws the section without text or arrow, then the arrow
    goes at the right end of the label's rectangle and the text in the rest, elided with
    "…" when the section is too narrow for both."""

    def __init__(self, orientation: Qt.Orientation = Qt.Orientation.Horizontal,
                 parent: QWidget | None = None):
        super().__init__(orientation, parent)
        # over left-aligned cells, left-aligned (the model right-aligns the numeric ones)
        self.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)

    def _option(self, logical: int, rect: QRect | None) -> QStyleOptionHeader:
        opt = QStyleOptionHeader()
        self.initStyleOptionForIndex(opt, logical)
        opt.rect = rect if rect is not None else QRect(
            self.sectionViewportPosition(logical), 0, self.sectionSize(logical), self.height())
        return opt

    def _label(self, opt: QStyleOptionHeader) -> QRect:
        """The section's padded label rectangle, as with no sort arrow."""
        plain = QStyleOptionHeader(opt)
        plain.sortIndicator = QStyleOptionHeader.SortIndicator.None_
        return self.style().subElementRect(QStyle.SubElement.SE_HeaderLabel, plain, self)

    def _arrow_size(self, opt: QStyleOptionHeader) -> QSize:
        sorted_ = QStyleOptionHeader(opt)
        sorted_.sortIndicator = QStyleOptionHeader.SortIndicator.SortDown
        size = self.style().subElementRect(QStyle.SubElement.SE_HeaderArrow, sorted_,
                                           self).size()
        # an arrow about half the text's height; a style that answers with something else
        # (older Qt gives the whole section here) gets that size instead
        side = max(7, QFontMetrics(self.font()).height() // 2)
        if not (0 < size.width() <= 2 * side and 0 < size.height() <= 2 * side):
            return QSize(side, side)
        return size

    def arrow_rect(self, logical: int, rect: QRect | None = None) -> QRect | None:
        """Where section ``logical``'s sort arrow is drawn, or None (not sorted by it)."""
        opt = self._option(logical, rect)
        if opt.sortIndicator == QStyleOptionHeader.SortIndicator.None_:
            return None
        label, size = self._label(opt), self._arrow_size(opt)
        return QRect(label.right() - size.width() + 1,
                     label.top() + (label.height() - size.height()) // 2,
                     size.width(), size.height())

    def text_rect(self, logical: int, rect: QRect | None = None) -> QRect:
        """Where section ``logical``'s text may go: its label rectangle less the arrow's
        (in the header's coordinates unless ``rect`` is the section's)."""
        opt = self._option(logical, rect)
        label = self._label(opt)
        arrow = self.arrow_rect(logical, rect)
        if arrow is not None:
            label.setRight(arrow.left() - ARROW_GAP - 1)
        return label

    def width_for(self, logical: int, arrow: bool = True) -> int:
        """The width section ``logical`` needs to show its text whole (beside a sort arrow
        with ``arrow``)."""
        opt = self._option(logical, QRect(0, 0, 400, max(self.height(), 20)))
        width = QFontMetrics(self.font()).horizontalAdvance(opt.text) + 1 + \
            opt.rect.width() - self._label(opt).width()
        return width + (self._arrow_size(opt).width() + ARROW_GAP if arrow else 0)

    def fit_sorted(self) -> None:
        """Widen the sorted section where its text and arrow do not fit side by side."""
        logical = self.sortIndicatorSection()
        if self.isSortIndicatorShown() and 0 <= logical < self.count():
            need = self.width_for(logical)
            if self.sectionSize(logical) < need:
                self.resizeSection(logical, need)

    def paintSection(self, painter: QPainter, rect: QRect, logical: int) -> None:
        if not rect.isValid():
            return
        opt = self._option(logical, rect)
        text = opt.text
        opt.text = ""
        opt.sortIndicator = QStyleOptionHeader.SortIndicator.None_
        style = self.style()
        painter.save()
        style.drawControl(QStyle.ControlElement.CE_Header, opt, painter, self)
        painter.restore()
        arrow = self.arrow_rect(logical, rect)
        if arrow is not None:       # ▼ largest first, ▲ smallest first
            down = self.sortIndicatorOrder() == Qt.SortOrder.DescendingOrder
            left, right = arrow.left() + 0.5, arrow.right() + 0.5
            mid, h = (left + right) / 2, (right - left) * 0.6
            top = arrow.top() + (arrow.height() - h) / 2
            tip, base = (top + h, top) if down else (top, top + h)
            painter.save()
            painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(opt.palette.color(QPalette.ColorRole.ButtonText))
            painter.drawPolygon(QPolygonF([QPointF(left, base), QPointF(right, base),
                                           QPointF(mid, tip)]))
            painter.restore()
        if not text:
            return
        room = self.text_rect(logical, rect)
        shown = QFontMetrics(self.font()).elidedText(text, Qt.TextElideMode.ElideRight,
                                                     room.width())
        style.drawItemText(painter, room, int(opt.textAlignment), opt.palette,
                           self.isEnabled(), shown, QPalette.ColorRole.ButtonText)


class ProcessTable(QTableView):
    """The table. Tab and Shift+Tab leave it for the next and previous control (the arrow
    keys move between rows); with no row to show it says why (:attr:`empty_text`)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setHorizontalHeader(SortHeader(Qt.Orientation.Horizontal, self))
        self.cells = CellTexts()      # the laid-out texts of what is shown
        self.empty_text = "Waiting for the first sample…"
        self.setTabKeyNavigation(False)
        self.setAccessibleName("Processes using GPU memory")
        self.setAccessibleDescription(
            "One row per process on a GPU: pid, user, name, GPU, GPU memory, budget, CPU, "
            "memory, running time, container and command. Arrow keys move between rows; "
            "Tab leaves the table.")

    def setModel(self, model: QAbstractItemModel | None) -> None:
        super().setModel(model)
        if isinstance(model, ProcessModel):      # cells out of view need no announcing
            view = weakref.ref(self)
            model.rows_in_view = lambda: _rows_in_view(view())

    def rows_in_view(self) -> tuple[int, int]:
        """The first and last row shown, whole or in part ((0, -1): none)."""
        return _rows_in_view(self)

    def focusInEvent(self, event: QFocusEvent) -> None:
        super().focusInEvent(event)
        self.viewport().update()

    def focusOutEvent(self, event: QFocusEvent) -> None:
        super().focusOutEvent(event)
        self.viewport().update()

    def _paint_focus_ring(self) -> None:
        """The keyboard focus ring, inside the viewport's edge (see ``focus_ring_css``)."""
        if not self.hasFocus():
            return
        p = QPainter(self.viewport())
        pen = QPen(QColor(focus_ring_color(theme.colors())), 2)
        pen.setJoinStyle(Qt.PenJoinStyle.MiterJoin)
        p.setPen(pen)
        p.drawRect(QRectF(self.viewport().rect()).adjusted(1, 1, -1, -1))
        p.end()

    def set_empty_text(self, text: str) -> None:
        if text != self.empty_text:
            self.empty_text = text
            if self.model() is None or self.model().rowCount() == 0:
                self.viewport().update()

    def _paint_empty(self) -> None:
        """What an empty table says, centred in the visible part of the viewport."""
        p = QPainter(self.viewport())
        p.setPen(QColor(theme.colors().muted))
        p.drawText(self.viewport().rect().adjusted(12, 12, -12, -12),
                   int(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop
                       | Qt.TextFlag.TextWordWrap), self.empty_text)
        p.end()

    def paintEvent(self, event: QPaintEvent) -> None:
        model = self.model()
        if not isinstance(model, ProcessModel):
            super().paintEvent(event)
            return
        if model.rowCount() == 0:
            self._paint_empty()
        else:
            self._paint_rows(event, model)
        self._paint_focus_ring()

    def _paint_rows(self, event: QPaintEvent, model: ProcessModel) -> None:
        rows = model.rowCount()
        viewport = self.viewport()
        area = event.rect()
        if area.isEmpty():
            return
        first = self.rowAt(area.top())
        if first < 0:
            return
        last = self.rowAt(area.bottom())
        last = rows - 1 if last < 0 else last
        columns = self._visible_columns(area)
        fonts = self.cells.begin(self.font(), area.contains(viewport.rect()))
        font, italic = fonts[NORMAL], fonts[ITALIC]
        palette = self.palette()
        base = palette.color(QPalette.ColorRole.Base)
        alternate = palette.color(QPalette.ColorRole.AlternateBase)
        highlight = palette.color(QPalette.ColorRole.Highlight)
        text_color = palette.color(QPalette.ColorRole.Text)
        highlighted_text = palette.color(QPalette.ColorRole.HighlightedText)
        colors = theme.colors()
        muted, warning = QColor(colors.muted), QColor(colors.warning)
        selection = self.selectionModel()
        selected = {i.row() for i in selection.selectedRows()} if selection else set()
        alternating = self.alternatingRowColors()
        width = viewport.width()
        # a viewport that fills its background has the Base colour under every row already
        under = None if viewport.autoFillBackground() and \
            viewport.palette().color(viewport.backgroundRole()) == base else base

        # per column, once: where its text starts, its room, right-aligned?
        cells = []
        name_x = None
        for col, x, w in columns:
            left, room = x + PADDING, w - 2 * PADDING
            if col == NAME:
                name_x = x + PADDING
                left, room = left + SWATCH + SWATCH_GAP, room - SWATCH - SWATCH_GAP
            if room > 0:
                cells.append((col, left, room, col in NUMERIC))
        draw, kept = self.cells.draw, self.cells.kept

        p = QPainter(viewport)
        p.setFont(font)
        for row in range(first, last + 1):
            y, h = self.rowViewportPosition(row), self.rowHeight(row)
            chosen = row in selected
            fill = highlight if chosen else alternate if alternating and row % 2 else under
            if fill is not None:
                p.fillRect(QRect(0, y, width, h), fill)
            texts, pid, budget_bold, state = model.row_paint(row)
            gone = state == EXITED
            pen = highlighted_text if chosen else muted if gone else text_color
            if name_x is not None:
                square = QRect(name_x, y + (h - SWATCH) // 2, SWATCH, SWATCH)
                if gone:          # holds nothing now: an outline, not a filled square
                    p.setPen(theme.process_color(pid))
                    p.drawRect(square.adjusted(1, 1, -2, -2))
                else:
                    p.fillRect(square, theme.process_color(pid))
            p.setPen(pen)
            if state == LIVE and not budget_bold:     # most rows: one font, one pen
                for col, left, room, right in cells:
                    text = texts[col]
                    laid = kept.get((text, room, NORMAL))
                    if laid is None:
                        draw(p, text, left, room, y, h, right, NORMAL)
                    else:
                        static, text_w, text_h = laid
                        p.drawStaticText(left + room - text_w if right else left,
                                         y + (h - text_h) // 2, static)
                continue
            row_style = ITALIC if gone else NORMAL
            if gone:
                p.setFont(italic)
            for col, left, room, right in cells:
                style = BOLD if budget_bold and col == BUDGET and not gone else row_style
                if style != row_style:
                    p.setFont(fonts[style])
                flagged = col == NAME and state == HOLDING and not chosen
                if flagged:
                    p.setPen(warning)
                laid = kept.get((texts[col], room, style))
                if laid is None:
                    draw(p, texts[col], left, room, y, h, right, style)
                else:
                    static, text_w, text_h = laid
                    p.drawStaticText(left + room - text_w if right else left,
                                     y + (h - text_h) // 2, static)
                if flagged:
                    p.setPen(pen)
                if style != row_style:
                    p.setFont(fonts[row_style])
            if gone:
                p.setFont(font)
        p.end()

    def _visible_columns(self, area: QRect) -> list[tuple[int, int, int]]:
        """(logical column, x in the viewport, width) of each column the area touches."""
        header = self.horizontalHeader()
        out = []
        for visual in range(header.count()):
            col = header.logicalIndex(visual)
            if header.isSectionHidden(col):
                continue
            x, w = header.sectionViewportPosition(col), header.sectionSize(col)
            if x + w >= area.left() and x <= area.right() and w > 0:
                out.append((col, x, w))
        return out

    def _static(self, text: str, room: int, font: QFont,
                style: int) -> tuple[QStaticText, int, int]:
        """``text`` laid out in ``font`` as a cell of ``style`` shows it, elided with "…"
        to ``room`` pixels: (static text, width, height) in whole pixels."""
        self.cells.begin(font, full=False)
        return self.cells.static(text, room, int(style))


def _rows_in_view(table: ProcessTable | None) -> tuple[int, int]:
    """The first and last row ``table`` shows, whole or in part ((0, -1): none, or no
    table any more)."""
    if table is None:
        return 0, -1
    first = table.rowAt(0)
    if first < 0:
        return 0, -1
    last = table.rowAt(table.viewport().height() - 1)
    return first, table.model().rowCount() - 1 if last < 0 else last
