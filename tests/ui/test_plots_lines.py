"""Reference lines (capacity, peak bandwidth): drawn where their value is, placed again
when the value range or the plot's size changes, left alone when the view moves in time."""

from __future__ import annotations

import pyqtgraph as pg
import pytest
from PySide6.QtCore import QPointF

from gpuwatch.ui.widgets.plot_lines import MarkLines
from gpuwatch.ui.widgets.plot_parts import TimePlot


@pytest.fixture
def plot(qtbot) -> pg.PlotWidget:
    widget = TimePlot("Memory used per GPU", "GiB")
    qtbot.addWidget(widget)
    widget.resize(600, 300)
    widget.setXRange(1000, 1600, padding=0)
    widget.setYRange(0, 100, padding=0)
    with qtbot.waitExposed(widget):
        widget.show()
    return widget


def test_a_line_sits_at_its_value_with_its_label_above_its_left_end(plot) -> None:
    marks = MarkLines(plot)
    marks.update({80.0: 80.0}, lambda key: f"capacity {key:.1f} GiB")
    (line,) = marks.lines.values()
    vb = plot.getViewBox()
    at = vb.mapViewToScene(QPointF(1300, 80.0))
    assert line.mapToScene(line.boundingRect().center()).y() == pytest.approx(at.y(), abs=0.5)
    label = line.label.sceneBoundingRect()
    assert label.bottom() == pytest.approx(at.y(), abs=1.0)
    assert vb.sceneBoundingRect().left() <= label.left() < vb.sceneBoundingRect().center().x()
    assert line.toolTip() == line.label.toPlainText() == "capacity 80.0 GiB"
    assert line.value() == 80.0


def test_a_line_moves_with_the_value_range_not_with_time(plot, qtbot) -> None:
    marks = MarkLines(plot)
    marks.update({80.0: 80.0}, lambda key: "capacity")
    (line,) = marks.lines.values()
    placed = []
    real = type(line).prepareGeometryChange
    line.prepareGeometryChange = lambda: placed.append(1) or real(line)
    plot.setXRange(1010, 1610, padding=0)           # a live view moving in time
    plot.grab()
    assert placed == []
    plot.setYRange(0, 200, padding=0)
    plot.grab()
    vb = plot.getViewBox()
    assert placed and line.mapToScene(line.boundingRect().center()).y() == pytest.approx(
        vb.mapViewToScene(QPointF(1300, 80.0)).y(), abs=0.5)
    plot.resize(600, 400)
    qtbot.waitUntil(lambda: abs(line.mapToScene(line.boundingRect().center()).y()
                                - vb.mapViewToScene(QPointF(1300, 80.0)).y()) <= 0.5)


def test_dropped_lines_leave_the_plot(plot) -> None:
    marks = MarkLines(plot)
    marks.update({1.0: 1.0, 2.0: 2.0}, str)
    lines = list(marks.lines.values())
    marks.update({2.0: 2.0}, str)
    assert lines[0].scene() is None and lines[1].scene() is plot.scene()
    marks.drop()
    assert lines[1].scene() is None and not marks.lines
    plot.setYRange(0, 50, padding=0)                # no line left listening


def test_a_line_moved_to_another_value_is_drawn_there(plot) -> None:
    marks = MarkLines(plot)
    marks.update({1.0: 80.0}, lambda key: "predicted peak")
    (line,) = marks.lines.values()
    line.set_value(40.0)
    vb = plot.getViewBox()
    assert line.value() == 40.0
    assert line.mapToScene(line.boundingRect().center()).y() == pytest.approx(
        vb.mapViewToScene(QPointF(1300, 40.0)).y(), abs=0.5)
    assert line.label.sceneBoundingRect().bottom() == pytest.approx(
        vb.mapViewToScene(QPointF(1300, 40.0)).y(), abs=1.0)


def test_values_that_read_the_same_share_one_line() -> None:
    from gpuwatch.ui.widgets.plots import one_per_label

    gib = 1024**3
    label = lambda total: f"capacity {total / gib:.1f} GiB"   # noqa: E731
    kept = one_per_label([24 * gib - 12 * 2**20, 24 * gib, 80 * gib], label)
    assert sorted(kept) == [24 * gib, 80 * gib]
    assert one_per_label([], label) == []


def test_two_gpus_of_the_same_capacity_have_one_capacity_line(make_window, scenario) -> None:
    from tests.ui.conftest import feed

    window = make_window()
    feed(window, scenario("workstation"), [600])      # an RTX 4090 and a 3090: 24 GiB each
    lines = window.plots._capacity_lines
    totals = {g.memory.total_bytes for g in window.history.latest.gpus}
    assert len(totals) == 2, "the scenario's two capacities differ by a few MiB"
    assert [line.label.toPlainText() for line in lines.values()] == ["capacity 24.0 GiB"]
