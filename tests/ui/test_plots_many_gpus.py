"""The time plots with many GPUs: lines told apart by dash as well as colour, a legend that
covers no curve, a highlighted line, one GPU alone, bandwidth against its peak (as a mean
and its band at long windows), the minutes a GPU was lost, and every text inside its
widget at 1024×640."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QColor, QFontMetrics
from PySide6.QtWidgets import QAbstractButton, QApplication, QLabel

from gpuwatch.ui.widgets import theme
from gpuwatch.ui.widgets.decimate import band_decimate
from gpuwatch.ui.widgets.plot_items import (
    DASHES,
    HIGHLIGHT_WIDTH,
    finite_runs,
    gpu_pen,
    lost_spans,
    nearest_line,
)
from gpuwatch.ui.widgets.plots import HOVER_PX
from tests.ui.conftest import feed


def shown(qtbot, window, size=(1024, 640)) -> None:
    window.resize(*size)
    with qtbot.waitExposed(window):
        window.show()
    qtbot.wait(30)
    QApplication.processEvents()


def test_every_gpu_line_has_its_own_dash_pattern() -> None:
    patterns = [tuple(gpu_pen(i).dashPattern()) if DASHES[i] else () for i in range(8)]
    assert len(set(patterns)) == 8
    assert [p for p in patterns if not p] == [()]          # one solid line, GPU 0
    for a, b in itertools.combinations(range(8), 2):
        assert gpu_pen(a).color() != gpu_pen(b).color()
    # a wide (highlighted) line keeps its dashes as long in pixels
    wide = gpu_pen(1, HIGHLIGHT_WIDTH)
    assert [d * HIGHLIGHT_WIDTH for d in wide.dashPattern()] == pytest.approx(list(DASHES[1]))


def test_the_legend_sits_above_the_plots_not_over_their_curves(make_window, scenario,
                                                                qtbot) -> None:
    window = make_window()
    shown(qtbot, window)
    feed(window, scenario("multi-gpu-ddp"), range(300, 330))
    QApplication.processEvents()
    plots = window.plots
    assert plots.memory.getPlotItem().legend is None
    legend = plots.legend
    assert legend.isVisible() and legend.indices == tuple(range(8))
    top = plots.strips if plots.strips_shown else plots.memory     # eight GPUs: rows
    top_of_plot = top.mapTo(plots, top.rect().topLeft()).y()
    assert legend.geometry().bottom() < top_of_plot
    for _, rect in legend.entries():                         # every entry whole
        assert QRectF(legend.rect()).adjusted(-0.5, -0.5, 0.5, 0.5).contains(rect)


def test_hovering_a_line_highlights_that_gpu_in_both_plots(make_window, scenario,
                                                          qtbot) -> None:
    window = make_window()
    shown(qtbot, window, (1280, 800))
    snap = feed(window, scenario("workstation"), range(300, 360))
    QApplication.processEvents()
    plots = window.plots
    vb = plots.memory.getViewBox()
    gpu1 = snap.gpu(1)
    assert gpu1 is not None and gpu1.memory.used_bytes is not None
    at = QPointF(snap.timestamp_s - 20, gpu1.memory.used_bytes / 2**30)
    assert nearest_line(vb, plots._mem_curves, at, HOVER_PX) == 1
    plots._hover(plots.memory, vb.mapViewToScene(at))
    assert plots.highlight == 1 and plots.legend.highlight == 1
    for curves in (plots._mem_curves, plots._bw_curves):
        assert curves[1].opts["pen"].widthF() == HIGHLIGHT_WIDTH
        assert curves[0].opts["pen"].widthF() < HIGHLIGHT_WIDTH
    far = QPointF(at.x(), at.y() + 200)                   # nowhere near a line
    assert nearest_line(vb, plots._mem_curves, far, HOVER_PX) is None
    plots.memory.left_plot.emit()
    assert plots.highlight is None


def test_focusing_a_gpu_shows_it_alone_in_plots_and_table(make_window, scenario, qtbot) -> None:
    window = make_window()
    shown(qtbot, window, (1280, 800))
    snap = feed(window, scenario("workstation"), range(300, 320))
    on_1 = {p.pid for p in snap.processes if p.gpu_index == 1}
    assert on_1 and len(on_1) < len(snap.processes)
    window.plots.legend.clicked.emit(1)                   # a click on the legend's GPU 1
    assert window.gpu_focus.index == 1
    assert [i for i, c in window.plots._mem_curves.items() if c.isVisible()] == [1]
    assert [i for i, c in window.plots._bw_curves.items() if c.isVisible()] == [1]
    model = window.processes.model
    assert {key[1] for key in model.live_keys} == on_1
    assert "GPU 1 only" in window.processes.count.text()
    bar = window.gpu_focus.bar
    assert bar.isVisible() and "GPU 1 only" in bar.label.text()
    assert "GPU 1 only" in window.plots.memory.getPlotItem().titleLabel.text
    feed(window, scenario("workstation"), [321])          # stays so as samples come
    assert {key[1] for key in model.live_keys} == on_1
    bar.show_all.click()
    assert window.gpu_focus.index is None and not bar.isVisible()
    assert all(c.isVisible() for c in window.plots._mem_curves.values())
    assert len(model.live_keys) == len(snap.processes)
    window.focus_gpu(0)
    window.plots.legend.clicked.emit(0)                   # the same again: all
    assert window.gpu_focus.index is None
    window.focus_gpu(-1)
    assert window.gpu_focus.index is None


def test_bandwidth_runs_from_zero_to_the_peak_with_a_peak_line(make_window, scenario,
                                                               qtbot) -> None:
    window = make_window()
    shown(qtbot, window, (1280, 800))
    snap = feed(window, scenario("bandwidth"), range(0, 120))
    peak = snap.gpus[0].peak_bandwidth_bytes_per_s / 1e9
    low, high = window.plots.bandwidth.getViewBox().viewRange()[1]
    assert low < 0 < peak < high < 1.4 * peak
    (line,) = window.plots._peak_lines.values()
    assert line.value() == pytest.approx(peak)
    assert line.label.toPlainText() == f"peak {peak:,.0f} GB/s"
    vb = window.plots.bandwidth.getViewBox()
    assert line.label.isVisible()
    assert vb.sceneBoundingRect().adjusted(-1, -1, 1, 1).contains(line.label.sceneBoundingRect())


def test_long_windows_draw_bandwidth_as_a_mean_with_its_band(make_window, scenario,
                                                             qtbot) -> None:
    window = make_window()
    shown(qtbot, window, (1280, 800))
    backend = scenario("bandwidth")
    window.plots.set_window(60)
    feed(window, backend, range(0, 700))
    plots = window.plots
    assert not plots.band_mode
    assert not banded(plots)
    x60, _ = plots._bw_curves[0].getData()
    plots.set_window(600)
    assert plots.band_mode
    assert banded(plots) == [0]                # one GPU: its band is drawn
    x, mean = plots._bw_curves[0].getData()
    assert len(x) <= plots.memory.getViewBox().width() / 2 + 1  # one point per 2 px
    raw = window.history.gpu(0).column("estimated_bandwidth_bytes_per_s", last=600) / 1e9
    assert np.nanmin(raw) - 1e-6 <= np.nanmin(mean) <= np.nanmax(mean) <= np.nanmax(raw) + 1e-6
    assert len(x60) > 0
    # drawn: the band tints the plot in the GPU's hue (compared with the plot without it)
    with_band = plots.bandwidth.grab().toImage()
    plots.canvases[1].under.set_layers([])
    without = plots.bandwidth.grab().toImage()
    hue = QColor(theme.gpu_color(0)).hsvHue()
    changed = [QColor(with_band.pixel(x, y)) for y in range(with_band.height())
               for x in range(with_band.width()) if with_band.pixel(x, y) != without.pixel(x, y)]
    assert len(changed) > 100
    assert all(abs(c.hsvHue() - hue) < 25 for c in changed if c.hsvSaturation() > 20)


def test_band_decimation_keeps_mean_min_and_max() -> None:
    x = np.arange(1000, dtype=float)
    y = np.sin(x) + x / 100
    y[500:520] = np.nan
    mid, mean, low, high = band_decimate(x, y, 100)
    assert len(mid) == 100
    assert mean[0] == pytest.approx(np.mean(y[:10]))
    assert low[0] == pytest.approx(np.min(y[:10])) and high[0] == pytest.approx(np.max(y[:10]))
    assert np.isnan(mean[50]) and np.isnan(low[51]) and np.isfinite(mean[52])
    short = band_decimate(x[:50], y[:50], 100)
    assert len(short[0]) == 50 and np.array_equal(short[2], short[3])


def test_a_lost_gpu_is_shaded_for_the_time_it_was_lost(make_window, scenario, qtbot) -> None:
    window = make_window()
    shown(qtbot, window, (1280, 800))
    backend = scenario("faults")
    states = {}
    for t in range(0, 160):
        snap = feed(window, backend, [t])
        states[snap.timestamp_s] = snap.gpus[1].state.value
    lost_times = sorted(ts for ts, s in states.items() if s == "lost")
    assert lost_times
    for item in window.plots._spans:
        spans = [s for s in item.spans if s[2] == "GPU 1 lost"]
        assert len(spans) == 1
        start, end, _ = spans[0]
        assert start == pytest.approx(lost_times[0])
        assert lost_times[-1] < end <= lost_times[-1] + 1.01      # to the next sample
        assert not [s for s in item.spans if s[2] == "GPU 0 lost"]


def test_lost_spans_need_every_figure_missing() -> None:
    t = np.arange(6, dtype=float)
    nan = np.nan
    total = np.array([1, nan, nan, 1, nan, nan])
    used = np.array([1, nan, nan, 1, nan, nan])
    bandwidth = np.array([1, nan, nan, 1, 5, nan])   # at 4: a read error, not lost
    assert lost_spans(t, total, bandwidth, used) == [(1.0, 3.0), (5.0, 5.0)]
    assert finite_runs(np.array([True, True, False, True])) == [(0, 2), (3, 4)]


def _texts_fit(widget) -> list[str]:
    """Labels and buttons under ``widget`` whose one-line text is wider than they are."""
    bad = []
    for w in widget.findChildren(QLabel) + widget.findChildren(QAbstractButton):
        if not w.isVisible() or (isinstance(w, QLabel) and (w.wordWrap() or
                                                           w.textFormat() != 0)):
            continue
        text = w.text()
        if not text or "<" in text:
            continue
        need = QFontMetrics(w.font()).horizontalAdvance(text)
        room = w.contentsRect().width()
        if isinstance(w, QAbstractButton):
            room -= 8      # the style's margins
        if need > room + 1:
            bad.append(f"{type(w).__name__} {text!r}: {need} > {room}")
    return bad


def test_every_text_of_the_plots_fits_at_1024x640_with_8_gpus(make_window, scenario,
                                                              qtbot) -> None:
    window = make_window()
    shown(qtbot, window)
    backend = scenario("multi-gpu-ddp")
    feed(window, backend, range(280, 300))
    window.plots.set_live(False)                   # the longest state text
    window.focus_gpu(3)                            # the longest titles
    QApplication.processEvents()
    plots = window.plots
    assert _texts_fit(plots) == []
    for plot in (plots.memory, plots.bandwidth):
        item = plot.getPlotItem()
        scene = QRectF(plot.viewport().rect())
        title = item.titleLabel.item
        assert scene.contains(title.sceneBoundingRect()), title.toPlainText()
        vb = plot.getViewBox().sceneBoundingRect().adjusted(-1, -1, 1, 1)
        lines = [*plots._capacity_lines.values(), *plots._peak_lines.values()]
        for line in lines:
            if line.scene() is plot.scene() and line.label.isVisible():
                assert vb.contains(line.label.sceneBoundingRect()), line.label.toPlainText()
        for name in ("left", "bottom"):
            axis = item.getAxis(name)
            assert scene.contains(axis.sceneBoundingRect().adjusted(1, 1, -1, -1)), name
    assert _texts_fit(window.gpu_focus.bar) == []
    assert plots._capacity_lines, "the capacity line is drawn"
    for line in [*plots._capacity_lines.values(), *plots._peak_lines.values()]:
        assert line.toolTip() == line.label.toPlainText()    # said, even without room
    legend = plots.legend
    for _, rect in legend.entries():
        assert QRectF(legend.rect()).adjusted(-0.5, -0.5, 0.5, 0.5).contains(rect)


def test_with_many_gpus_only_the_pointed_gpu_has_a_band(make_window, scenario,
                                                         qtbot) -> None:
    window = make_window()
    shown(qtbot, window, (1280, 800))
    window.plots.set_window(600)
    feed(window, scenario("multi-gpu-ddp"), range(300, 1000, 1))
    plots = window.plots
    assert plots.band_mode
    assert not banded(plots)
    plots.set_highlight(5)
    assert banded(plots) == [5]
    plots.set_highlight(None)
    window.focus_gpu(2)
    assert banded(plots) == [2]


def banded(plots) -> list[int]:
    """The GPUs whose bandwidth band the canvas draws (a filled layer of their colour)."""
    bands = [layer for layer in plots.canvases[1].under.layers if layer.brush is not None]
    colors = {theme.gpu_color(i).rgb(): i for i in plots._bw_curves}
    return sorted(colors[layer.brush.color().rgb()] for layer in bands)
