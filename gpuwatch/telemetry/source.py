"""Opening a telemetry source: the real NVML, or simulated GPUs running a scenario."""

from __future__ import annotations

from dataclasses import dataclass

from gpuwatch.core.snapshot import BackendKind
from gpuwatch.telemetry.clock import Clock, ScaledClock, SteppedClock, WallClock
from gpuwatch.telemetry.nvml import NvmlBackend
from gpuwatch.telemetry.probes import ProbeDirectory
from gpuwatch.telemetry.sim.catalog import resolve_scenario
from gpuwatch.telemetry.sim.host import ScenarioHost
from gpuwatch.telemetry.sim.library import SimulatedNvml
from gpuwatch.telemetry.sim.probes import ScenarioProbes

MAX_SPEED = "max"


@dataclass(frozen=True)
class SourceOptions:
    demo: str | None = None          # None: real NVML; else a scenario name or path ("" = default)
    time_scale: float | str = 1.0    # simulated only: virtual seconds per real second, or "max"
    loop: bool = False               # simulated only: start the scenario again at its end
    start_at_s: float = 0.0          # simulated only: virtual time to start from
    pcie_latency_s: float = 0.0      # simulated only: make PCIe reads block like real ones
    pcie_inline: bool = False        # read PCIe in the sample itself (one-shot snapshots)


def make_clock(time_scale: float | str, start_at_s: float = 0.0) -> Clock:
    if time_scale == MAX_SPEED:
        return SteppedClock(start_at_s)
    return ScaledClock(float(time_scale), start_at_s)


def open_backend(options: SourceOptions) -> NvmlBackend:
    """An opened backend. Raises NvmlUnavailableError or ScenarioError with a plain reason."""
    if options.demo is None:
        return NvmlBackend(clock=WallClock(), pcie_thread=not options.pcie_inline,
                           probes=ProbeDirectory()).open()
    scenario = resolve_scenario(options.demo or None)
    clock = make_clock(options.time_scale, options.start_at_s)
    lib = SimulatedNvml(scenario, clock, loop=options.loop,
                        pcie_latency_s=options.pcie_latency_s)
    probes = ScenarioProbes(lib)
    backend = NvmlBackend(lib, host=ScenarioHost(lib, clock), clock=clock,
                          probes=probes if probes else None,
                          scenario_duration_s=scenario.duration_s,
                          kind=BackendKind.SIMULATED, scenario=scenario.name,
                          pcie_thread=options.pcie_latency_s > 0 and not options.pcie_inline)
    return backend.open()
