"""The window says what the telemetry cannot see: exited processes that hold memory,
process lists NVML would not give, lost GPUs in one sentence, and why the demo runs."""

from __future__ import annotations

from sim_support import make_scenario

from gpuwatch.core.snapshot import BackendKind, GpuState, Snapshot
from gpuwatch.telemetry.clock import SteppedClock
from gpuwatch.telemetry.errors import NvmlUnavailableError
from gpuwatch.telemetry.nvml import NvmlBackend
from gpuwatch.telemetry.sim.host import ScenarioHost
from gpuwatch.telemetry.sim.library import SimulatedNvml
from gpuwatch.ui import app as app_module
from gpuwatch.ui.live.process_model import NAME

GiB = 1024**3


def _sample(scenario, gone: set[int] = frozenset()) -> Snapshot:
    class Host(ScenarioHost):
        def lookup(self, pids):
            return super().lookup(set(pids) - gone)

    clock = SteppedClock(50)
    lib = SimulatedNvml(scenario, clock)
    backend = NvmlBackend(lib, Host(lib, clock), clock, kind=BackendKind.SIMULATED,
                          scenario="test", pcie_thread=False).open()
    try:
        return backend.sample()
    finally:
        backend.close()


def test_an_exited_process_holding_memory_is_in_the_table_and_the_bar(make_window) -> None:
    window = make_window()
    s = make_scenario(processes=[
        {"pid": 4100, "gpu": 0, "name": "python", "memory": "22GiB"},
        {"pid": 4101, "gpu": 0, "name": "python", "memory": "3GiB"},
    ])
    window.on_snapshot(_sample(s, gone={4100}))
    model = window.processes.model
    names = {model.data(model.index(r, 0)): model.data(model.index(r, NAME))
             for r in range(model.rowCount())}
    assert names == {"4100": "(exited, still holding memory)", "4101": "python"}
    card = window.cards.cards[0]
    assert "(exited, still holding memory) 22.0 GiB" in card.legend.text()
    tips = card.bar.segment_tooltips()
    exited = [t for t in tips if "(exited, still holding memory) (pid 4100)" in t]
    assert exited and "22.0 GiB" in exited[0]           # its bytes are its own segment
    assert not any(t.startswith("Other") and "22.0 GiB" in t for t in tips)


def test_a_process_list_that_cannot_be_read_is_not_no_processes(make_window) -> None:
    window = make_window()
    s = make_scenario(faults=[
        {"start_s": 0, "gpu": 0, "call": c, "error": "TIMEOUT"}
        for c in ("nvmlDeviceGetComputeRunningProcesses",
                  "nvmlDeviceGetGraphicsRunningProcesses")])
    window.on_snapshot(_sample(s))
    g0, g1 = window.cards.cards[0], window.cards.cards[1]
    assert "Process list unavailable: NVML timed out (TIMEOUT)" in g0.legend.text()
    assert "No processes" not in g0.legend.text()
    assert g0.state is GpuState.OK
    assert "Process list" not in g1.legend.text()


def test_a_lost_gpu_card_says_it_in_one_sentence(make_window) -> None:
    window = make_window()
    s = make_scenario(faults=[{"start_s": 0, "gpu": 1, "call": "*", "error": "GPU_IS_LOST"}])
    window.on_snapshot(_sample(s))
    card = window.cards.cards[1]
    assert card.state is GpuState.LOST
    assert card.legend.text() == ("Driver: GPU lost (it stopped answering; a reset or "
                                  "reboot may be needed)")
    words = " ".join(part.text() for part in card.parts) + " " + card.badge.text()
    assert words.count("GPU lost") == 1         # the driver's words, once


def _banner_for(monkeypatch, error: NvmlUnavailableError) -> str:
    real = app_module.open_backend

    def fake(options):
        if options.demo is None:
            raise error
        return real(options)

    monkeypatch.setattr(app_module, "open_backend", fake)
    backend, banner, fallback = app_module.open_source(app_module.LaunchOptions())
    backend.close()
    assert fallback
    return banner


def test_the_no_driver_banner_is_one_sentence(monkeypatch) -> None:
    banner = _banner_for(monkeypatch, NvmlUnavailableError(
        "No NVIDIA driver found: the NVML library (libnvidia-ml.so.1) is not installed.", 12))
    assert banner == ("<b>Simulated GPUs</b> — no NVIDIA driver found: the NVML library "
                      "(libnvidia-ml.so.1) is not installed. This is the 'workstation' demo, "
                      "not your hardware.")
    assert banner.lower().count("no nvidia driver found") == 1


def test_other_reasons_keep_their_own_words(monkeypatch) -> None:
    banner = _banner_for(monkeypatch, NvmlUnavailableError(
        "The NVIDIA kernel driver is not loaded.", 9))
    assert banner == ("<b>Simulated GPUs</b> — the NVIDIA kernel driver is not loaded. "
                      "This is the 'workstation' demo, not your hardware.")
    banner = _banner_for(monkeypatch, NvmlUnavailableError(
        "NVML could not start: <Unknown Error>.", 999))
    assert "— NVML could not start: &lt;Unknown Error&gt;. This is" in banner
    assert "no NVIDIA driver found" not in banner
