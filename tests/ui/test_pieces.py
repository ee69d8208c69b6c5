"""Small parts: decimation, the advisor panel, the bridge, the command line, the guard."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QImage

from gpuwatch import cli
from gpuwatch.telemetry.errors import NvmlUnavailableError
from gpuwatch.ui import app as app_module
from gpuwatch.ui.live.advisor_panel import AdvisorPanel, HintView
from gpuwatch.ui.widgets.decimate import minmax_decimate, window_slice


def test_decimation_keeps_every_peak() -> None:
    x = np.arange(86400, dtype=float)
    y = np.zeros(86400)
    y[12345] = 10.0          # a one-second spike in a day
    y[50000] = -3.0
    dx, dy = minmax_decimate(x, y, 800)
    assert len(dx) <= 1600
    assert dy.max() == 10.0 and dy.min() == -3.0
    assert np.all(np.diff(dx) >= 0)


def test_decimation_keeps_gaps_and_order() -> None:
    x = np.arange(1000, dtype=float)
    y = np.linspace(0, 1, 1000)
    y[300:600] = np.nan
    _, dy = minmax_decimate(x, y, 50)
    assert np.isnan(dy).any()                   # the gap survives
    finite = dy[~np.isnan(dy)]
    assert np.all(np.diff(finite) >= 0)         # a rising line stays rising
    small_x, _ = minmax_decimate(x[:10], y[:10], 50)
    assert len(small_x) == 10


def test_window_slice() -> None:
    t = np.arange(100, dtype=float)
    sl = window_slice(t, 10.5, 20.5)
    assert t[sl][0] <= 10.5 and t[sl][-1] >= 20.5


def test_advisor_panel_empty_and_filled(qtbot) -> None:
    panel = AdvisorPanel()
    qtbot.addWidget(panel)
    assert not panel.empty.isHidden() and "No hints" in panel.empty.text()
    panel.set_hints([HintView("info", "Fine"), HintView("critical", "Out of memory in ~4 min",
                                                        "used +1.2 GiB/min", "lower the batch",
                                                        gpu=0, pid=42)])
    assert panel.empty.isHidden()
    assert [h.severity for h in panel.hints] == ["critical", "info"]
    assert panel.list.count() == 2


def test_bridge_coalesces_bursts(qtbot) -> None:
    from gpuwatch.ui.live.bridge import SnapshotBridge

    bridge = SnapshotBridge()
    batches: list[list] = []
    bridge.snapshots.connect(batches.append)
    for i in range(5):
        bridge.push(i)  # type: ignore[arg-type]
    qtbot.waitUntil(lambda: sum(map(len, batches)) == 5)
    assert len(batches) == 1 and batches[0] == [0, 1, 2, 3, 4]


def test_bridge_wakes_the_gui_once_a_batch_is_queued(qtbot) -> None:
    """Out of sight the window takes its samples in batches: none is lost or held back
    once the batch is full, the batch is lowered, or the sampler stops."""
    from gpuwatch.ui.live.bridge import SnapshotBridge

    bridge = SnapshotBridge()
    batches: list[list] = []
    bridge.snapshots.connect(batches.append)
    bridge.set_batch(2)
    bridge.push(0)  # type: ignore[arg-type]
    qtbot.wait(50)
    assert batches == []                       # one of two: the GUI sleeps on
    bridge.push(1)  # type: ignore[arg-type]
    qtbot.waitUntil(lambda: batches == [[0, 1]])
    bridge.push(2)  # type: ignore[arg-type]
    qtbot.wait(50)
    assert batches == [[0, 1]]
    bridge.set_batch(1)                        # seen again: what waits comes at once
    qtbot.waitUntil(lambda: batches == [[0, 1], [2]])
    bridge.set_batch(3)
    bridge.push(3)  # type: ignore[arg-type]
    bridge.done()                              # the sampler stopped: delivered too
    qtbot.waitUntil(lambda: batches == [[0, 1], [2], [3]])


def test_a_window_out_of_sight_takes_its_samples_in_pairs(make_window, scenario) -> None:
    from gpuwatch.ui.app import SamplingSession

    window = make_window()
    session = SamplingSession(scenario("workstation"), window, 1.0)
    window.sight_changed.emit(False)
    assert session.bridge.batch == 2
    window.sight_changed.emit(True)
    assert session.bridge.batch == 1
    slow = SamplingSession(scenario("workstation"), window, 5.0)
    window.sight_changed.emit(False)
    assert slow.bridge.batch == 1               # a slow interval: every sample


def test_bridge_holds_a_fast_sampler_to_the_windows_pace(qtbot) -> None:
    import threading

    from gpuwatch.ui.live.bridge import SnapshotBridge

    bridge = SnapshotBridge(max_pending=3)
    got: list = []
    bridge.snapshots.connect(got.extend)
    pushed: list[int] = []

    def sampler() -> None:
        for i in range(10):
            bridge.push(i)  # type: ignore[arg-type]
            pushed.append(i)

    thread = threading.Thread(target=sampler)
    thread.start()
    qtbot.waitUntil(lambda: len(got) == 10, timeout=10_000)   # the GUI drains, it goes on
    thread.join(5)
    assert got == list(range(10)) and pushed == list(range(10))
    blocked = threading.Thread(target=lambda: [bridge.push(i) for i in range(5)])
    blocked.start()                       # nobody drains: it waits after 3 ...
    blocked.join(0.3)
    assert blocked.is_alive()
    bridge.close()                        # ... until the bridge lets go
    blocked.join(5)
    assert not blocked.is_alive()


def test_gui_screenshot_command(tmp_path: Path, qapp) -> None:
    out = tmp_path / "shot.png"
    rc = cli.main(["gui", "--demo", "faults", "--screenshot", str(out),
                   "--screenshot-after", "60", "--theme", "dark"])
    assert rc == 0
    image = QImage(str(out))
    assert image.width() >= 1200 and image.height() >= 800


def test_no_driver_falls_back_to_the_workstation_demo(monkeypatch) -> None:
    real = app_module.open_backend

    def fake(options):
        if options.demo is None:
            raise NvmlUnavailableError("NVML Shared Library Not Found", 12)
        return real(options)

    monkeypatch.setattr(app_module, "open_backend", fake)
    backend, banner, fallback = app_module.open_source(app_module.LaunchOptions())
    try:
        assert fallback and banner and "Simulated GPUs" in banner
        assert "No NVIDIA driver found".lower() in banner.lower()
        assert backend.info.scenario == "workstation"
    finally:
        backend.close()


def test_gui_parser_contract() -> None:
    args = cli.build_parser().parse_args(["gui", "--demo", "--interval", "2",
                                          "--time-scale", "max"])
    assert args.demo == "" and args.interval == 2.0 and args.time_scale == "max"
    assert args.func.__name__ == "run_gui"


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="True is immortal from 3.12 on")
def test_many_signal_emits_do_not_exhaust_true() -> None:
    class Emitter(QObject):
        fired = Signal(object)

    e = Emitter()
    before = sys.getrefcount(True)
    for _ in range(20000):
        e.fired.emit(1)
    assert sys.getrefcount(True) > 1000
    assert before > 1 << 39


def test_the_startup_heap_is_frozen_out_of_full_collections() -> None:
    import gc

    from gpuwatch.ui.app import freeze_startup_heap

    try:
        freeze_startup_heap()
        assert gc.get_freeze_count() > 1000      # the modules and widgets alive now
    finally:
        gc.unfreeze()
