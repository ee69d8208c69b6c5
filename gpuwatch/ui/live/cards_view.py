"""The row (or grid) of GPU cards: one per GPU seen, laid out by how many there are."""

from __future__ import annotations

from PySide6.QtWidgets import QFrame, QGridLayout, QScrollArea, QWidget

from gpuwatch.core.snapshot import Snapshot
from gpuwatch.core.units import UnitSystem
from gpuwatch.ui.live.gpu_card import GpuCard
from gpuwatch.ui.live.overlay import Overlay
from gpuwatch.ui.settings import Thresholds


def columns_for(n: int) -> int:
    return 2 if n <= 2 else 3 if n in (3, 6, 9) else 4


class CardsView(QScrollArea):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.cards: dict[int, GpuCard] = {}
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self._inner = QWidget()
        self._grid = QGridLayout(self._inner)
        self._grid.setContentsMargins(8, 8, 8, 4)
        self._grid.setSpacing(8)
        self.setWidget(self._inner)

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
        self.setMinimumHeight(self.height_for_rows(min(rows, 2)))

    def height_for_rows(self, rows: int) -> int:
        """Room for ``rows`` rows of cards (budget lines included) without scrolling."""
        card = max((c.sizeHint().height() for c in self.cards.values()), default=150)
        m = self._grid.contentsMargins()
        return rows * card + (rows - 1) * self._grid.spacing() + m.top() + m.bottom() + 2
