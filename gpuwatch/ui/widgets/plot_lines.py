"""Dashed reference lines across a time plot (a GPU's capacity, its peak bandwidth), each
with its label above it at the left, and the same words in its tooltip.

A plot too short for a label over its line (three label heights) keeps the dashed line
and hides the label rather than spend a third of its height on it.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt

from gpuwatch.ui.widgets import theme

LABEL_AT = (0.02, 0.36, 0.70)    # where along its line each label sits, by the line's rank


class MarkLines:
    """The reference lines of one plot, keyed by what they mark (e.g. bytes of capacity)."""

    def __init__(self, plot: pg.PlotWidget) -> None:
        self.plot = plot
        self.lines: dict[float, pg.InfiniteLine] = {}
        self.added = False       # a line came since the caller last looked (cache its text)

    def update(self, wanted: dict[float, tuple[float, str]]) -> None:
        """Lines for ``wanted``: key -> (position in the plot's unit, label); others go."""
        for key in list(self.lines):
            if key not in wanted:
                self.plot.removeItem(self.lines.pop(key))
        for key, (position, label) in wanted.items():
            if key not in self.lines:
                self.lines[key] = line = self._line(position, label)
                self.plot.addItem(line)
                self.added = True
        # lines close in value (two GPUs' peaks of 1,008 and 936 GB/s) would print their
        # labels over each other at the left: each next line's label starts further right
        for rank, key in enumerate(sorted(self.lines)):
            label = self.lines[key].label
            at = LABEL_AT[rank % len(LABEL_AT)]
            if label.orthoPos != at:      # placing a label lays it out again: only on a change
                label.setPosition(at)

    def drop(self) -> None:
        """Remove every line (units or theme changed: they are made again)."""
        for line in self.lines.values():
            self.plot.removeItem(line)
        self.lines.clear()

    def fit_labels(self, view_px: float, line_px: float) -> bool:
        """Show the labels where the plot has room for them; True where it has."""
        roomy = view_px <= 0 or view_px >= 3 * line_px
        for item in self.lines.values():
            if item.label.isVisible() != roomy:
                item.label.setVisible(roomy)
        return roomy

    @staticmethod
    def _line(position: float, label: str) -> pg.InfiniteLine:
        muted = theme.colors().muted
        line = pg.InfiniteLine(pos=position, angle=0,
                               pen=pg.mkPen(muted, width=1, style=Qt.PenStyle.DashLine),
                               label=label, labelOpts={"position": 0.02, "color": muted,
                                                       "anchors": [(0, 1), (0, 1)]})
        line.setToolTip(label)
        return line
