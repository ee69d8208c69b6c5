"""Opening a telemetry source: the real NVML, simulated GPUs running a scenario, or the
GPUs of many hosts read from a Prometheus server."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpuwatch.core.snapshot import BackendKind
from gpuwatch.telemetry.clock import Clock, ScaledClock, SteppedClock, WallClock
from gpuwatch.telemetry.nvml import NvmlBackend
from gpuwatch.telemetry.probes import ProbeDirectory
from gpuwatch.telemetry.sim.catalog import resolve_scenario
from gpuwatch.telemetry.sim.host import ScenarioHost
from gpuwatch.telemetry.sim.library import SimulatedNvml
from gpuwatch.telemetry.sim.probes import ScenarioProbes

if TYPE_CHECKING:
    from gpuwatch.core.gpu_selection import GpuSelection
    from gpuwatch.telemetry.prometheus.backend import PrometheusBackend
    from gpuwatch.telemetry.prometheus.selector import Matcher
    from gpuwatch.telemetry.selection import SelectedGpus

MAX_SPEED = "max"


@dataclass(frozen=True)
class SourceOptions:
    demo: str | None = None          # None: real NVML; else a scenario name or path ("" = default)
    time_scale: float | str = 1.0    # simulated only: virtual seconds per real second, or "max"
    loop: bool = False               # simulated only: start the scenario again at its end
    start_at_s: float = 0.0          # simulated only: virtual time to start from
    pcie_latency_s: float = 0.0      # simulated only: make PCIe reads block like real ones
    pcie_inline: bool = False        # read PCIe in the sample itself (one-shot snapshots)
    prometheus: str | None = None    # a Prometheus server's base URL: read GPUs from it
    match: tuple[Matcher, ...] = ()  # Prometheus only: the series to read (--match)
    gpus: GpuSelection | None = None  # NVML and simulated only: show just these (-i/--id)


def make_clock(time_scale: float | str, start_at_s: float = 0.0) -> Clock:
    if time_scale == MAX_SPEED:
        return SteppedClock(start_at_s)
    return ScaledClock(float(time_scale), start_at_s)


def open_backend(options: SourceOptions) -> NvmlBackend | PrometheusBackend | SelectedGpus:
    """An opened backend. Raises NvmlUnavailableError (PrometheusUnavailableError for a
    Prometheus server), ScenarioError or GpuSelectionError with a plain reason."""
    backend = _open(options)
    if options.gpus is None or not isinstance(backend, NvmlBackend):
        return backend
    from gpuwatch.telemetry.selection import SelectedGpus

    return SelectedGpus(backend, options.gpus)


def _open(options: SourceOptions) -> NvmlBackend | PrometheusBackend:
    if options.prometheus is not None:
        from gpuwatch.telemetry.prometheus.backend import PrometheusBackend

        return PrometheusBackend(options.prometheus, options.match).open()
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
