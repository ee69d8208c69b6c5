"""Process-table columns as wide as the texts they show.

The default widths come from typical texts (see ``COLUMN_SAMPLES``); a longer one — a
script with a long name, "unknown — GPU lost" in Running, a probed budget — widens its
column to show it whole rather than "python · finet…". Columns only grow during a run
(a column that narrowed every time a long row scrolled away would make the table jump),
up to :data:`GROW_CAP_PX`, and a column whose edge the user has dragged keeps the width
given (its text elides, whole in the tooltip). Command, the last column, takes what is
left and elides: its tooltip holds the whole line.

Only the rows in view are measured (the texts the table draws), once per text: a width
is kept by text and style until the font changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from gpuwatch.ui.live.cell_texts import BOLD, ITALIC, NORMAL
from gpuwatch.ui.live.process_model import EXITED, ProcessModel
from gpuwatch.ui.live.process_table import (
    PADDING,
    SWATCH,
    SWATCH_GAP,
    ProcessTable,
    SortHeader,
)
from gpuwatch.ui.live.process_texts import BUDGET, COMMAND, NAME

GROW_CAP_PX = 360       # a column grows to its widest text up to this
KEPT_WIDTHS = 4096      # measured texts kept before starting over

# What a cell typically says, per column but the last (Command, which takes the rest): the
# default widths show these whole, and each header beside its sort arrow when sorted.
COLUMN_SAMPLES = ("4194304", "username", "python · pretrain.py", "0", "88.8 GiB", "88.8 GiB",
                  "100 %", "88.8 GiB", "exited 00:00:00", "docker:0123456789ab")


class ColumnFit:
    """Widens ``table``'s columns (all but the last) to their widest text in view."""

    def __init__(self, table: ProcessTable) -> None:
        self.table = table
        self.user: set[int] = set()          # columns whose width the user set
        self._sizing = False                 # a width set here, not by the user
        self._widths: dict[tuple[str, int], int] = {}
        table.horizontalHeader().sectionResized.connect(self._resized)

    @contextmanager
    def sizing(self) -> Iterator[None]:
        """Column widths set inside this are the program's, not the user's."""
        before, self._sizing = self._sizing, True
        try:
            yield
        finally:
            self._sizing = before

    def defaults(self) -> list[int]:
        """Column widths from the font: each shows its sample text and its header."""
        header = self.table.horizontalHeader()
        assert isinstance(header, SortHeader)
        cells = self.table.cells
        cells.use_font(self.table.font())
        widths = []
        for col, sample in enumerate(COLUMN_SAMPLES):
            cell = cells.width(sample, BOLD if col == BUDGET else NORMAL) + 2 * PADDING + 2
            if col == NAME:
                cell += SWATCH + SWATCH_GAP
            widths.append(max(cell, header.width_for(col, arrow=False)))
        return widths

    def _resized(self, col: int, _old: int, _new: int) -> None:
        # the user drags a section's edge with the button held; a restored header state,
        # the stretched last section and the fits here resize with no button down
        if not self._sizing and col != COMMAND and \
                QApplication.mouseButtons() & Qt.MouseButton.LeftButton:
            self.user.add(col)

    def needs(self) -> dict[int, int]:
        """Per column (not the last, not hidden, not the user's) the width its widest
        text in view needs, padding and the Name column's swatch included."""
        table = self.table
        model = table.model()
        if not isinstance(model, ProcessModel) or model.rowCount() == 0:
            return {}
        first, last = table.rows_in_view()
        if last < first:
            return {}
        cells = table.cells
        if cells.use_font(table.font()) or len(self._widths) > KEPT_WIDTHS:
            self._widths = {}
        header = table.horizontalHeader()
        columns = [c for c in range(model.columnCount())
                   if c != COMMAND and c not in self.user and not header.isSectionHidden(c)]
        widths, measure = self._widths, cells.width
        widest = dict.fromkeys(columns, 0)
        for row in range(first, last + 1):
            texts, _, bold_budget, state = model.row_paint(row)
            style = ITALIC if state == EXITED else NORMAL
            for col in columns:
                text = texts[col]
                key = (text, BOLD if bold_budget and col == BUDGET and style == NORMAL
                       else style)
                width = widths.get(key)
                if width is None:
                    width = widths[key] = measure(*key)
                if width > widest[col]:
                    widest[col] = width
        extra = 2 * PADDING
        return {col: w + extra + (SWATCH + SWATCH_GAP if col == NAME else 0)
                for col, w in widest.items() if w}

    def fit(self) -> bool:
        """Widen the columns whose text in view does not fit; True if one grew."""
        header = self.table.horizontalHeader()
        grew = False
        with self.sizing():
            for col, need in self.needs().items():
                want = min(need, GROW_CAP_PX)
                if header.sectionSize(col) < want:
                    header.resizeSection(col, want)
                    grew = True
        return grew
