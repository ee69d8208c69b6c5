"""Tick placement of the time axis: plain arithmetic, checked against the clock."""

from __future__ import annotations

import time

import pytest

from gpuwatch.ui.widgets.time_ticks import label_format, multiples, steps, tick_label, time_ticks


def label_px(fmt: str) -> float:
    return {"%H:%M:%S": 80.0, "%H:%M": 55.0, "%a %d": 60.0}[fmt]


@pytest.mark.parametrize(("span_s", "length_px", "major", "minor"), [
    (60, 560, 10, 5),          # 1 min window: every 10 s, grid every 5 s
    (600, 560, 60, 30),        # 10 min: every minute
    (3600, 560, 600, 300),     # 1 h: every 10 min
    (86400, 560, 10800, 3600),  # 24 h: every 3 h, grid every hour
    (600, 150, 300, 60),       # a narrow plot takes bigger steps
])
def test_steps_leave_room_for_labels(span_s, length_px, major, minor) -> None:
    got_major, got_minor = steps(span_s, length_px, label_px)
    assert (got_major, got_minor) == (major, minor)
    assert got_major * length_px / span_s >= label_px(label_format(got_major))


def test_multiples_are_whole_steps_of_local_time() -> None:
    offset = 3600.0                                  # a zone one hour east of UTC
    values = multiples(1000.0, 1300.0, 60.0, offset)
    assert values == [1020.0 + 60 * k for k in range(5)]
    assert all((v + offset) % 60 == 0 for v in values)
    assert multiples(10.0, 11.0, 60.0, 0.0) == []


def test_time_ticks_levels_do_not_repeat_values() -> None:
    now = time.time()
    levels = time_ticks(now - 600, now, 560, label_px)
    (major, major_values), (minor, minor_values) = levels
    assert (major, minor) == (60, 30)
    assert not set(major_values) & set(minor_values)
    assert all(now - 600 <= v <= now for v in major_values + minor_values)
    assert 9 <= len(major_values) <= 11
    assert time_ticks(now, now, 560, label_px) == []        # an empty range: no ticks


def test_labels_are_local_clock_times() -> None:
    t = time.mktime((2026, 12, 2, 21, 13, 0, 0, 0, -1))
    assert tick_label(t, 60) == "21:13"
    assert tick_label(t + 10, 10) == "21:13:10"
    midnight = time.mktime((2026, 12, 3, 0, 0, 0, 0, 0, -1))
    assert tick_label(midnight, 3600) == time.strftime("%a %d", time.localtime(midnight))
    assert tick_label(midnight, 60) == "00:00"


def _ops(axis) -> list[tuple]:
    """The axis's drawing, comparable: fills and texts with their places."""
    out = []
    for op in axis._ops:
        if op[0] == "fill":
            out.append(("fill", op[1].getRect(), op[2].rgba()))
        elif op[0] == "text":
            out.append(("text", op[1].x(), op[1].y(), op[2].text()))
    return out


@pytest.mark.parametrize("window_s", [60, 600, 3600, 86400])
def test_an_axis_moved_sample_by_sample_draws_what_a_fresh_one_does(qtbot, window_s) -> None:
    """Labels are kept per tick as the window moves; what is drawn must not depend on
    where the axis was before."""
    import pyqtgraph as pg
    from PySide6.QtGui import QColor

    from gpuwatch.ui.widgets.axes import fast_axes

    def plot(x0: float) -> pg.PlotWidget:
        widget = pg.PlotWidget(axisItems=fast_axes())
        qtbot.addWidget(widget)
        widget.showGrid(x=True, y=True, alpha=0.3)
        widget.getPlotItem().getAxis("bottom").set_background(QColor("#ffffff"))
        widget.resize(700, 250)
        widget.setXRange(x0, x0 + window_s, padding=0)
        widget.show()
        widget.grab()
        return widget

    start = time.mktime((2026, 12, 2, 23, 50, 0, 0, 0, -1))
    step = window_s / 400
    moving = plot(start)
    for k in range(1, 40):
        moving.setXRange(start + 7 * k * step, start + 7 * k * step + window_s, padding=0)
        moving.grab()
    fresh = plot(start + 7 * 39 * step)
    axis, again = (p.getPlotItem().getAxis("bottom") for p in (moving, fresh))
    assert axis.label_texts() and _ops(axis) == _ops(again)


def test_an_axis_moving_all_day_keeps_only_the_labels_it_shows(qtbot) -> None:
    """A tick that left the window is forgotten: a live axis moving for hours holds the
    dozen labels in view, not every label it ever drew."""
    import pyqtgraph as pg

    from gpuwatch.ui.widgets.axes import fast_axes

    widget = pg.PlotWidget(axisItems=fast_axes())
    qtbot.addWidget(widget)
    widget.resize(700, 250)
    widget.show()
    axis = widget.getPlotItem().getAxis("bottom")
    start = time.mktime((2026, 12, 2, 8, 0, 0, 0, 0, -1))
    for k in range(0, 6 * 3600, 60):              # 6 h of a 10 min window, a minute a step
        widget.setXRange(start + k, start + k + 600, padding=0)
        widget.grab()
    assert 0 < len(axis._labels) <= 2 * len(axis.label_texts()) + 4
    assert len(axis._texts) <= 4 and len(axis._measurer._rects) <= 8   # nothing per label
