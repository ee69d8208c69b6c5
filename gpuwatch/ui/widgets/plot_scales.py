"""The time plots' y ranges and their dashed lines: memory from zero to the largest
capacity, bandwidth from zero to the fastest GPU's peak, each with room above its line
for the line's label; without a capacity or peak, to what the data need (sticky, at
least one unit)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np
import pyqtgraph as pg

from gpuwatch.core.units import UnitSystem, format_bytes
from gpuwatch.ui.widgets.bandwidth_units import format_bandwidth
from gpuwatch.ui.widgets.plot_lines import MarkLines
from gpuwatch.ui.widgets.plot_ranges import StickyRange, label_px, zero_based_range


def one_per_label(values: Iterable[float], label: Callable[[float], str]) -> list[float]:
    """The largest of the values that read the same, one for each distinct label."""
    largest: dict[str, float] = {}
    for value in values:
        text = label(value)
        if value > largest.get(text, -math.inf):
            largest[text] = value
    return list(largest.values())


class PlotScales:
    """The y ranges of the memory and bandwidth plots and their capacity/peak lines."""

    def __init__(self, memory: pg.PlotWidget, bandwidth: pg.PlotWidget) -> None:
        self.memory = memory
        self.bandwidth = bandwidth
        self.capacity_marks = MarkLines(memory)
        self.peak_marks = MarkLines(bandwidth)
        self.units: UnitSystem = "iec"
        self._y_set: dict[int, tuple[float, float]] = {}   # id(plot) -> the range it shows
        self.reset()

    def reset(self) -> None:
        self._bw_range = StickyRange(floor=0.0, min_top=1.0)   # GB/s, where no peak is known
        self._mem_range = StickyRange(floor=0.0, min_top=1.0)  # GiB, where no capacity is
        self.mem_top: float | None = None      # the largest capacity, in the plot's unit
        self._mem_data_top: float | None = None  # without a capacity: what the data need
        self._bw_top: float | None = None        # the peak bandwidth, or what the data need
        self._bw_line = False                    # a peak line at _bw_top needs room above

    def start(self) -> None:
        """Before the first sample: zero to one unit up."""
        self._mem_data_top = self._bw_top = 1.0
        self.fit_memory()
        self.fit_bandwidth()

    def drop_lines(self) -> None:
        self.capacity_marks.drop()
        self.peak_marks.drop()

    def _set_y(self, plot: pg.PlotWidget, low: float, high: float) -> None:
        """Set a y range unless it is the one shown: pyqtgraph redoes the axis and every
        item's view transform on each call, equal or not."""
        if self._y_set.get(id(plot)) != (low, high):
            self._y_set[id(plot)] = (low, high)
            plot.setYRange(low, high, padding=0)

    def fit_bandwidth(self, high: float | None = None, peak: float | None = None) -> None:
        """From zero to the GPUs' peak bandwidth (a figure is busy % × peak, or DRAM
        active % × peak where measured, so it stays under it), with room above its line
        for the line's label; where no peak is known, to what the data need, at least
        1 GB/s. Without arguments: fit the last figures again (the plot changed height)."""
        if high is not None:
            self._bw_line = peak is not None and not (np.isfinite(high) and high > peak)
            if self._bw_line:
                self._bw_top = peak
            else:
                shown = self._bw_range.fit(0.0, high if np.isfinite(high) else 0.0)
                if shown is not None:
                    self._bw_top = shown[1]
        if self._bw_top is not None:
            line, half = label_px()
            view_px = self.bandwidth.getViewBox().height()
            roomy = self.peak_marks.fit_labels(view_px, line)
            above = line if self._bw_line and roomy else half
            self._set_y(self.bandwidth, *zero_based_range(self._bw_top, view_px, above, half))

    def fit_memory(self, high: float | None = None) -> None:
        """From zero to the largest capacity, with room above its line for the line's
        label; without a capacity (every GPU lost), to what the data need. Without
        arguments: fit the last figures again (the plot changed height)."""
        top = self.mem_top
        if top is None and high is not None:
            shown = self._mem_range.fit(0.0, high if np.isfinite(high) else 0.0)
            top = self._mem_data_top = shown[1] if shown is not None else self._mem_data_top
        elif top is None:
            top = self._mem_data_top
        if top is not None:
            line, half = label_px()
            view_px = self.memory.getViewBox().height()
            roomy = self.capacity_marks.fit_labels(view_px, line)
            above = line if self.mem_top is not None and roomy else half
            self._set_y(self.memory, *zero_based_range(top, view_px, above, half))

    def update_capacities(self, capacities: dict[float, int], scale: int) -> None:
        """A dashed line at each capacity that reads differently: two GPUs a few MiB
        apart (an RTX 4090 and a 3090, both "24.0 GiB") share one line."""
        label = lambda total: f"capacity {format_bytes(total, self.units)}"  # noqa: E731
        self.capacity_marks.update({total: total / scale
                                    for total in one_per_label(capacities, label)}, label)
        self.mem_top = max(capacities) / scale if capacities else None

    def update_peaks(self, peaks: set[float], scale: float) -> None:
        """A dashed line at each distinct peak bandwidth shown, like the capacity line."""
        label = lambda peak: f"peak {format_bandwidth(peak)}"  # noqa: E731
        self.peak_marks.update({peak: peak / scale for peak in one_per_label(peaks, label)},
                               label)
