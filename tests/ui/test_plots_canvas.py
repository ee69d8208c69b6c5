"""The time plots' curves as scrolling images: after samples have scrolled them, they
show exactly what drawing everything anew shows (no tolerance), also across a resize,
a change of range, units, theme, highlight and window; and a new sample draws only
the tiles it reaches."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPointF
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QApplication

from gpuwatch.ui.widgets import theme
from gpuwatch.ui.widgets.curve_canvas import TILE, aligned_range
from gpuwatch.ui.widgets.decimate import bucket_band, bucket_minmax
from gpuwatch.ui.widgets.plots import TimePlots
from tests.ui.conftest import feed


def grab(plots: TimePlots) -> tuple[QImage, QImage]:
    sizes = None
    for _ in range(10):     # a flood of samples leaves the layout a few rounds to settle
        QApplication.processEvents()
        now = (plots.memory.size(), plots.bandwidth.size())
        if now == sizes:
            break
        sizes = now
    return tuple(p.grab().toImage() for p in (plots.memory, plots.bandwidth))  # type: ignore


def fresh(plots: TimePlots) -> tuple[QImage, QImage]:
    for canvas in plots.canvases:
        canvas.invalidate()
    return grab(plots)


def assert_same(scrolled: tuple[QImage, QImage], redrawn: tuple[QImage, QImage]) -> None:
    for a, b in zip(scrolled, redrawn, strict=True):
        assert a.size() == b.size()
        if a != b:
            x = np.frombuffer(a.constBits(), np.uint8).reshape(a.height(), -1)
            y = np.frombuffer(b.constBits(), np.uint8).reshape(b.height(), -1)
            rows, cols = np.nonzero(x != y)
            pytest.fail(f"{len(rows)} bytes differ, first at row {rows[0]}, "
                        f"x {cols[0] // 4}")


@pytest.fixture
def plots(make_window, scenario, qtbot):
    window = make_window()
    window.resize(1024, 640)
    with qtbot.waitExposed(window):
        window.show()
    backend = scenario("multi-gpu-ddp")
    feed(window, backend, range(0, 700))
    window.backend_for_test = backend
    return window


def scroll(window, start: int, count: int) -> list[int]:
    """Feed ``count`` samples, painting after each; the tiles each paint rendered."""
    plots = window.plots
    drawn = []
    for t in range(start, start + count):
        before = sum(c.tiles_rendered for c in plots.canvases)
        feed(window, window.backend_for_test, [t])
        grab(plots)
        drawn.append(sum(c.tiles_rendered for c in plots.canvases) - before)
    return drawn


@pytest.mark.parametrize("window_s", [60, 600, 3600])
def test_scrolled_curves_equal_a_full_redraw(plots, window_s) -> None:
    plots.plots.set_window(window_s)
    grab(plots.plots)
    drawn = scroll(plots, 700, 25)
    assert_same(grab(plots.plots), fresh(plots.plots))
    # each sample redrew a tile or two per plot, not the ~10 the plot is made of
    shown = plots.plots.memory.getViewBox().width() / TILE
    assert max(drawn) <= 6 < 2 * shown


def test_scrolled_curves_follow_resize_range_units_theme_and_highlight(plots) -> None:
    window = plots
    p = window.plots
    grab(p)
    scroll(window, 700, 5)
    window.resize(1180, 700)                   # resize
    scroll(window, 705, 5)
    assert_same(grab(p), fresh(p))
    p.set_units("si")                          # the y scale changes
    scroll(window, 710, 3)
    assert_same(grab(p), fresh(p))
    p.scales.fit_memory(None)
    p.memory.setYRange(0, 200, padding=0)      # any other y range
    assert_same(grab(p), fresh(p))
    p.set_highlight(3)                         # a wide line on top, its band
    scroll(window, 713, 3)
    assert_same(grab(p), fresh(p))
    p.set_highlight(None)
    app = QApplication.instance()
    theme.apply(app, "dark")
    try:
        p.restyle()
        scroll(window, 716, 3)
        assert_same(grab(p), fresh(p))
    finally:
        theme.apply(app, "light")
        p.restyle()


def test_a_paused_plot_dragged_by_whole_pixels_keeps_its_tiles(plots) -> None:
    p = plots.plots
    p.set_live(False)
    grab(p)
    grab(p)                       # the layout settled (the legend came with the samples)
    shown = p.time_plot                   # bandwidth's while memory is rows (many GPUs)
    vb = shown.getViewBox()
    (x0, x1), _ = vb.viewRange()
    per_px = (x1 - x0) / vb.width()
    before = sum(c.tiles_rendered for c in p.canvases)
    shown.setXRange(x0 - 5 * per_px, x1 - 5 * per_px, padding=0)
    images = grab(p)
    assert sum(c.tiles_rendered for c in p.canvases) - before <= 4   # the new columns
    assert_same(images, fresh(p))


def test_the_canvas_draws_a_line_where_its_value_is(make_window, scenario, qtbot) -> None:
    window = make_window()
    window.resize(1280, 800)
    with qtbot.waitExposed(window):
        window.show()
    snap = feed(window, scenario("workstation"), range(300, 400))
    window.focus_gpu(1)                               # GPU 1 alone
    image = grab(window.plots)[0]
    ring = window.history.gpu(1)
    assert ring is not None
    when, used = (ring.column(name, last=31)[0] for name in ("timestamp_s", "used_bytes"))
    assert snap.timestamp_s - when == 30
    vb = window.plots.memory.getViewBox()
    at = window.plots.memory.mapFromScene(vb.mapViewToScene(QPointF(when, used / 2**30)))
    color = theme.gpu_color(1)

    def gpu_colored(x: int, y: int) -> bool:
        c = QColor(image.pixel(x, y))       # antialiased: paler, but of its hue
        return c.hsvSaturation() > 60 and abs(c.hsvHue() - color.hsvHue()) < 20

    # its dashes leave gaps: look along a few columns
    assert any(gpu_colored(x, y) for x in range(at.x() - 6, at.x() + 6)
               for y in range(at.y() - 4, at.y() + 5))
    assert not any(gpu_colored(x, y) for x in range(at.x() - 6, at.x() + 6)
                   for y in range(at.y() - 40, at.y() - 20))


def test_an_aligned_window_moves_by_whole_columns() -> None:
    a0, a1 = aligned_range(1_700_000_000.3, 600, 1493)
    _, b1 = aligned_range(1_700_000_001.3, 600, 1493)
    dt = 600 / 1493
    assert a1 - a0 == pytest.approx(600) and a0 <= 1_700_000_000.3 - 600 + dt
    assert (b1 - a1) / dt == pytest.approx(round((b1 - a1) / dt), abs=1e-4)


def test_time_buckets_give_the_same_points_whatever_the_window() -> None:
    rng = np.random.default_rng(1)
    t = np.arange(0, 500, 0.7)
    y = rng.normal(size=len(t))
    y[100:130] = np.nan
    width = 3.3
    whole = dict(zip(*bucket_minmax(t, y, width), strict=True))
    edge = np.searchsorted(t, 40 * width)      # a part starting on a bucket's edge
    part = dict(zip(*bucket_minmax(t[edge:], y[edge:], width), strict=True))
    for x, v in part.items():
        assert x in whole and (v == whole[x] or (np.isnan(v) and np.isnan(whole[x])))
    x2, y2 = bucket_minmax(np.arange(8.0), np.array([1, 5, 2, 3, 9, 0, 4, 4.0]), 4.0)
    assert list(x2) == [0, 3, 4, 7] and list(y2) == [1, 5, 9, 0]      # in time order
    _, mean, low, high = bucket_band(t, y, width)
    k = 5
    inside = (t >= k * width) & (t < (k + 1) * width)
    assert mean[k] == pytest.approx(y[inside].mean())
    assert (low[k], high[k]) == (y[inside].min(), y[inside].max())
