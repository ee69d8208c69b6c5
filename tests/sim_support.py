"""Small scenarios and simulated backends on a stepped virtual clock, for tests."""

from __future__ import annotations

import copy
from typing import Any

from gpuwatch.core.snapshot import BackendKind
from gpuwatch.telemetry.clock import SteppedClock
from gpuwatch.telemetry.nvml import NvmlBackend
from gpuwatch.telemetry.sim.host import ScenarioHost
from gpuwatch.telemetry.sim.library import SimulatedNvml
from gpuwatch.telemetry.sim.scenario import Scenario, parse_scenario

BASE_SCENARIO: dict[str, Any] = {
    "schema": "gpuwatch.scenario/1",
    "name": "test",
    "description": "A small scenario for tests.",
    "duration_s": 600,
    "gpus": [
        {"name": "NVIDIA A100-SXM4-80GB", "memory_total": "80GiB", "memory_base": "512MiB",
         "memory_reserved": "256MiB", "memory_bus_width_bits": 5120,
         "max_memory_clock_mhz": 1593},
        {"name": "NVIDIA A100-SXM4-80GB", "memory_total": "80GiB"},
    ],
    "processes": [
        {"pid": 1001, "gpu": 0, "name": "python", "cmdline": ["python", "train.py"],
         "user": "alice", "memory": [[0, "1GiB"], [100, "11GiB"]], "gpu_util_percent": 90,
         "memory_busy_percent": 50},
        {"pid": 1002, "gpu": 1, "name": "Xorg", "kind": "graphics", "memory": "300MiB"},
    ],
}


def scenario_dict(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE_SCENARIO)
    data.update(changes)
    return data


def make_scenario(**changes: Any) -> Scenario:
    return parse_scenario(scenario_dict(**changes), "test.toml")


def sim_backend(scenario: Scenario, at_s: float = 0.0, **backend_kwargs: Any) -> NvmlBackend:
    clock = SteppedClock(at_s)
    lib = SimulatedNvml(scenario, clock)
    backend_kwargs.setdefault("pcie_thread", False)
    backend_kwargs.setdefault("host", ScenarioHost(lib, clock))
    return NvmlBackend(lib, clock=clock, kind=BackendKind.SIMULATED,
                       scenario=scenario.name, **backend_kwargs)
