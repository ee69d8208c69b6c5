"""GPM over the real binding and the fake driver: the NVML backend's own code reads the
performance monitor's sample pairs, on GPUs with and without GPM, and through failures.

``FAKENVML_TIME`` freezes the driver's drift, so the figures a pair gives are exactly
the driver's readings: DRAM bandwidth utilisation 0.8 x the memory busy %, SMs 0.9 x
and tensor pipes 0.6 x the GPU utilisation (see tests/fakenvml/README.md).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuwatch.telemetry.nvml.gpm import _percent

TICKS = 4
SAMPLER = r"""
import json, sys
from gpuwatch.core.snapshot_json import gpu_to_json
from gpuwatch.telemetry.nvml import NvmlBackend
backend = NvmlBackend(pcie_thread=False).open()
ticks = [[gpu_to_json(g) for g in backend.sample().gpus] for _ in range(int(sys.argv[1]))]
backend.close()
print(json.dumps(ticks))
"""


def _ticks(fake_driver, tmp_path, **fake) -> tuple[list, dict[str, int]]:
    trace = tmp_path / "trace.txt"
    trace.unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-c", SAMPLER, str(TICKS)], capture_output=True,
                          text=True, check=False, cwd=fake_driver.folder,
                          env=fake_driver.env(time=1234.5, trace=trace, **fake))
    assert done.returncode == 0, done.stderr
    counts = {}
    for line in trace.read_text().splitlines():
        if not line.startswith("#"):
            name, n = line.split()
            counts[name] = counts.get(name, 0) + int(n)
    return json.loads(done.stdout), counts


def _measured(g: dict) -> tuple:
    return (g["bandwidth"]["dram_active_percent"], g["bandwidth"]["measured_bytes_per_s"],
            g["utilization"]["graphics_active_percent"],
            g["utilization"]["sm_active_percent"], g["utilization"]["tensor_active_percent"])


def _expected(g: dict) -> tuple:
    busy, util = g["utilization"]["memory_busy_percent"], g["utilization"]["gpu_percent"]
    dram = round(busy * 0.8, 1)
    return (dram, round(busy * 0.8 / 100 * g["bandwidth"]["peak_bytes_per_s"]),
            util, round(util * 0.9, 1), round(util * 0.6, 1))


@pytest.fixture(scope="module")
def settled(fake_driver_library):
    """Hypothesis runs many examples in one test: one fixture value for all."""
    return fake_driver_library


@settings(max_examples=4, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(gpus=st.integers(1, 4), data=st.data())
def test_gpus_with_gpm_measure_from_the_second_tick_and_the_others_never(
        fake_driver, tmp_path, gpus, data):
    with_gpm = data.draw(st.sets(st.integers(0, gpus - 1)), label="with_gpm")
    ticks, calls = _ticks(fake_driver, tmp_path, gpus=gpus,
                          gpm=",".join(map(str, sorted(with_gpm))) or "none")
    for tick, sample in enumerate(ticks):
        for g in sample:
            assert g["state"] == "ok"
            if g["index"] in with_gpm and tick > 0:
                assert _measured(g) == _expected(g)
                # measured below the busy-% estimate: busy time is not bandwidth used
                assert g["bandwidth"]["measured_bytes_per_s"] < \
                    g["bandwidth"]["estimated_bytes_per_s"]
            else:
                assert _measured(g) == (None,) * 5
    # one sample a GPU and tick, one metrics call per pair, the samples freed at close
    assert calls.get("nvmlGpmSampleGet", 0) == TICKS * len(with_gpm)
    assert calls.get("nvmlGpmMetricsGet", 0) == (TICKS - 1) * len(with_gpm)
    assert calls.get("nvmlGpmSampleAlloc", 0) == calls.get("nvmlGpmSampleFree", 0) \
        == 2 * len(with_gpm)
    assert calls["nvmlGpmQueryDeviceSupport"] == gpus


@pytest.mark.parametrize(("fail", "measured_ticks", "sample_calls"), [
    # no GPM in this driver or binding: asked once at attach, never sampled
    ("nvmlGpmQueryDeviceSupport=13", [], 0),
    ("nvmlGpmSampleAlloc=20", [], 0),
    # the sample call says "not supported" (e.g. MIG turned on): not asked again
    ("nvmlGpmSampleGet:0=3", [], 1),
    # a timeout breaks the pair: the next tick starts a new one
    ("nvmlGpmSampleGet:0=10@2-2", [3], TICKS),
    # a metrics call that times out loses that tick only
    ("nvmlGpmMetricsGet:0=10@2-2", [1, 3], TICKS),
    ("nvmlGpmMetricsGet:0=999", [], TICKS),
])
def test_gpm_failures_lose_figures_not_the_gpu(fake_driver, tmp_path, fail, measured_ticks,
                                               sample_calls):
    ticks, calls = _ticks(fake_driver, tmp_path, gpus=1, fail=fail)
    for tick, (g,) in enumerate(ticks):
        assert (g["state"], g["error"]) == ("ok", None)
        assert g["memory"]["used_bytes"] is not None
        if tick in measured_ticks:
            assert _measured(g) == _expected(g)
        else:
            assert _measured(g) == (None,) * 5
    assert calls.get("nvmlGpmSampleGet", 0) == sample_calls


def test_a_gpu_lost_in_a_gpm_call_is_lost(fake_driver, tmp_path):
    ticks, calls = _ticks(fake_driver, tmp_path, gpus=2, fail="nvmlGpmSampleGet:1=15@3")
    assert [[g["state"] for g in sample] for sample in ticks] == [
        ["ok", "ok"], ["ok", "ok"], ["ok", "lost"], ["ok", "lost"]]
    assert "GPU lost" in ticks[2][1]["error"]
    assert _measured(ticks[3][0]) == _expected(ticks[3][0])
    # the lost GPU's samples are freed when it is detached
    assert calls["nvmlGpmSampleAlloc"] == calls["nvmlGpmSampleFree"] == 4


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_a_driver_percentage_is_a_percentage_or_none(value):
    got = _percent(value)
    assert got is None or 0.0 <= got <= 100.0
    if 0.0 <= value <= 100.0:
        assert got == value
