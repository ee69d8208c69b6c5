"""XID errors over the real binding and the fake driver: the backend's event set drains
what the driver reported since the last tick and keeps each GPU's last XID."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

TICKS = 5
SAMPLER = r"""
import json, sys
from gpuwatch.telemetry.nvml import NvmlBackend
backend = NvmlBackend(pcie_thread=False).open()
ticks = [[(g.last_xid, g.state.value) for g in backend.sample().gpus]
         for _ in range(int(sys.argv[1]))]
backend.close()
print(json.dumps(ticks))
"""


def _ticks(fake_driver, **fake) -> list:
    done = subprocess.run([sys.executable, "-c", SAMPLER, str(TICKS)], capture_output=True,
                          text=True, check=False, cwd=fake_driver.folder,
                          env=fake_driver.env(**fake))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return json.loads(done.stdout)


@settings(max_examples=4, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reports=st.lists(st.tuples(st.integers(0, 2), st.integers(1, 200),
                                  st.integers(1, TICKS)), max_size=6))
def test_each_gpu_shows_its_last_xid_from_the_tick_it_arrives(fake_driver, reports):
    spec = ",".join(f"{gpu}:{xid}@{tick}" for gpu, xid, tick in reports)
    ticks = _ticks(fake_driver, gpus=3, procs=0, xid=spec)
    for tick, sample in enumerate(ticks, start=1):
        for gpu, (last, state) in enumerate(sample):
            # in the order they arrive (within a tick, as listed): the last one stays
            arrived = [xid for _, (g, xid, at) in sorted(enumerate(reports),
                                                         key=lambda item: (item[1][2], item[0]))
                       if g == gpu and at <= tick]
            assert state == "ok"
            assert last == (arrived[-1] if arrived else None)


@pytest.mark.parametrize("fail", [
    "nvmlEventSetCreate=3",               # a driver without events
    "nvmlDeviceRegisterEvents=4",         # no permission to register
    "nvmlEventSetWait_v2=999",            # a wait that fails: tried again next tick
])
def test_no_events_means_no_xid_figure_and_nothing_else_lost(fake_driver, fail):
    ticks = _ticks(fake_driver, gpus=2, procs=0, xid="1:79", fail=fail)
    assert ticks == [[[None, "ok"], [None, "ok"]]] * TICKS


def test_a_lost_gpu_keeps_the_xid_that_came_with_it(fake_driver):
    ticks = _ticks(fake_driver, gpus=2, procs=0, xid="1:79@2",
                   fail="nvmlDeviceGetMemoryInfo_v2:1=15@3")
    assert ticks[0] == [[None, "ok"], [None, "ok"]]
    assert ticks[1] == [[None, "ok"], [79, "ok"]]
    assert ticks[2] == [[None, "ok"], [79, "lost"]]
