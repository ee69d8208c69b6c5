"""Empty states of the time plots: a bandwidth that cannot be estimated says so."""

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
