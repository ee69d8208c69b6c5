"""Memory as a row per GPU once lines would merge: eight ranks at one level, the
endangered one outlined and in view at 1024×640, rows on the bandwidth plot's time axis,
one GPU alone back to lines; and the column peaks the rows are made of."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication

from gpuwatch.ui.widgets import theme
from gpuwatch.ui.widgets.memory_strips import MIN_ROW, column_peaks
from tests.ui.conftest import feed

DDP_RANK_OOM = str(Path(__file__).parent / "scenarios" / "ddp-rank-oom.toml")


def shown(qtbot, window, size) -> None:
    window.resize(*size)
    with qtbot.waitExposed(window):
        window.show()
    qtbot.wait(30)
    QApplication.processEvents()


def test_eight_gpus_are_rows_with_the_endangered_one_outlined_at_1024x640(
        make_window, scenario, qtbot) -> None:
    window = make_window()
    shown(qtbot, window, (1024, 640))
    feed(window, scenario(DDP_RANK_OOM), range(700, 1000, 2))
    QApplication.processEvents()
    plots = window.plots
    strips = plots.strips
    assert plots.strips_shown and strips.isVisible() and not plots.memory.isVisible()
    assert strips.indices == tuple(range(8))
    assert plots.alert == 6 and strips.alert == 6
    row = strips.row_rect(6)
    # the row is whole inside the visible part of the widget, and tall enough to read
    assert strips.visibleRegion().boundingRect().contains(row)
    assert row.height() >= MIN_ROW
    rows = [strips.row_rect(i) for i in range(8)]
    assert all(a.bottom() < b.top() for a, b in itertools.pairwise(rows))   # none overlaps
    image = strips.grab().toImage()
    critical = QColor(theme.colors().critical)
    outline = [image.pixelColor(x, row.top() - 1) for x in range(row.left(), row.right(), 7)]
    assert all(c == critical for c in outline)                # the endangered GPU's frame
    other = strips.row_rect(2)
    assert image.pixelColor(other.center().x(), other.top() - 1) != critical
    # its columns read amber or red: fuller than the warning threshold at the end
    newest = image.pixelColor(row.right() - 60, row.bottom() - 1)
    assert newest != image.pixelColor(other.right() - 60, other.bottom() - 1)
    strips.set_alert(6, critical=False)            # a warning: the frame is amber
    image = strips.grab().toImage()
    assert image.pixelColor(row.center().x(), row.top() - 1) == QColor(theme.colors().warning)


def test_rows_share_the_bandwidth_plots_time_axis(make_window, scenario, qtbot) -> None:
    window = make_window()
    shown(qtbot, window, (1500, 950))
    feed(window, scenario(DDP_RANK_OOM), range(300, 360))
    QApplication.processEvents()
    plots = window.plots
    view = plots.bandwidth.getViewBox()
    rect = view.sceneBoundingRect()
    row = plots.strips.row_rect(0)
    left = plots.bandwidth.mapTo(plots, plots.bandwidth.rect().topLeft()).x() + rect.left()
    assert abs(plots.strips.mapTo(plots, row.topLeft()).x() - left) <= 1
    assert abs(row.width() - rect.width()) <= 1
    assert plots.strips.x_range == tuple(view.viewRange()[0])


def test_one_gpu_alone_is_a_line_again_and_a_row_click_asks_for_it(make_window, scenario,
                                                                    qtbot) -> None:
    window = make_window()
    shown(qtbot, window, (1280, 800))
    feed(window, scenario(DDP_RANK_OOM), range(300, 330))
    asked: list[int] = []
    window.plots.focus_requested.connect(asked.append)
    strips = window.plots.strips
    from PySide6.QtCore import Qt
    qtbot.mouseClick(strips, Qt.MouseButton.LeftButton, pos=strips.row_rect(3).center())
    assert asked == [3]
    assert window.gpu_focus.index == 3
    QApplication.processEvents()
    plots = window.plots
    assert not plots.strips_shown and plots.memory.isVisible() and not strips.isVisible()
    assert [i for i, c in plots._mem_curves.items() if c.isVisible()] == [3]
    window.focus_gpu(None)
    QApplication.processEvents()
    assert plots.strips_shown and strips.isVisible()


def test_a_row_is_made_again_only_when_its_data_or_size_change(make_window, scenario,
                                                               qtbot) -> None:
    window = make_window()
    shown(qtbot, window, (1280, 800))
    backend = scenario(DDP_RANK_OOM)
    feed(window, backend, range(300, 330))
    strips = window.plots.strips
    strips.repaint()
    made = strips.images_made
    strips.repaint()
    strips.set_highlight(2)           # an outline, not new pixels
    strips.repaint()
    assert strips.images_made == made
    feed(window, backend, [331])
    strips.repaint()
    assert strips.images_made == made + 8


def test_measured_bandwidth_is_plotted_where_the_gpu_measures_it(make_window, scenario,
                                                                 qtbot) -> None:
    window = make_window()
    shown(qtbot, window, (1280, 800))
    snap = feed(window, scenario(DDP_RANK_OOM), range(300, 330))   # H100s: GPM
    plots = window.plots
    assert plots.measured == tuple(range(8))
    assert all(s.column == "measured_bandwidth_bytes_per_s" for s in plots._bw_curves.values())
    assert plots.bandwidth.getPlotItem().titleLabel.text.startswith("Measured")
    g = snap.gpu(0)
    assert g is not None and g.measured_bandwidth_bytes_per_s is not None
    _, y = plots._bw_curves[0].getData()
    assert abs(y[-1] - g.measured_bandwidth_bytes_per_s / 1e9) < 1e-3 * y[-1] + 1e-6


def test_estimated_bandwidth_is_plotted_where_there_is_no_measurement(make_window, scenario,
                                                                      qtbot) -> None:
    window = make_window()
    shown(qtbot, window, (1280, 800))
    feed(window, scenario("workstation"), range(300, 330))          # RTX 4090s: no GPM
    plots = window.plots
    assert plots.measured == ()
    assert all(s.column == "estimated_bandwidth_bytes_per_s"
               for s in plots._bw_curves.values())
    assert plots.bandwidth.getPlotItem().titleLabel.text.startswith("Estimated")


times = st.lists(st.floats(0, 100, allow_nan=False), min_size=0, max_size=60).map(sorted)


@settings(max_examples=60, deadline=None)
@given(t=times, columns=st.integers(1, 50), data=st.data())
def test_column_peaks_keep_every_columns_largest_known_share(t, columns, data) -> None:
    n = len(t)
    share = np.array(data.draw(st.lists(st.one_of(st.floats(0, 1), st.just(np.nan)),
                                        min_size=n, max_size=n)), dtype=float)
    t = np.array(t, dtype=float)
    x0, x1 = 10.0, 90.0
    peaks = column_peaks(t, share, x0, x1, columns)
    assert peaks.shape == (columns,)
    col = np.floor((t - x0) * columns / (x1 - x0)).astype(int)
    for c in range(columns):
        mine = share[(col == c) & np.isfinite(share)]
        if len(mine):                                   # a column with known samples
            assert peaks[c] == mine.max()
    finite = peaks[np.isfinite(peaks)]
    known = share[np.isfinite(share)]
    if len(finite):                                     # nothing made up
        assert set(finite.tolist()) <= set(known.tolist())
    inside = (col >= 0) & (col < columns)
    if inside.any():
        assert np.isnan(peaks[col[inside].max() + 1:]).all()   # nothing after the newest
    else:
        assert np.isnan(peaks).all()
