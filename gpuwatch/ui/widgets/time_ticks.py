"""Where a time axis puts its ticks, and what their labels say: plain arithmetic.

A live plot's time axis moves every second, so its ticks are recomputed every second.
pyqtgraph's ``DateAxisItem`` does that through zoom levels, numpy arrays and
tolerance checks (about a millisecond per axis here); this picks one labelled step
that leaves room for the labels, one finer unlabelled step for the grid, and lists
their multiples in local time.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

# Steps a reader counts in: seconds, minutes, hours, days.
STEPS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600,
           43200, 86400, 172800, 604800)
MIN_MINOR_PX = 12.0   # finer grid lines closer than this are left out


def local_offset_s(t: float) -> float:
    """Seconds east of UTC of the local time zone at ``t``."""
    return float(time.localtime(t).tm_gmtoff)


def steps(span_s: float, length_px: float,
          label_px: Callable[[str], float]) -> tuple[float, float | None]:
    """(labelled step, finer grid step or None) for ``span_s`` seconds drawn over
    ``length_px`` pixels, where a label in a given ``strftime`` format needs
    ``label_px(format)`` pixels, gap included."""
    px_per_s = length_px / span_s
    major = next((s for s in STEPS_S if s * px_per_s >= label_px(label_format(s))),
                 STEPS_S[-1])
    minor = next((s for s in reversed(STEPS_S)
                  if s < major and major % s == 0 and major // s <= 6), None)
    if minor is not None and minor * px_per_s < MIN_MINOR_PX:
        minor = None
    return float(major), None if minor is None else float(minor)


def multiples(x0: float, x1: float, step: float, offset_s: float) -> list[float]:
    """The instants in [x0, x1] at whole multiples of ``step`` in local time."""
    first = math.ceil((x0 + offset_s) / step)
    last = math.floor((x1 + offset_s) / step)
    return [k * step - offset_s for k in range(first, last + 1)]


def time_ticks(x0: float, x1: float, length_px: float,
               label_px: Callable[[str], float]) -> list[tuple[float, list[float]]]:
    """[(step, values)] for the labelled level, then the finer one (without the values
    the labelled level has), as pyqtgraph's ``tickValues`` returns them."""
    if not (x1 > x0 and length_px > 0):
        return []
    offset = local_offset_s(x0)
    major, minor = steps(x1 - x0, length_px, label_px)
    levels = [(major, multiples(x0, x1, major, offset))]
    if minor is not None:
        levels.append((minor, [v for v in multiples(x0, x1, minor, offset)
                               if (v + offset) % major]))
    return levels


def label_format(step: float) -> str:
    """The ``strftime`` format of labels ``step`` seconds apart."""
    return "%H:%M:%S" if step < 60 else "%H:%M" if step < 86400 else "%a %d"


SAMPLE_LABELS = {"%H:%M:%S": "00:00:00", "%H:%M": "00:00", "%a %d": "Wed 00"}


def tick_label(value: float, step: float) -> str:
    """The label of a tick at ``value`` (epoch seconds) on a level of ``step`` seconds:
    clock times, with the day's name at local midnight on an hourly axis."""
    t = time.localtime(value)
    if 3600 <= step < 86400 and t.tm_hour == 0 and t.tm_min == 0:
        return time.strftime("%a %d", t)
    return time.strftime(label_format(step), t)
