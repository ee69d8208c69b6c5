"""GPM on the simulated NVML: the real backend reads a scenario GPU's performance monitor
(``gpm = true``) through the same calls it makes on a driver."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sim_support import BASE_SCENARIO, make_scenario, sim_backend

from gpuwatch.telemetry.errors import ScenarioError
from gpuwatch.telemetry.sim.catalog import resolve_scenario
from gpuwatch.telemetry.sim.gpm import DRAM_PER_BUSY, SM_PER_UTIL, TENSOR_PER_UTIL


def _gpus(gpm: tuple[bool, bool], **changes):
    gpus = [dict(g, gpm=flag) for g, flag in zip(BASE_SCENARIO["gpus"], gpm, strict=True)]
    gpus[1].update(memory_bus_width_bits=5120, max_memory_clock_mhz=2619)
    return make_scenario(gpus=gpus, **changes)


@settings(max_examples=25, deadline=None)
@given(gpm=st.tuples(st.booleans(), st.booleans()),
       util=st.floats(0, 100), busy=st.floats(0, 100),
       times=st.lists(st.floats(0, 600), min_size=2, max_size=5, unique=True))
def test_a_gpm_gpu_measures_from_its_second_tick_and_below_the_estimate(gpm, util, busy,
                                                                        times):
    processes = [dict(p, gpu_util_percent=util, memory_busy_percent=busy)
                 for p in BASE_SCENARIO["processes"]]
    with sim_backend(_gpus(gpm, processes=processes)) as backend:
        for tick, t in enumerate(sorted(times)):
            backend.clock.set_elapsed(t)
            for g in backend.sample().gpus:
                if not gpm[g.index] or tick == 0:
                    assert (g.dram_active_percent, g.measured_bandwidth_bytes_per_s,
                            g.tensor_active_percent) == (None, None, None)
                    continue
                assert g.dram_active_percent == pytest.approx(busy * DRAM_PER_BUSY)
                assert g.graphics_active_percent == pytest.approx(util)
                assert g.sm_active_percent == pytest.approx(util * SM_PER_UTIL)
                assert g.tensor_active_percent == pytest.approx(util * TENSOR_PER_UTIL)
                peak = g.peak_bandwidth_bytes_per_s
                assert g.measured_bandwidth_bytes_per_s == pytest.approx(
                    g.dram_active_percent / 100 * peak)
                assert g.measured_bandwidth_bytes_per_s <= \
                    g.estimated_bandwidth_bytes_per_s * DRAM_PER_BUSY + 0.01 * peak
        lib = backend._lib
    # one sample a GPM GPU and tick; every sample freed at close
    assert lib.calls["nvmlGpmSampleGet"] == len(times) * sum(gpm)
    assert lib._gpm_samples == {}


def test_a_scenario_fault_in_gpm_loses_that_ticks_figures_only():
    faults = [{"start_s": 2, "end_s": 3, "gpu": 1, "call": "nvmlGpmMetricsGet",
               "error": "TIMEOUT"}]
    with sim_backend(_gpus((False, True), faults=faults)) as backend:
        seen = []
        for t in range(5):
            backend.clock.set_elapsed(t)
            g = backend.sample().gpus[1]
            assert g.state.value == "ok"
            seen.append(g.measured_bandwidth_bytes_per_s is not None)
    assert seen == [False, True, False, True, True]


def test_the_demo_h100s_have_gpm_and_the_a100s_do_not():
    for name, has in (("multi-gpu-ddp", True), ("underused", True), ("bandwidth", False)):
        scenario = resolve_scenario(name)
        assert {g.gpm for g in scenario.gpus} == {has}, name
        assert all(("H100" in g.name) == g.gpm for g in scenario.gpus)


@pytest.mark.parametrize("value", ["yes", 1, [True]])
def test_gpm_must_be_true_or_false(value):
    gpus = [dict(BASE_SCENARIO["gpus"][0], gpm=value)]
    with pytest.raises(ScenarioError) as info:
        make_scenario(gpus=gpus, processes=[])
    assert info.value.field == "gpus[0].gpm"
