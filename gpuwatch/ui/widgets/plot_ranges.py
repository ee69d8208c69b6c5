"""Y ranges of the time plots: from zero, with room for labels, and sticky for live data.

Arithmetic (and the font's height), shared by the live and replayed time plots and the
process plot. A range that depends on pixels (room for a label above a line, the "0"
label under it) is fitted again when its plot changes height.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtGui import QFont, QFontMetricsF


def _usable(view_px: float, margins_px: float) -> float:
    """Pixels left for the data between label margins (never under half the view: a tiny
    plot shows its data squeezed, not its margins)."""
    if view_px <= 0:          # not laid out yet: as for a plot of average height
        view_px = 300.0
    return max(view_px - margins_px, view_px * 0.5)


def zero_based_range(top: float, view_px: float, above_px: float,
                     below_px: float) -> tuple[float, float]:
    """A y range with 0 a little above the bottom edge and ``top`` a little below the top
    one: ``below_px`` under zero (so the "0" label is drawn and a flat line at zero is not
    hidden under the axis) and ``above_px`` over ``top`` (for a label on a line there)."""
    units_per_px = top / _usable(view_px, above_px + below_px)
    return -below_px * units_per_px, top + above_px * units_per_px


def top_with_room(low: float, value: float, top: float, view_px: float,
                  room_px: float) -> float:
    """The top of a y range [low, top], raised where needed so that a line at ``value``
    has ``room_px`` pixels above it for its label (which the plot's edge would cut)."""
    return max(top, value + (value - low) * room_px / _usable(view_px, room_px))


_LABEL_PX: dict[str, tuple[float, float]] = {}    # by font: asked twice a second, live


def label_px() -> tuple[float, float]:
    """(room for a line's label above its line, half a tick label's height), in pixels."""
    font = QFont()
    key = font.key()
    found = _LABEL_PX.get(key)
    if found is None:
        if len(_LABEL_PX) > 16:
            _LABEL_PX.clear()
        height = QFontMetricsF(font).height()
        found = _LABEL_PX[key] = (height + 8.0, height / 2 + 2.0)
    return found


class StickyRange:
    """A y range with hysteresis: it grows at once to show every point and shrinks only
    when the data fill less than half of it. pyqtgraph's auto-range refits to every
    sample's bounds, so a live plot's axis, ticks and grid were regenerated every second
    for changes nobody can see."""

    PAD = 0.08   # of the data's span, above and below

    def __init__(self, floor: float | None = None, min_top: float | None = None) -> None:
        """``floor``: the range starts there, for values that cannot go below it (bytes,
        rates); ``min_top``: the range reaches at least that high, so data that are all
        zero show a plain 0 to ``min_top`` rather than a range around zero."""
        self.shown: tuple[float, float] | None = None
        self.floor = floor
        self.min_top = min_top

    def fit(self, low: float, high: float) -> tuple[float, float] | None:
        """The new range for data within [low, high], or None to keep the current one."""
        if not (np.isfinite(low) and np.isfinite(high)):
            return None
        if self.floor is not None:
            low = self.floor
        if self.min_top is not None:
            high = max(high, self.min_top / (1 + self.PAD))
        span = max(high - low, abs(high) * 0.05, 1e-3)
        if self.shown is not None:
            bottom, top = self.shown
            if bottom <= low and high <= top and span >= 0.5 * (top - bottom):
                return None
        bottom = low if self.floor is not None else low - self.PAD * span
        self.shown = (bottom, high + self.PAD * span)
        return self.shown


def bounds(*arrays: np.ndarray) -> tuple[float, float]:
    """(min, max) of the finite values of the arrays; (inf, -inf) when there are none."""
    low, high = np.inf, -np.inf
    for a in arrays:
        if len(a):
            low, high = np.fmin(low, np.fmin.reduce(a)), np.fmax(high, np.fmax.reduce(a))
    return float(low), float(high)
