"""The hand-painted pieces of the window: plot axes, the process table, text runs."""

from __future__ import annotations

import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QHBoxLayout, QWidget

from gpuwatch.ui.live.process_model import NAME
from gpuwatch.ui.live.process_table import PADDING, SWATCH
from gpuwatch.ui.live.text_lines import Run, TextLines, forget_texts
from gpuwatch.ui.widgets import theme
from gpuwatch.ui.widgets.axes import FastDateAxis, fast_axes
from gpuwatch.ui.widgets.plot_parts import WindowCurve
from gpuwatch.ui.widgets.plot_ranges import StickyRange, bounds


def _plot(qtbot, x0: float, x1: float) -> pg.PlotWidget:
    plot = pg.PlotWidget(axisItems=fast_axes())
    qtbot.addWidget(plot)
    plot.showGrid(x=True, y=True, alpha=0.3)
    plot.plot([x0, x1], [0.0, 1.0])
    plot.setXRange(x0, x1, padding=0)
    plot.resize(900, 300)
    plot.show()
    plot.grab()
    return plot


def _texts(axis) -> list[str]:
    return [op[2].text() for op in axis._ops if op[0] == "text"]


def test_time_axis_labels_are_clock_times_in_range(qtbot) -> None:
    now = time.time()
    plot = _plot(qtbot, now - 600, now)
    axis = plot.getPlotItem().getAxis("bottom")
    assert isinstance(axis, FastDateAxis)
    labels = _texts(axis)
    assert 8 <= len(labels) <= 11
    minutes = {time.strftime("%H:%M", time.localtime(now - 60 * k)) for k in range(11)}
    assert set(labels) <= minutes


def test_axis_is_laid_out_once_until_its_range_moves(qtbot, monkeypatch) -> None:
    now = time.time()
    plot = _plot(qtbot, now - 600, now)
    left = plot.getPlotItem().getAxis("left")
    calls = []
    real = type(left).generateDrawSpecs
    monkeypatch.setattr(type(left), "generateDrawSpecs",
                        lambda self, p: calls.append(self) or real(self, p))
    plot.grab()
    plot.grab()
    assert left not in calls                       # nothing changed: replayed, not redone
    plot.setYRange(0, 5, padding=0)
    plot.grab()
    assert left in calls


def test_grid_lines_are_opaque_and_blended_over_the_background(qtbot) -> None:
    now = time.time()
    plot = _plot(qtbot, now - 600, now)
    axis = plot.getPlotItem().getAxis("bottom")
    axis.set_background(QColor("#ffffff"))
    plot.grab()
    fills = [op[2] for op in axis._ops if op[0] == "fill"]
    assert fills and all(c.alpha() == 255 for c in fills)
    assert any(c != QColor("#ffffff") for c in fills)
    assert axis.zValue() < 0                       # behind the curves, which it no longer cuts


def test_sticky_range_grows_at_once_and_shrinks_only_when_half_empty() -> None:
    r = StickyRange()
    first = r.fit(10.0, 20.0)
    assert first is not None and first[0] < 10 and first[1] > 20
    assert r.fit(11.0, 19.0) is None                 # inside, and fills most of it
    grown = r.fit(10.0, 30.0)
    assert grown is not None and grown[1] > 30
    assert r.fit(15.0, 16.0) is not None            # a tenth of the range: refit
    assert r.fit(float("nan"), 1.0) is None
    assert bounds(np.array([np.nan, 2.0, 5.0]), np.array([-1.0])) == (-1.0, 5.0)


def test_window_curve_reports_its_data_extent(qtbot) -> None:
    curve = WindowCurve()
    curve.setData(np.array([1.0, 2.0, 3.0]), np.array([5.0, np.nan, 7.0]), connect="finite")
    assert curve.dataBounds(0) == (1.0, 3.0)
    assert curve.dataBounds(1) == (5.0, 7.0)
    curve.setData([], [])
    assert curve.dataBounds(0) == (None, None)


def test_table_paints_each_row_with_its_colour_and_selection(make_window, scenario,
                                                             qtbot) -> None:
    window = make_window()
    backend = scenario("workstation", at_s=600)
    window.on_snapshot(backend.sample())
    window.resize(1600, 1000)
    window.show()
    table = window.processes.table
    model = window.processes.model
    key = model.key_at(1)
    window.processes.select(key)
    image = table.viewport().grab().toImage()
    header = table.horizontalHeader()
    x = header.sectionViewportPosition(NAME) + PADDING + SWATCH // 2
    y = table.rowViewportPosition(1) + table.rowHeight(1) // 2
    assert image.pixelColor(x, y) == theme.process_color(key[1])
    y0 = table.rowViewportPosition(0) + table.rowHeight(0) // 2
    assert image.pixelColor(2, y) == table.palette().highlight().color()
    assert image.pixelColor(2, y0) != table.palette().highlight().color()


def test_a_resort_repaints_the_rows_in_their_new_order(make_window, scenario, qtbot) -> None:
    """A re-sort of the same rows is announced without a layout pass; the rows on screen
    must still be repainted, in the new order, with the selection moved along."""
    import dataclasses

    from PySide6.QtCore import QEvent, QObject

    window = make_window()
    snap = scenario("workstation", at_s=600).sample()
    window.on_snapshot(snap)
    window.resize(1600, 1000)
    with qtbot.waitExposed(window):
        window.show()
    table, model = window.processes.table, window.processes.model
    key = model.key_at(model.rowCount() - 1)
    window.processes.select(key)
    qtbot.wait(50)
    painted = []

    class Spy(QObject):
        def eventFilter(self, obj, event) -> bool:
            if event.type() == QEvent.Type.Paint:
                painted.append(event.rect())
            return False

    spy = Spy()
    table.viewport().installEventFilter(spy)
    procs = [p._replace(used_bytes=2**45) if (p.gpu_index, p.pid) == key else p
             for p in snap.processes]
    gpus = tuple(dataclasses.replace(g, processes=tuple(p for p in procs
                                                        if p.gpu_index == g.index))
                 for g in snap.gpus)
    window.on_snapshot(dataclasses.replace(snap, gpus=gpus, timestamp_s=snap.timestamp_s + 1))
    assert model.key_at(0) == key and window.processes.selected_key() == key
    qtbot.waitUntil(lambda: any(r.top() <= table.rowViewportPosition(0) for r in painted))
    table.viewport().removeEventFilter(spy)
    image = table.viewport().grab().toImage()
    header = table.horizontalHeader()
    x = header.sectionViewportPosition(NAME) + PADDING + SWATCH // 2
    y0 = table.rowViewportPosition(0) + table.rowHeight(0) // 2
    assert image.pixelColor(x, y0) == theme.process_color(key[1])
    assert image.pixelColor(2, y0) == table.palette().highlight().color()


def test_table_elides_what_does_not_fit(make_window) -> None:
    window = make_window()
    table = window.processes.table
    static, width, _ = table._static("python train.py " + "--flag " * 40, 120, table.font(),
                                     False)
    assert static.text().endswith("…") and width <= 120
    assert table._static("short", 120, table.font(), False)[0].text() == "short"


class _LayoutRequests(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def eventFilter(self, obj, event) -> bool:
        if event.type() == QEvent.Type.LayoutRequest:
            self.count += 1
        return False


def test_text_lines_ask_for_a_layout_only_when_the_text_outgrows_its_room(qtbot) -> None:
    box = QWidget()
    qtbot.addWidget(box)
    row = QHBoxLayout(box)
    label = TextLines(fit_text=True, align_right=True)
    row.addWidget(label)
    row.addStretch(1)
    label.set_runs([Run("17.8", "#ff0000", bold=True), Run(" / 24.0 GiB used")])
    box.show()
    qtbot.waitUntil(lambda: label.width() >= label.sizeHint().width())
    assert label.text() == "17.8 / 24.0 GiB used"
    qtbot.wait(50)                                   # the first layout settles
    spy = _LayoutRequests()
    box.installEventFilter(spy)
    label.set_runs([Run("9.1", "#ff0000", bold=True), Run(" / 24.0 GiB used")])
    qtbot.wait(20)
    assert spy.count == 0                            # shorter: keeps its room
    label.set_runs([Run("17.8", bold=True), Run(" / 24.0 GiB used, and much more text")])
    qtbot.waitUntil(lambda: spy.count > 0)           # longer: the row makes room


def test_right_aligned_card_figures_get_their_room_from_the_first_sample(make_window, scenario,
                                                                         qtbot) -> None:
    window = make_window()
    window.resize(1600, 1000)
    window.on_snapshot(scenario("faults", at_s=85).sample())    # before it is shown, as
    window.show()                                                # --screenshot does
    card = window.cards.cards[0]
    for label in (card.vitals, card.free):
        assert label.text()
        qtbot.waitUntil(lambda label=label: label.width() >= label.sizeHint().width() > 0)


def test_a_run_drawn_as_plain_text_then_from_its_static_layout_looks_the_same(qtbot) -> None:
    """A new figure is drawn as plain text, one shown again from a laid-out static text:
    the switch must not move or change a pixel of it."""
    forget_texts()                     # none seen yet, by any widget
    label = TextLines(fit_text=True)
    qtbot.addWidget(label)
    label.set_colors(QColor("#1d2330"), QColor("#ffffff"))
    label.set_lines([[Run("7.1 GiB", bold=True), Run("  stays")], [Run("busy 41 %")]])
    with qtbot.waitExposed(label):
        label.show()
    plain = label.grab().toImage()
    assert all(static is None for line in label._placed for _, _, static, _ in line)
    label.set_lines([[Run("7.1 GiB", bold=True), Run("  stays")], [Run("busy 42 %")]])
    assert label._placed[0][0][2] is not None and label._placed[1][0][2] is None
    laid_out = label.grab().toImage()
    step = label._step
    assert laid_out.copy(0, 0, label.width(), step) == plain.copy(0, 0, label.width(), step)
