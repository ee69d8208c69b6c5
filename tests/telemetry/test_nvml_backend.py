"""The real NVML backend on the simulated NVML: readings and the translation of errors."""

from __future__ import annotations

import pynvml
import pytest
from sim_support import make_scenario, scenario_dict, sim_backend

from gpuwatch.core.snapshot import BackendKind, GpuState
from gpuwatch.telemetry.errors import NvmlUnavailableError
from gpuwatch.telemetry.nvml import NvmlBackend, codes
from gpuwatch.telemetry.sim.scenario import parse_scenario

GiB = 1024**3
MiB = 1024**2
ALL_ERRORS = sorted(codes.all_codes())
LOST_ERRORS = {"GPU_IS_LOST", "GPU_NOT_FOUND", "RESET_REQUIRED"}


def test_memory_and_processes_are_read(open_sim):
    snap = open_sim(at_s=50).sample()
    g0 = snap.gpus[0]
    assert g0.state is GpuState.OK
    assert g0.name == "NVIDIA A100-SXM4-80GB"
    assert g0.uuid.startswith("GPU-")
    m = g0.memory
    assert m.total_bytes == 80 * GiB
    assert m.reserved_bytes == 256 * MiB
    assert m.used_bytes == 512 * MiB + 6 * GiB
    assert m.free_bytes == m.total_bytes - m.reserved_bytes - m.used_bytes
    (p,) = g0.processes
    assert (p.pid, p.used_bytes, p.name, p.user) == (1001, 6 * GiB, "python", "alice")
    assert p.cmdline == ("python", "train.py")
    assert snap.gpus[1].processes[0].kind == "graphics"


def test_peak_and_estimated_bandwidth(open_sim):
    g0 = open_sim(at_s=10).sample().gpus[0]
    peak = 5120 / 8 * 1593e6 * 2
    assert g0.peak_bandwidth_bytes_per_s == pytest.approx(peak)
    assert g0.memory_busy_percent == 50
    assert g0.estimated_bandwidth_bytes_per_s == pytest.approx(0.5 * peak)
    g1 = open_sim(at_s=10).sample().gpus[1]   # no bus width given: unsupported, not 0
    assert g1.peak_bandwidth_bytes_per_s is None
    assert g1.estimated_bandwidth_bytes_per_s is None


def test_h100_and_4090_peak_bandwidth_match_the_data_sheets(open_sim):
    s = make_scenario(gpus=[
        {"name": "H100", "memory_total": "80GiB", "memory_bus_width_bits": 5120,
         "max_memory_clock_mhz": 2619},
        {"name": "4090", "memory_total": "24GiB", "memory_bus_width_bits": 384,
         "max_memory_clock_mhz": 10501},
    ], processes=[])
    h100, rtx = open_sim(s).sample().gpus
    assert h100.peak_bandwidth_bytes_per_s == pytest.approx(3.35e12, rel=0.01)
    assert rtx.peak_bandwidth_bytes_per_s == pytest.approx(1.01e12, rel=0.01)


def test_v1_only_driver_falls_back_and_folds_reserved_into_used(open_sim):
    snap = open_sim(make_scenario(memory_info_v2=False), at_s=50).sample()
    m = snap.gpus[0].memory
    assert m.reserved_bytes is None
    assert m.used_bytes == 512 * MiB + 6 * GiB + 256 * MiB
    assert m.free_bytes == m.total_bytes - m.used_bytes


def test_unknown_per_process_memory_is_none(open_sim):
    s = make_scenario(processes=[{"pid": 5, "gpu": 0, "name": "wddm", "memory": "2GiB",
                                  "report_memory": False}])
    (p,) = open_sim(s).sample().gpus[0].processes
    assert p.used_bytes is None


def _patched_backend(patch) -> NvmlBackend:
    """A backend over a simulated NVML whose calls ``patch(lib)`` has replaced."""
    from gpuwatch.telemetry.clock import SteppedClock
    from gpuwatch.telemetry.sim.host import ScenarioHost
    from gpuwatch.telemetry.sim.library import SimulatedNvml

    clock = SteppedClock()
    lib = SimulatedNvml(make_scenario(), clock)
    patch(lib)
    return NvmlBackend(lib, ScenarioHost(lib, clock), clock, pcie_thread=False).open()


def test_max_uint64_per_process_memory_is_unknown():
    def patch(lib):
        original = lib.nvmlDeviceGetComputeRunningProcesses

        def wddm(handle):
            out = original(handle)
            for p in out:
                p.usedGpuMemory = 2**64 - 1
            return out

        lib.nvmlDeviceGetComputeRunningProcesses = wddm

    backend = _patched_backend(patch)
    (p,) = backend.sample().gpus[0].processes
    backend.close()
    assert p.used_bytes is None


@pytest.mark.skipif(not codes.LIBRARY_MISMATCH,
                    reason="these bindings predate versioned process calls")
def test_drivers_without_the_v3_process_call_fall_back_to_v2():
    def patch(lib):
        def v3_missing(handle):
            raise pynvml.NVMLLibraryMismatchError("Unversioned function called")

        lib.nvmlDeviceGetComputeRunningProcesses = v3_missing

    backend = _patched_backend(patch)
    first = backend.sample().gpus[0].processes
    second = backend.sample().gpus[0].processes
    backend.close()
    assert [p.pid for p in first] == [p.pid for p in second] == [1001]


def test_a_process_in_both_lists_appears_once(open_sim):
    s = make_scenario(processes=[{"pid": 7, "gpu": 0, "name": "blender",
                                  "kind": "compute+graphics", "memory": "3GiB"}])
    (p,) = open_sim(s).sample().gpus[0].processes
    assert (p.kind, p.used_bytes) == ("compute+graphics", 3 * GiB)


CALLS = [
    "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetUtilizationRates", "nvmlDeviceGetTemperature",
    "nvmlDeviceGetPowerUsage", "nvmlDeviceGetClockInfo", "nvmlDeviceGetPcieThroughput",
    "nvmlDeviceGetFieldValues", "nvmlDeviceGetComputeRunningProcesses",
    "nvmlDeviceGetGraphicsRunningProcesses",
]


@pytest.mark.parametrize("error", ALL_ERRORS)
@pytest.mark.parametrize("call", CALLS)
def test_every_error_class_on_every_call_is_translated(open_sim, call, error):
    s = make_scenario(faults=[{"start_s": 10, "end_s": 20, "gpu": 0, "call": call,
                               "error": error}])
    backend = open_sim(s, at_s=15)
    snap = backend.sample()                       # must not raise
    g0, g1 = snap.gpus
    assert g1.state is GpuState.OK                # the other GPU keeps updating
    if error in LOST_ERRORS:
        assert g0.state is GpuState.LOST and "lost" in g0.error.lower()
        assert g0.memory.used_bytes is None
    elif call == "nvmlDeviceGetMemoryInfo" and error != "NOT_SUPPORTED":
        assert g0.state is GpuState.ERROR and "memory could not be read" in g0.error
        assert g0.memory.used_bytes is None
    else:
        assert g0.state is GpuState.OK
    backend.clock.set_elapsed(25)                 # the fault is over: everything is back
    g0 = backend.sample().gpus[0]
    assert g0.state is GpuState.OK
    assert g0.memory.used_bytes is not None and g0.temperature_c is not None
    assert g0.memory.reserved_bytes is not None      # a passing error does not demote to v1
    assert [p.pid for p in g0.processes] == [1001]


def test_unsupported_readings_are_none_not_zero(open_sim):
    s = make_scenario(faults=[{"start_s": 0, "gpu": 0, "call": "nvmlDeviceGetPowerUsage",
                               "error": "NOT_SUPPORTED"},
                              {"start_s": 0, "gpu": 0, "call": "nvmlDeviceGetTemperature",
                               "error": "NOT_SUPPORTED"}])
    g0 = open_sim(s).sample().gpus[0]
    assert g0.power_w is None and g0.temperature_c is None
    assert g0.memory.used_bytes is not None


def test_a_lost_gpu_comes_back(open_sim):
    s = make_scenario(faults=[{"start_s": 100, "end_s": 130, "gpu": 1, "call": "*",
                               "error": "GPU_IS_LOST"}])
    backend = open_sim(s, at_s=90)
    states = []
    for t in (90, 100, 105, 120, 131, 134):
        backend.clock.set_elapsed(t)
        snap = backend.sample()
        states.append(snap.gpus[1].state)
        assert snap.gpus[0].state is GpuState.OK
    assert states == [GpuState.OK, GpuState.LOST, GpuState.LOST, GpuState.LOST,
                      GpuState.OK, GpuState.OK]
    assert snap.gpus[1].name == "NVIDIA A100-SXM4-80GB"
    assert snap.gpus[1].processes[0].pid == 1002


def test_a_gpu_lost_at_start_is_reported_and_attached_later(open_sim):
    s = make_scenario(faults=[{"start_s": 0, "end_s": 5, "gpu": 0, "call": "*",
                               "error": "GPU_IS_LOST"}])
    backend = open_sim(s)
    g0 = backend.sample().gpus[0]
    assert g0.state is GpuState.LOST and g0.name is None
    backend.clock.set_elapsed(6)
    g0 = backend.sample().gpus[0]
    assert g0.state is GpuState.OK and g0.name == "NVIDIA A100-SXM4-80GB"


@pytest.mark.parametrize(("error", "words"), [
    ("LIBRARY_NOT_FOUND", "No NVIDIA driver found"),
    ("DRIVER_NOT_LOADED", "kernel driver is not loaded"),
    ("LIB_RM_VERSION_MISMATCH", "different versions"),
    ("NO_PERMISSION", "No permission"),
    ("UNKNOWN", "NVML could not start"),
])
def test_init_failures_become_one_typed_error(error, words):
    s = make_scenario(faults=[{"start_s": 0, "call": "nvmlInit", "error": error}])
    with pytest.raises(NvmlUnavailableError) as info:
        sim_backend(s).open()
    assert words in info.value.reason
    assert info.value.code == codes.code(error)


def test_count_failure_is_a_typed_error():
    s = make_scenario(faults=[{"start_s": 0, "call": "nvmlDeviceGetCount",
                               "error": "DRIVER_NOT_LOADED"}])
    with pytest.raises(NvmlUnavailableError, match="count"):
        sim_backend(s).open()


def test_nvml_is_initialised_once_not_per_tick(open_sim):
    backend = open_sim()
    for t in range(5):
        backend.clock.set_elapsed(t)
        backend.sample()
    assert backend._lib.calls["nvmlInit"] == 1
    assert backend._lib.calls["nvmlDeviceGetName"] == 2       # static facts read once per GPU
    assert backend._lib.calls["nvmlDeviceGetMemoryInfo"] == 10


def test_nvlink_throughput_from_counters(open_sim):
    data = scenario_dict()
    data["gpus"][0].update(nvlink_links=18, nvlink_bytes_per_s="100GB")
    backend = open_sim(parse_scenario(data, "t.toml"))
    first = backend.sample().gpus[0]
    assert first.nvlink_tx_bytes_per_s is None            # a rate needs two readings
    backend.clock.set_elapsed(2)
    g0, g1 = backend.sample().gpus
    assert g0.nvlink_tx_bytes_per_s == pytest.approx(100e9, rel=0.01)
    assert g1.nvlink_tx_bytes_per_s is None               # no links: unsupported


def test_nvlink_falls_back_to_per_link_counters_on_older_drivers():
    from gpuwatch.telemetry.clock import SteppedClock
    from gpuwatch.telemetry.sim.host import ScenarioHost
    from gpuwatch.telemetry.sim.library import SimulatedNvml

    data = scenario_dict()
    data["gpus"][0].update(nvlink_links=12, nvlink_bytes_per_s="50GB")
    clock = SteppedClock()
    lib = SimulatedNvml(parse_scenario(data, "t.toml"), clock, nvlink_aggregate=False)
    backend = NvmlBackend(lib, ScenarioHost(lib, clock), clock, pcie_thread=False).open()
    backend.sample()
    clock.set_elapsed(4)
    g0 = backend.sample().gpus[0]
    backend.close()
    assert g0.nvlink_rx_bytes_per_s == pytest.approx(50e9, rel=0.01)


def test_pcie_runs_on_its_own_thread_and_never_in_the_sample(open_sim):
    import time

    from gpuwatch.telemetry.clock import SteppedClock
    from gpuwatch.telemetry.sim.host import ScenarioHost
    from gpuwatch.telemetry.sim.library import SimulatedNvml

    clock = SteppedClock(10)
    lib = SimulatedNvml(make_scenario(), clock, pcie_latency_s=0.02)
    backend = NvmlBackend(lib, ScenarioHost(lib, clock), clock, kind=BackendKind.SIMULATED,
                          pcie_thread=True, pcie_interval_s=0.01).open()
    try:
        before = lib.calls["nvmlDeviceGetPcieThroughput"]
        lib_calls_in_sample = []
        original = lib.nvmlDeviceGetPcieThroughput
        main = __import__("threading").current_thread()

        def spy(handle, counter):
            lib_calls_in_sample.append(__import__("threading").current_thread() is main)
            return original(handle, counter)

        lib.nvmlDeviceGetPcieThroughput = spy
        deadline = time.monotonic() + 5
        snap = backend.sample()
        while snap.gpus[0].pcie_rx_bytes_per_s is None and time.monotonic() < deadline:
            time.sleep(0.01)
            snap = backend.sample()
        assert snap.gpus[0].pcie_rx_bytes_per_s is not None
        assert not any(lib_calls_in_sample)     # every PCIe read happened off this thread
        assert lib.calls["nvmlDeviceGetPcieThroughput"] > before
    finally:
        backend.close()


def test_pcie_rests_while_nobody_looks_and_wakes_at_once_when_they_do(open_sim):
    """Each PCIe read costs the driver CPU: out of sight (tray, ``record`` without
    ``--json``) the poller reads every RESTING_PCIE_S, and starts a round at once when
    the rates are looked at again."""
    import time

    from gpuwatch.telemetry.clock import SteppedClock
    from gpuwatch.telemetry.nvml.backend import RESTING_PCIE_S
    from gpuwatch.telemetry.sim.host import ScenarioHost
    from gpuwatch.telemetry.sim.library import SimulatedNvml

    clock = SteppedClock(10)
    lib = SimulatedNvml(make_scenario(), clock)
    backend = NvmlBackend(lib, ScenarioHost(lib, clock), clock, kind=BackendKind.SIMULATED,
                          pcie_thread=True, pcie_interval_s=0.02)
    backend.set_host_detail(False)           # told before it opens: rests from the start
    backend.open()
    try:
        assert backend._pcie.interval_s == RESTING_PCIE_S
        first_round = 2 * lib.nvmlDeviceGetCount()      # TX and RX of every GPU
        deadline = time.monotonic() + 5
        while (lib.calls["nvmlDeviceGetPcieThroughput"] < first_round
               and time.monotonic() < deadline):
            time.sleep(0.01)                 # the first round runs at once
        resting = lib.calls["nvmlDeviceGetPcieThroughput"]
        time.sleep(0.3)                      # 15 rounds' worth at the full pace
        assert lib.calls["nvmlDeviceGetPcieThroughput"] == resting
        backend.set_host_detail(True)
        assert backend._pcie.interval_s == 0.02
        deadline = time.monotonic() + 5
        while (lib.calls["nvmlDeviceGetPcieThroughput"] < resting + 10
               and time.monotonic() < deadline):
            time.sleep(0.01)
        assert lib.calls["nvmlDeviceGetPcieThroughput"] >= resting + 10
    finally:
        backend.close()
