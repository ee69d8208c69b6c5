"""CPU cost of one sample on simulated GPUs, against the bare NVML calls it makes.

The floor is the same NVML calls made in a plain loop with nothing done with their
results; the ratio is what gpuwatch's translation, host lookup and snapshot building add.
Run: .venv/bin/python benchmarks/sampler.py [--samples N]
"""

from __future__ import annotations

import argparse
import time

import pynvml

from gpuwatch.core.history import History
from gpuwatch.core.snapshot import BackendKind
from gpuwatch.telemetry.clock import SteppedClock
from gpuwatch.telemetry.nvml import NvmlBackend
from gpuwatch.telemetry.sim.host import ScenarioHost
from gpuwatch.telemetry.sim.library import SimulatedNvml
from gpuwatch.telemetry.sim.scenario import parse_scenario


def scenario(gpus: int, processes: int) -> dict:
    return {
        "schema": "gpuwatch.scenario/1", "name": f"bench-{gpus}x{processes}",
        "duration_s": 100000,
        "gpus": [{"name": "NVIDIA H100 80GB HBM3", "memory_total": "80GiB",
                  "memory_bus_width_bits": 5120, "max_memory_clock_mhz": 2619,
                  "nvlink_links": 18, "nvlink_bytes_per_s": "150GB"} for _ in range(gpus)],
        "processes": [{"pid": 10000 + k, "gpu": k % gpus, "name": "python",
                       "cmdline": ["python", "train.py", f"--rank={k}"], "user": "alice",
                       "memory": {"generator": "sawtooth", "low": "100MiB", "high": "1GiB",
                                  "period_s": 3},
                       "gpu_util_percent": 1, "memory_busy_percent": 1}
                      for k in range(processes)],
    }


def floor_sample(lib: SimulatedNvml, handles: list, nvlink_fields: list) -> None:
    """Exactly the NVML calls NvmlBackend.sample makes per tick, results unused."""
    for h in handles:
        lib.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2)
        lib.nvmlDeviceGetUtilizationRates(h)
        lib.nvmlDeviceGetPowerUsage(h)
        lib.nvmlDeviceGetFieldValues(h, nvlink_fields)
        lib.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)
        lib.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_GRAPHICS)
        lib.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM)
        lib.nvmlDeviceGetComputeRunningProcesses(h)
        lib.nvmlDeviceGetGraphicsRunningProcesses(h)


def measure(gpus: int, processes: int, samples: int) -> None:
    s = parse_scenario(scenario(gpus, processes), "bench")
    clock = SteppedClock()
    lib = SimulatedNvml(s, clock)
    backend = NvmlBackend(lib, ScenarioHost(lib, clock), clock, kind=BackendKind.SIMULATED,
                          pcie_thread=True, pcie_interval_s=3600).open()
    handles = [lib.nvmlDeviceGetHandleByIndex(i) for i in range(gpus)]
    all_links = 0xFFFFFFFF   # the aggregate scope the backend asks for
    fields = [(pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, all_links),
              (pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, all_links)]
    history = History()

    def timed(fn) -> float:
        best = float("inf")
        for _ in range(3):   # best of three rounds, each on fresh virtual times
            start = time.process_time()
            for _ in range(samples):
                clock.set_elapsed(clock.elapsed_s() + 1.0)   # a new time: no cached state
                fn()
            best = min(best, (time.process_time() - start) / samples)
        return best

    floor = timed(lambda: floor_sample(lib, handles, fields))
    full = timed(backend.sample)
    with_history = timed(lambda: history.append(backend.sample()))
    snap = backend.sample()
    backend.close()
    assert sum(len(g.processes) for g in snap.gpus) == processes
    print(f"{gpus} GPUs x {processes} processes ({processes // gpus} per GPU):")
    print(f"  bare NVML calls (floor)       {floor * 1e3:7.3f} ms per sample")
    print(f"  NvmlBackend.sample()          {full * 1e3:7.3f} ms per sample  "
          f"ratio {full / floor:4.2f}x the floor")
    print(f"  sample() + History.append()   {with_history * 1e3:7.3f} ms per sample  "
          f"ratio {with_history / floor:4.2f}x the floor")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=300)
    args = parser.parse_args()
    print("CPU time (process_time), best of 3 rounds; simulated NVML, stepped virtual clock.")
    for gpus, processes in ((8, 64), (8, 512)):
        measure(gpus, processes, args.samples)


if __name__ == "__main__":
    main()
