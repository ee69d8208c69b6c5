"""The sampler thread on virtual clocks."""

from __future__ import annotations

import threading

import pytest
from sim_support import make_scenario, sim_backend

from gpuwatch.telemetry.clock import ScaledClock, SteppedClock
from gpuwatch.telemetry.sampler import Sampler


def test_stepped_clock_runs_the_whole_scenario_without_sleeping():
    backend = sim_backend(make_scenario()).open()
    got, done = [], threading.Event()
    sampler = Sampler(backend, 1.0, got.append, until_elapsed_s=600, on_finished=done.set)
    sampler.start()
    assert done.wait(30)
    backend.close()
    assert len(got) == 601
    stamps = [s.timestamp_s - got[0].timestamp_s for s in got]
    assert stamps[:3] == [0, 1, 2] and stamps[-1] == 600
    assert got[100].gpus[0].memory.used_bytes > got[0].gpus[0].memory.used_bytes


def test_errors_are_reported_and_sampling_goes_on():
    backend = sim_backend(make_scenario()).open()
    calls = {"n": 0}
    real = backend.sample

    def flaky():
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("boom")
        return real()

    backend.sample = flaky
    got, errors, done = [], [], threading.Event()
    Sampler(backend, 1.0, got.append, errors.append, until_elapsed_s=4,
            on_finished=done.set).start()
    assert done.wait(10)
    backend.close()
    assert len(got) == 4 and [str(e) for e in errors] == ["boom"]


def test_stop_ends_a_real_time_sampler_promptly():
    backend = sim_backend(make_scenario()).open()
    backend.clock = ScaledClock(1.0)
    got = []
    sampler = Sampler(backend, 5.0, got.append).start()
    while not got:
        threading.Event().wait(0.01)
    sampler.stop(timeout_s=5)
    backend.close()
    assert not sampler.running and len(got) == 1


def test_scaled_clock_runs_faster_than_real_time():
    clock = ScaledClock(1000.0)
    stop = threading.Event()
    assert clock.sleep_until(2.0, stop)          # two virtual seconds: ~2 ms of real time
    assert clock.elapsed_s() >= 2.0


def test_stepped_clock_jumps_and_respects_stop():
    clock = SteppedClock(10)
    stop = threading.Event()
    assert clock.sleep_until(15, stop) and clock.elapsed_s() == 15
    stop.set()
    assert not clock.sleep_until(20, stop)


@pytest.mark.parametrize("interval", [0, 0.05, -1])
def test_interval_below_the_minimum_is_refused(interval):
    backend = sim_backend(make_scenario())
    with pytest.raises(ValueError, match="at least"):
        Sampler(backend, interval, lambda s: None)


@pytest.mark.parametrize("late_s", [0.0, 0.03, 0.5, 2.2])
def test_a_run_counts_its_ticks_from_the_callers_start(late_s):
    """A run of D seconds every I seconds takes D / I + 1 samples, however late the thread
    starts after the caller took its start time (as `record --duration` does): the ticks
    fall at the start + k I, the last at the start + D. Ticks already past when the
    thread starts are skipped, not taken late."""
    backend = sim_backend(make_scenario(), at_s=late_s).open()
    got, done = [], threading.Event()
    Sampler(backend, 1.0, got.append, until_elapsed_s=5.0, on_finished=done.set,
            start_elapsed_s=0.0).start()
    assert done.wait(30)
    backend.close()
    stamps = [s.timestamp_s - got[0].timestamp_s + late_s for s in got]
    assert stamps[-1] == pytest.approx(5.0, abs=1e-3)
    assert len(got) == 6 - int(late_s)
