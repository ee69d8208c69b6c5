"""The painted parts of a GPU card: pieces of text laid out by the card's layouts and
drawn by the card's one ``paintEvent``, not widgets of their own.

A card shows a dozen texts, most of which change every sample. As widgets, each paid
for its own paint event, painter and background pass every second. A :class:`Part` is
a ``QLayoutItem`` instead: the card's box and grid layouts place it exactly as they
placed the widget it replaces (same size hints and policies), and a change of its
content marks only its rectangle of the card dirty. The card then paints once, with
one painter, whatever parts the dirty region touches. Parts keep the small widget API
their users read (``text()``, ``isHidden()``, ``toolTip()``, ``width()``); a part's
tooltip is shown by the card for the part's rectangle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QColor, QFont, QPainter
from PySide6.QtWidgets import QLayoutItem, QWidget

from gpuwatch.ui.live.text_lines import Run, RunLines, lines_height
from gpuwatch.ui.widgets import theme

if TYPE_CHECKING:
    from gpuwatch.ui.live.card_frame import CardFrame

MAX_SIZE = 16777215      # QWIDGETSIZE_MAX: no limit


class Part(QLayoutItem):
    """A rectangle of ``card`` placed by its layout and painted by it."""

    def __init__(self, card: CardFrame):
        super().__init__()
        self.card = card
        self.rect = QRect()
        self._hidden = False
        self._tooltip = ""
        self._min_width = 0

    # QLayoutItem ----------------------------------------------------------------------
    def geometry(self) -> QRect:
        return self.rect

    def setGeometry(self, rect: QRect) -> None:
        """As a widget's layout item places its widget: no larger than its maximum,
        centred in what the layout gives it."""
        if self._hidden:
            return
        room = self.maximumSize()
        w, h = min(rect.width(), room.width()), min(rect.height(), room.height())
        rect = QRect(rect.x() + (rect.width() - w) // 2, rect.y() + (rect.height() - h) // 2,
                     w, h)
        if rect != self.rect:
            self.card.update(self.rect)     # where it was
            self.rect = QRect(rect)
            self.card.parts_moved()
            self.update()

    def isEmpty(self) -> bool:
        return self._hidden

    def expandingDirections(self) -> Qt.Orientation:
        return Qt.Orientation(0)

    # as a widget ----------------------------------------------------------------------
    def update(self) -> None:
        """Mark the part's rectangle of the card for repainting."""
        if not self._hidden and self.rect.isValid():
            self.card.update(self.rect)

    def relayout(self) -> None:
        """The part's size hint changed: the card lays its parts out again."""
        layout = self.card.layout()
        if layout is not None:
            layout.invalidate()

    def isHidden(self) -> bool:
        return self._hidden

    def isVisibleTo(self, ancestor: QWidget) -> bool:
        return not self._hidden

    def setVisible(self, visible: bool) -> None:
        if visible != (not self._hidden):
            self.card.parts_moved()
            if self._hidden:
                self._hidden = False
                self.update()
            else:
                self.update()
                self._hidden = True
            self.relayout()

    def show(self) -> None:
        self.setVisible(True)

    def hide(self) -> None:
        self.setVisible(False)

    def width(self) -> int:
        return self.rect.width()

    def height(self) -> int:
        return self.rect.height()

    def toolTip(self) -> str:
        return self._tooltip

    def setToolTip(self, tooltip: str) -> None:
        self._tooltip = tooltip

    def minimumWidth(self) -> int:
        return self._min_width

    def setMinimumWidth(self, width: int) -> None:
        """As a widget's explicit minimum width: the layout never gives it less."""
        if width != self._min_width:
            self._min_width = width
            self.relayout()

    def opaque(self) -> bool:
        """Whether :meth:`paint` fills the whole rectangle."""
        return False

    def set_font(self, font: QFont) -> None:
        """The card's font changed."""

    def paint(self, p: QPainter) -> None:
        raise NotImplementedError


class TextPart(Part):
    """A few lines of runs (a painted :class:`~gpuwatch.ui.live.text_lines.TextLines`).

    ``fit_text``: the part asks for its text's natural width (a label in a row of a
    layout); otherwise it takes whatever width it gets, and a line wider than that is
    cut with an ellipsis. Either way its height follows its line count."""

    def __init__(self, card: CardFrame, fit_text: bool = False, align_right: bool = False):
        super().__init__(card)
        self.runs = RunLines(card.font())
        self._room = 0           # the widest text so far: the width this part asks for
        self._fit_text = fit_text
        self._align_right = align_right
        self._color: QColor | None = None
        self._background: QColor | None = None
        self._height = lines_height(self.runs.step, 0, fit_text)

    # sizes ---------------------------------------------------------------------------
    def sizeHint(self) -> QSize:
        if self._hidden:
            return QSize(0, 0)
        # as a widget's item: Preferred takes the text's width, Ignored none
        width = max(self._room, self._min_width) if self._fit_text else 0
        return QSize(width, self._height)

    def minimumSize(self) -> QSize:
        if self._hidden:
            return QSize(0, 0)
        return QSize(self._min_width, self._height)

    def maximumSize(self) -> QSize:
        if self._hidden:
            return QSize(0, 0)
        return QSize(MAX_SIZE, self._height)

    def set_font(self, font: QFont) -> None:
        self.runs.set_font(font)
        self._room = self.runs.natural
        self._height = lines_height(self.runs.step, len(self.runs.lines), self._fit_text)
        self.relayout()
        self.update()

    # content ------------------------------------------------------------------------
    def set_lines(self, lines: list[list[Run]], tooltip: str | None = None) -> None:
        """Show ``lines`` (and ``tooltip``, when given); unchanged lines cost nothing."""
        if tooltip is not None:
            self._tooltip = tooltip
        if not self.runs.set_lines(lines):
            return
        height = lines_height(self.runs.step, len(lines), self._fit_text)
        relayout = height != self._height
        self._height = height
        if self._fit_text and self.runs.natural > self._room:
            # Only when the text outgrows the room asked for so far: a layout pass for
            # every change of a figure's width would relay the card every sample. The
            # room is kept when the text shrinks.
            self._room = self.runs.natural
            relayout = True
        if relayout:
            self.relayout()
        self.update()

    def set_runs(self, runs: list[Run], tooltip: str | None = None) -> None:
        """One line of runs."""
        self.set_lines([runs], tooltip)

    def set(self, text: str, tooltip: str | None = None) -> None:
        """One line of plain text in the part's colour."""
        self.set_lines([[Run(text)]], tooltip)

    def text(self) -> str:
        """The lines as plain text (for tests and accessibility)."""
        return self.runs.text()

    def lines(self) -> list[list[Run]]:
        return self.runs.lines

    def set_colors(self, text: QColor | None, background: QColor | None) -> None:
        """The colour of runs without one (default: the theme's text colour) and the
        colour under the text."""
        if text != self._color or background != self._background:
            self._color = None if text is None else QColor(text)
            self._background = None if background is None else QColor(background)
            self.card.parts_moved()
            self.update()

    def opaque(self) -> bool:
        return self._background is not None

    def colors(self) -> tuple[QColor | None, QColor | None]:
        """(text, background) as set (for tests)."""
        return self._color, self._background

    def paint(self, p: QPainter) -> None:
        r = self.rect
        p.setClipRect(r)         # as a widget was: nothing drawn outside the part
        if self._background is not None:
            p.fillRect(r, self._background)
        self.runs.paint(p, float(r.x()), float(r.y()), float(r.width()),
                        self._color or QColor(theme.colors().text), self._align_right)
