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
