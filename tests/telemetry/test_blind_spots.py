"""What the telemetry cannot see is said, never passed off as nothing: processes the host
no longer has, process lists NVML would not give, no GPUs at all, and lost GPUs (lost
only when NVML says so, on every path a reading takes)."""

from __future__ import annotations

import time
from collections.abc import Iterable

import pynvml
import pytest
from sim_support import make_scenario

from gpuwatch.core.snapshot import BackendKind, GpuState, HostStatus
from gpuwatch.core.snapshot_json import snapshot_to_json
from gpuwatch.telemetry.clock import SteppedClock
from gpuwatch.telemetry.hostinfo import HostProcess
from gpuwatch.telemetry.nvml import NvmlBackend, codes
from gpuwatch.telemetry.nvml.backend import NO_GPUS_WARNING
from gpuwatch.telemetry.nvml.readings import LOST_TEXTS
from gpuwatch.telemetry.sim.host import ScenarioHost
from gpuwatch.telemetry.sim.library import SimulatedNvml

GiB = 1024**3
LOST_ERRORS = ("GPU_IS_LOST", "GPU_NOT_FOUND", "RESET_REQUIRED")
OTHER_ERRORS = sorted(set(codes.all_codes()) - set(LOST_ERRORS))


class ForgetfulHost:
    """The scenario's host, except that ``gone`` pids no longer exist on it."""

    def __init__(self, inner: ScenarioHost, gone: set[int]):
        self._inner = inner
        self.gone = gone

    def pid_namespace_isolated(self) -> bool:
        return False

    def lookup(self, pids: Iterable[int]) -> dict[int, HostProcess]:
        return self._inner.lookup(set(pids) - self.gone)


def backend_over(scenario=None, *, at_s: float = 0.0, gone: set[int] = frozenset(),
                 patch=None, **kw) -> NvmlBackend:
    clock = SteppedClock(at_s)
    lib = SimulatedNvml(scenario or make_scenario(), clock)
    if patch is not None:
        patch(lib)
    kw.setdefault("pcie_thread", False)
    return NvmlBackend(lib, ForgetfulHost(ScenarioHost(lib, clock), set(gone)), clock,
                       kind=BackendKind.SIMULATED, scenario="test", **kw)


@pytest.fixture
def opened():
    backends: list[NvmlBackend] = []

    def factory(*args, **kw) -> NvmlBackend:
        backend = backend_over(*args, **kw).open()
        backends.append(backend)
        return backend

    yield factory
    for b in backends:
        b.close()


# -- processes the host no longer has ----------------------------------------------------

def test_a_process_gone_from_the_host_is_listed_with_its_memory(opened):
    s = make_scenario(processes=[
        {"pid": 4100, "gpu": 0, "name": "python", "user": "bob", "memory": "22GiB"},
        {"pid": 4101, "gpu": 0, "name": "python", "user": "bob", "memory": "3GiB"},
    ])
    snap = opened(s, gone={4100}).sample()
    exited, alive = snap.gpus[0].processes
    assert (exited.pid, exited.used_bytes) == (4100, 22 * GiB)
    assert exited.host_status is HostStatus.EXITED and not exited.found_on_host
    assert not exited.resolved
    assert (exited.name, exited.user, exited.cmdline, exited.rss_bytes) == (None, None, (), None)
    assert alive.host_status is HostStatus.FOUND and alive.name == "python"
    # every sum over the processes holds the 22 GiB
    assert sum(p.used_bytes for p in snap.processes) == 25 * GiB
    assert snap.warnings == ()
    doc = snapshot_to_json(snap)["gpus"][0]["processes"]
    assert doc[0]["host_status"] == "exited" and doc[0]["resolved"] is False
    assert doc[0]["name"] is None and doc[0]["used_bytes"] == 22 * GiB
    assert doc[1]["host_status"] == "found"


def test_a_process_comes_back_found_when_the_host_answers_again(opened):
    backend = opened(gone={1001})
    (p,) = backend.sample().gpus[0].processes
    assert p.host_status is HostStatus.EXITED
    backend._host.gone.clear()
    (p,) = backend.sample().gpus[0].processes
    assert p.host_status is HostStatus.FOUND and p.name == "python"


# -- process lists NVML would not give --------------------------------------------------

PROCESS_CALLS = ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses")


def _fault(call: str, error: str, gpu: int = 0) -> dict:
    return {"start_s": 0, "gpu": gpu, "call": call, "error": error}


@pytest.mark.parametrize("error", OTHER_ERRORS)
def test_process_lists_that_cannot_be_read_say_why(opened, error):
    s = make_scenario(faults=[_fault(c, error) for c in PROCESS_CALLS])
    snap = opened(s, at_s=50).sample()
    g0, g1 = snap.gpus
    assert g0.state is GpuState.OK              # the rest of the GPU still reads
    assert g0.memory.used_bytes is not None
    assert g0.processes == ()
    assert g0.processes_error and error in g0.processes_error
    assert snapshot_to_json(snap)["gpus"][0]["processes_error"] == g0.processes_error
    assert g1.processes_error is None and g1.processes


@pytest.mark.parametrize(("error", "words"), [
    ("TIMEOUT", "NVML timed out (TIMEOUT)"),
    ("NO_PERMISSION", "no permission (NO_PERMISSION)"),
    ("UNKNOWN", "Unknown Error (UNKNOWN)"),
])
def test_the_reason_reads_as_words(opened, error, words):
    s = make_scenario(faults=[_fault(c, error) for c in PROCESS_CALLS])
    assert opened(s).sample().gpus[0].processes_error == words


@pytest.mark.parametrize("error", [e for e in OTHER_ERRORS if e != "NOT_SUPPORTED"])
@pytest.mark.parametrize("call", PROCESS_CALLS)
def test_one_list_failing_leaves_the_other_and_says_which(opened, call, error):
    s = make_scenario(
        processes=[{"pid": 7, "gpu": 0, "name": "blender", "kind": "compute+graphics",
                    "memory": "3GiB"}],
        faults=[_fault(call, error)])
    g0 = opened(s).sample().gpus[0]
    (p,) = g0.processes                          # the other list still names it
    assert p.pid == 7 and p.used_bytes == 3 * GiB
    kind = "compute" if "Compute" in call else "graphics"
    assert g0.processes_error.endswith(f"reading the {kind} processes")
    assert error in g0.processes_error


def test_one_list_unsupported_hides_nothing(opened):
    s = make_scenario(faults=[_fault("nvmlDeviceGetGraphicsRunningProcesses", "NOT_SUPPORTED")])
    g0 = opened(s).sample().gpus[0]
    assert g0.processes_error is None and [p.pid for p in g0.processes] == [1001]


def test_empty_lists_read_without_error_are_no_processes(opened):
    g1 = opened(make_scenario(processes=[])).sample().gpus[1]
    assert g1.processes == () and g1.processes_error is None


def test_the_error_clears_when_the_lists_answer_again(opened):
    s = make_scenario(faults=[{**_fault(c, "TIMEOUT"), "end_s": 10} for c in PROCESS_CALLS])
    backend = opened(s)
    assert backend.sample().gpus[0].processes_error is not None
    backend.clock.set_elapsed(11)
    g0 = backend.sample().gpus[0]
    assert g0.processes_error is None and [p.pid for p in g0.processes] == [1001]


def test_a_gpu_that_is_not_read_has_no_process_list(opened):
    s = make_scenario(faults=[{"start_s": 0, "gpu": 1, "call": "*", "error": "GPU_IS_LOST"}])
    g1 = opened(s).sample().gpus[1]
    assert g1.state is GpuState.LOST
    assert g1.processes == () and g1.processes_error is not None


# -- no GPUs ------------------------------------------------------------------------------

def _no_gpus(lib: SimulatedNvml) -> None:
    lib.nvmlDeviceGetCount = lambda: 0


def test_no_gpus_is_said_with_what_to_check(opened):
    snap = opened(patch=_no_gpus).sample()
    assert snap.gpus == ()
    assert snap.warnings == (NO_GPUS_WARNING,)
    for words in ("no GPUs", "nvidia-smi", "CUDA_VISIBLE_DEVICES", "--gpus all", "driver"):
        assert words in NO_GPUS_WARNING
    doc = snapshot_to_json(snap)
    assert doc["gpus"] == [] and doc["warnings"] == [NO_GPUS_WARNING]


def test_gpus_present_carry_no_such_warning(opened):
    assert opened().sample().warnings == ()


# -- lost only when NVML says so, on the sampling and the PCIe thread alike -----------

def _pcie_fault(error: str) -> list[dict]:
    return [_fault("nvmlDeviceGetPcieThroughput", error)]


def _sample_after_a_pcie_pass(backend: NvmlBackend):
    """A sample taken after the PCIe thread has polled every GPU at least once."""
    lib = backend._lib
    deadline = time.monotonic() + 60            # a hang guard, not a speed check
    snap = backend.sample()
    while snap.gpus[1].pcie_rx_bytes_per_s is None:   # GPU 1 is polled after GPU 0
        assert time.monotonic() < deadline, "the PCIe thread never polled"
        time.sleep(0.005)
        snap = backend.sample()
    assert lib.calls["nvmlDeviceGetPcieThroughput"] >= 3
    return snap


@pytest.mark.parametrize("error", OTHER_ERRORS)
@pytest.mark.parametrize("thread", [False, True], ids=["inline", "pcie-thread"])
def test_a_failing_pcie_read_is_none_and_the_gpu_ok(opened, error, thread):
    s = make_scenario(faults=_pcie_fault(error))
    backend = opened(s, at_s=50, pcie_thread=thread, pcie_interval_s=0.001)
    snap = _sample_after_a_pcie_pass(backend) if thread else backend.sample()
    g0, g1 = snap.gpus
    assert g0.state is GpuState.OK and g0.error is None
    assert g0.pcie_rx_bytes_per_s is None and g0.pcie_tx_bytes_per_s is None
    assert g0.memory.used_bytes is not None and [p.pid for p in g0.processes] == [1001]
    assert g1.pcie_rx_bytes_per_s is not None


@pytest.mark.parametrize("error", LOST_ERRORS)
@pytest.mark.parametrize("thread", [False, True], ids=["inline", "pcie-thread"])
def test_a_pcie_read_nvml_calls_lost_marks_the_gpu_lost(opened, error, thread):
    s = make_scenario(faults=_pcie_fault(error))
    backend = opened(s, at_s=50, pcie_thread=thread, pcie_interval_s=0.001)
    snap = _sample_after_a_pcie_pass(backend) if thread else backend.sample()
    g0, g1 = snap.gpus
    assert g0.state is GpuState.LOST
    assert g0.error == LOST_TEXTS[codes.code(error)]
    assert g1.state is GpuState.OK


def test_a_stale_lost_report_from_the_pcie_thread_is_ignored_after_a_reattach(opened):
    backend = opened()
    dev = backend._devices[0]
    backend._pcie_lost[0] = (dev.generation - 1, "GPU lost (an old handle)")
    assert backend.sample().gpus[0].state is GpuState.OK


@pytest.mark.parametrize("error", OTHER_ERRORS)
def test_a_gpu_that_cannot_be_opened_is_an_error_not_lost(opened, error):
    s = make_scenario(faults=[{"start_s": 0, "end_s": 5, "gpu": 0,
                               "call": "nvmlDeviceGetHandleByIndex", "error": error}])
    backend = opened(s)
    g0 = backend.sample().gpus[0]
    assert g0.state is GpuState.ERROR
    assert g0.error.startswith("the GPU could not be opened") and error in g0.error
    backend.clock.set_elapsed(6)                 # retried once the fault is over
    g0 = backend.sample().gpus[0]
    assert g0.state is GpuState.OK and g0.name == "NVIDIA A100-SXM4-80GB"


# -- how a lost GPU is described ----------------------------------------------------------

@pytest.mark.parametrize("error", LOST_ERRORS)
@pytest.mark.parametrize("call", ["*", "nvmlDeviceGetMemoryInfo",
                                  "nvmlDeviceGetComputeRunningProcesses"])
def test_a_lost_gpu_says_so_once_in_a_sentence(opened, call, error):
    s = make_scenario(faults=[{"start_s": 0, "gpu": 1, "call": call, "error": error}])
    g1 = opened(s).sample().gpus[1]
    assert g1.state is GpuState.LOST
    assert g1.error == LOST_TEXTS[codes.code(error)]
    assert g1.error.startswith("GPU lost (") and g1.error.count("lost") == 1
    assert "NVML Error with code" not in g1.error


def test_the_gpu_is_lost_sentence():
    assert LOST_TEXTS[codes.GPU_IS_LOST] == ("GPU lost (it stopped answering; a reset or "
                                             "reboot may be needed)")


def test_a_driver_without_the_v3_process_call_is_asked_through_v2(opened):
    def patch(lib):
        def missing(handle):
            raise pynvml.NVMLError(codes.FUNCTION_NOT_FOUND)

        lib.nvmlDeviceGetComputeRunningProcesses = missing

    backend = opened(patch=patch)
    for _ in range(2):
        g0 = backend.sample().gpus[0]
        assert g0.processes_error is None and [p.pid for p in g0.processes] == [1001]


@pytest.mark.parametrize("thread", [False, True], ids=["inline", "pcie-thread"])
def test_a_gpu_lost_on_pcie_stays_lost_until_pcie_answers(opened, thread):
    s = make_scenario(faults=[{**_fault("nvmlDeviceGetPcieThroughput", "GPU_IS_LOST"),
                               "end_s": 100}])
    backend = opened(s, at_s=50, pcie_thread=thread, pcie_interval_s=0.001)
    snap = _sample_after_a_pcie_pass(backend) if thread else backend.sample()
    assert snap.gpus[0].state is GpuState.LOST
    for t in range(52, 100, 3):                  # each sample after a retry is due
        backend.clock.set_elapsed(t)
        assert backend.sample().gpus[0].state is GpuState.LOST, t
    backend.clock.set_elapsed(103)
    g0 = backend.sample().gpus[0]
    assert g0.state is GpuState.OK and g0.pcie_rx_bytes_per_s is not None
