"""Shared fixtures. Helpers that tests import live in ``sim_support.py`` beside this file."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from sim_support import make_scenario, sim_backend

from gpuwatch.telemetry.nvml import NvmlBackend
from gpuwatch.telemetry.sim.scenario import Scenario

# Property-based tests: a quick profile for `make test` and CI, a long one for a local
# hunt (`pytest --hypothesis-profile=long`). Deadlines are off: speed is not asserted.
settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=2000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("GPUWATCH_HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def open_sim() -> Iterator:
    """open_sim(scenario, at_s) -> an opened backend, closed after the test."""
    opened: list[NvmlBackend] = []

    def factory(scenario: Scenario | None = None, at_s: float = 0.0, **kw: Any) -> NvmlBackend:
        backend = sim_backend(scenario or make_scenario(), at_s, **kw).open()
        opened.append(backend)
        return backend

    yield factory
    for b in opened:
        b.close()


@pytest.fixture(autouse=True)
def private_data_dir(tmp_path_factory, monkeypatch):
    """Sessions, settings and the window's log go to temporary folders, never the
    user's (child processes inherit them)."""
    monkeypatch.setenv("GPUWATCH_DATA_DIR", str(tmp_path_factory.mktemp("data")))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
