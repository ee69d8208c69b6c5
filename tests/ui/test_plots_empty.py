"""Empty states and labels of the time plots: a bandwidth that cannot be estimated says
so; labels of reference lines close in value stay apart."""

from __future__ import annotations

from tests.ui.conftest import feed


def _title(window) -> str:
    return window.plots.bandwidth.getPlotItem().titleLabel.text


def test_a_bandwidth_without_a_known_peak_says_so(make_window, scenario) -> None:
    window = make_window()
    feed(window, scenario("contention"), range(60, 70))      # L40S: no bus width or clock
    assert window.plots.bandwidth_unknown
    assert "Memory bandwidth unknown: NVML gives no peak" in _title(window)
    window.focus_gpu(1)
    assert "unknown for GPU 1" in _title(window)


def test_a_known_bandwidth_keeps_its_title(make_window, scenario) -> None:
    window = make_window()
    feed(window, scenario("bandwidth"), range(60, 70))
    assert not window.plots.bandwidth_unknown
    assert _title(window).startswith("Estimated memory bandwidth")


def test_labels_of_close_reference_lines_do_not_overlap(make_window, scenario, qtbot) -> None:
    window = make_window()
    window.resize(1280, 800)
    with qtbot.waitExposed(window):
        window.show()
    feed(window, scenario("workstation"), range(60, 70))   # peaks of 1,008 and 936 GB/s
    qtbot.wait(50)
    labels = [line.label for line in window.plots.peak_marks.lines.values()]
    assert len(labels) == 2 and all(label.isVisible() for label in labels)
    a, b = (label.sceneBoundingRect() for label in labels)
    assert a.height() > 0 and abs(a.center().y() - b.center().y()) < a.height()  # close
    assert not a.intersects(b)
