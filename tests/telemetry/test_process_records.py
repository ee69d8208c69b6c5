"""Process lists read straight from the C records give what the binding gives.

A child process on the fake driver reads every GPU's compute and graphics lists, ``_v3``
and ``_v2``, once through ``nvidia-ml-py``'s own functions and once through
:mod:`gpuwatch.telemetry.nvml.process_records`: the (pid, memory) pairs, or the NVML
error and its class, must be the same, for short and long lists, unknown memory, and
calls that fail on the first (count) or the second (fill) call.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gpuwatch.telemetry.nvml.process_records import direct_lists

# Older bindings (no _v3 process record) take the binding's own path: nothing to compare.
needs_direct = pytest.mark.skipif(
    direct_lists(__import__("pynvml")) is None,
    reason="this nvidia-ml-py has no process records to read directly")

READER = r"""
import json, sys, pynvml
from gpuwatch.telemetry.nvml.process_records import direct_lists

mode = sys.argv[1]
pynvml.nvmlInit()
direct = direct_lists(pynvml)
out = []
for i in range(pynvml.nvmlDeviceGetCount()):
    h = pynvml.nvmlDeviceGetHandleByIndex(i)
    for kind in ("compute", "graphics"):
        for version in ("_v3", "_v2"):
            name = f"nvmlDeviceGet{kind.title()}RunningProcesses{version}"
            try:
                if mode == "direct":
                    got = [list(pair) for pair in direct[kind, version](h)]
                else:
                    got = [[p.pid, 2**64 - 1 if p.usedGpuMemory is None else p.usedGpuMemory]
                           for p in getattr(pynvml, name)(h)]
            except pynvml.NVMLError as exc:
                got = ["error", type(exc).__name__, exc.value]
            out.append([i, name, got])
print(json.dumps(out))
pynvml.nvmlShutdown()
"""


def read_both(fake_driver, **settings) -> tuple[list, list]:
    results = []
    for mode in ("binding", "direct"):
        done = subprocess.run([sys.executable, "-c", READER, mode], env=fake_driver.env(
            **settings), capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        results.append(json.loads(done.stdout))
    return results[0], results[1]


@pytest.mark.parametrize("settings", [
    {"gpus": 3, "procs": 5, "graphics": 2},
    {"gpus": 1, "procs": 0},                                   # nothing running
    {"gpus": 2, "procs": 200, "graphics": 200},                # long lists
    {"gpus": 2, "procs": 3, "fail": "nvmlDeviceGetComputeRunningProcesses_v3=13"},
    {"gpus": 2, "procs": 3, "fail": "nvmlDeviceGetGraphicsRunningProcesses*:1=10"},
    {"gpus": 2, "procs": 3, "fail": "nvmlDeviceGetComputeRunningProcesses*=10@2-2"},   # the fill
    {"gpus": 1, "procs": 4, "fail": "nvmlDeviceGetComputeRunningProcesses_v2=999@1-1"},
])
@needs_direct
def test_the_pairs_are_the_binding_s_objects(fake_driver, settings):
    binding, direct = read_both(fake_driver, time=50, **settings)
    assert direct == binding
    listed = [pair for _, _, got in binding if got[:1] != ["error"] for pair in got]
    if settings.get("procs"):
        assert listed, "some list should have been read"


def test_pairs_are_not_used_with_anything_but_the_real_binding():
    import types

    import pynvml

    assert direct_lists(types.ModuleType("not_pynvml")) is None
    has_records = all(hasattr(pynvml, f"c_nvmlProcessInfo{v}_t") for v in ("_v3", "_v2"))
    assert (direct_lists(pynvml) is not None) == has_records



@needs_direct
def test_the_failing_calls_fail(fake_driver):
    """The fault settings above do reach the calls (the comparisons are not vacuous):
    here only the second C call of the process, the first list's fill, fails."""
    _, direct = read_both(fake_driver, gpus=2, procs=3, time=50,
                          fail="nvmlDeviceGetComputeRunningProcesses*=10@2-2")
    errors = [(gpu, name, got) for gpu, name, got in direct if got[:1] == ["error"]]
    assert errors == [(0, "nvmlDeviceGetComputeRunningProcesses_v3",
                       ["error", "NVMLError_Timeout", 10])]


def test_unknown_memory_in_a_pair_is_none():
    """NVML_VALUE_NOT_AVAILABLE (what WDDM gives) reads as unknown, not as 16 EiB."""
    from gpuwatch.telemetry.nvml.process_lists import _one_list

    assert _one_list([(5, 2**64 - 1), (6, 10)], [], True) == {5: (None, "compute"),
                                                                 6: (10, "compute")}
    assert _one_list([], [(7, 2**63)], True) == {7: (None, "graphics")}
    assert _one_list([(5, 1), (5, 2)], [], True) is None      # twice: the general merge
