"""A sample repaints the window in one paint pass: the plots join the cards' and the
table's pass instead of each forcing one of its own."""

from __future__ import annotations

from conftest import count_events, feed
from PySide6.QtCore import QEvent


def test_a_sample_that_moves_every_plot_is_painted_in_one_pass(make_window, scenario, qtbot):
    window = make_window()
    window.resize(1400, 900)
    with qtbot.waitExposed(window):
        window.show()
    backend = scenario("workstation")
    feed(window, backend, range(0, 120, 5))
    views = [window.plots.memory, window.plots.bandwidth, window.processes.detail.detail_plot]
    assert all(v.isVisible() for v in views)
    qtbot.wait(100)                               # whatever the start-up left to paint
    passes = count_events(QEvent.Type.UpdateRequest, window)
    paints = count_events(QEvent.Type.Paint, *(v.viewport() for v in views))
    feed(window, backend, [180])                  # a minute on: every plot moves
    qtbot.waitUntil(lambda: all(paints.counts.values()), timeout=3000)
    qtbot.wait(100)
    assert list(paints.counts.values()) == [1, 1, 1]
    assert passes.counts[window] == 1
