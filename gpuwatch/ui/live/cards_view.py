"""The row (or grid) of GPU cards: one per GPU seen, laid out by how many there are.

Above them, the snapshot's warnings, when it has any: with no GPU at all (NVML lists
none) the sentence saying what to check stands where the cards would be.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QGridLayout, QLabel, QScrollArea, QVBoxLayout, QWidget

from gpuwatch.core.snapshot import Snapshot
from gpuwatch.core.units import UnitSystem
from gpuwatch.ui.live.gpu_card import GpuCard
from gpuwatch.ui.live.overlay import Overlay
from gpuwatch.ui.settings import Thresholds
from gpuwatch.ui.widgets import theme


def columns_for(n: int) -> int:
    return 2 if n <= 2 else 3 if n in (3, 6, 9) else 4


class CardsView(QScrollArea):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.cards: dict[int, GpuCard] = {}
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self._inner = QWidget()
        self.notice = QLabel()            # the snapshot's warnings (no GPUs, hidden pids)
        self.notice.setObjectName("cardsNotice")
        self.notice.setWordWrap(True)
        self.notice.setTextFormat(Qt.TextFormat.PlainText)
        self.notice.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.notice.hide()
        self._warnings: tuple[str, ...] = ()
        self._preferred = 0      # up to two rows of cards and the notice, without scrolling
        self._grid = QGridLayout()
        self._grid.setContentsMargins(8, 8, 8, 4)
        self._grid.setSpacing(8)
        self._top = top = QVBoxLayout()     # no room while the notice is hidden
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.notice)
        outer = QVBoxLayout(self._inner)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(0)
        outer.addLayout(top)
        outer.addLayout(self._grid, 1)
        self.setWidget(self._inner)
        self.restyle()

    def set_warnings(self, warnings: tuple[str, ...]) -> bool:
        """Show the snapshot's warnings; True when the notice came, went or changed, so
        the window may re-fit the cards' height."""
        if warnings == self._warnings:
            return False
        self._warnings = warnings
        if not warnings:
            self.notice.hide()
            self._top.setContentsMargins(0, 0, 0, 0)
        else:
            self.notice.setText("\n".join(warnings))
            self.notice.show()
            self._top.setContentsMargins(8, 8, 8, 0)
        if self.cards:
            self._relayout()
        else:
            self._preferred = self.notice.heightForWidth(max(400, self.width() - 16)) \
                + 24 if warnings else 0
            self.setMinimumHeight(min(self._preferred, self.MIN_NOTICE))
        return True

    MIN_NOTICE = 120   # px of a long notice shown before it scrolls

    def preferred_height(self) -> int:
        """The height that shows up to two rows of cards (and the notice) whole; the
        minimum is one row, the rest scrolls, so the window fits a small screen."""
        return max(self._preferred, self.minimumHeight())

    def restyle(self) -> None:
        c = theme.colors()
        self.notice.setStyleSheet(
            f"QLabel#cardsNotice {{ background: {c.banner_warn}; color: {c.text}; "
            f"border-left: 4px solid {c.warning}; padding: 8px 12px; }}")

    def update_snapshot(self, snap: Snapshot, units: UnitSystem, thresholds: Thresholds,
                        overlays: dict[int, Overlay]) -> bool:
        """Update every card; True when the cards' layout (and height) changed."""
        new = [g.index for g in snap.gpus if g.index not in self.cards]
        for index in new:
            self.cards[index] = GpuCard(index)
        if new:
            self._relayout()
        for g in snap.gpus:
            self.cards[g.index].update_sample(g, units, thresholds, overlays.get(g.index))
        if any(c.height_changed for c in self.cards.values()):
            for c in self.cards.values():
                c.height_changed = False
            self._relayout()
            return True
        return bool(new)

    def _relayout(self) -> None:
        for card in self.cards.values():
            self._grid.removeWidget(card)
        cols = columns_for(len(self.cards))
        for i, index in enumerate(sorted(self.cards)):
            self._grid.addWidget(self.cards[index], i // cols, i % cols)
        for c in range(4):
            self._grid.setColumnStretch(c, 1 if c < cols else 0)
        rows = -(-len(self.cards) // cols)
        self._grid.setRowStretch(rows, 1)
        notice = 0 if self.notice.isHidden() else \
            self.notice.heightForWidth(max(400, self.width() - 16)) + 8
        self._preferred = self.height_for_rows(min(rows, 2)) + notice
        self.setMinimumHeight(self.height_for_rows(min(rows, 1)) + min(notice, self.MIN_NOTICE))

    def height_for_rows(self, rows: int) -> int:
        """Room for ``rows`` rows of cards (budget lines included) without scrolling."""
        card = max((c.sizeHint().height() for c in self.cards.values()), default=150)
        m = self._grid.contentsMargins()
        return rows * card + (rows - 1) * self._grid.spacing() + m.top() + m.bottom() + 2
