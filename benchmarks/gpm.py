"""What reading GPM (the GPU performance monitor) adds to a sample, in CPU time.

Real rows: the real ``nvidia-ml-py`` binding over the fake driver library
(tests/fakenvml), 8 GPUs with 8 real ``sleep`` processes each, read through psutil and
/proc, once with GPM on every GPU (``FAKENVML_GPM=all``) and once on none, in the same
run. The difference is gpuwatch's side of one GPM sample and one metrics call per GPU
and tick (the driver's own time is not in it: a fake call answers in well under a
microsecond, a real one makes an ioctl).

Pair rows: one GPU's GPM pair (``nvmlGpmSampleGet`` + ``nvmlGpmMetricsGet`` for four
metrics) as gpuwatch makes it (one request structure reused) against the binding's
documented way (a new ``c_nvmlGpmMetricsGet_t`` each call: 477 metric slots, ~19 KiB).

Simulated rows: the simulated NVML, the 8-GPU ``multi-gpu-ddp`` scenario (H100s, GPM)
against the same scenario with GPM off.

Run:  .venv/bin/python benchmarks/gpm.py [--samples N]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import tempfile
import time

from sampler import REPO, build_fake_driver, fake_driver_env, start_sleepers, stop

from gpuwatch.core.snapshot import BackendKind
from gpuwatch.telemetry.clock import SteppedClock
from gpuwatch.telemetry.nvml import NvmlBackend
from gpuwatch.telemetry.sim.catalog import resolve_scenario
from gpuwatch.telemetry.sim.host import ScenarioHost
from gpuwatch.telemetry.sim.library import SimulatedNvml

GPUS, PER_GPU = 8, 8

CHILD = r"""
import json, sys, time, ctypes
import pynvml
from gpuwatch.telemetry.nvml import NvmlBackend
from gpuwatch.telemetry.nvml.gpm import METRIC_IDS

samples = int(sys.argv[1])

def best(fn, n):
    out = float("inf")
    for _ in range(3):
        start = time.process_time()
        for _ in range(n):
            fn()
        out = min(out, (time.process_time() - start) / n)
    return out

backend = NvmlBackend(pcie_thread=False).open()
for _ in range(3):
    backend.sample()
result = {"sample_s": best(backend.sample, samples),
          "gpm_gpus": sum(d.gpm is not None for d in backend._devices)}
backend.close()

pair = {}
if result["gpm_gpus"]:
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    a, b = pynvml.nvmlGpmSampleAlloc(), pynvml.nvmlGpmSampleAlloc()
    pynvml.nvmlGpmSampleGet(h, a)
    reused = pynvml.c_nvmlGpmMetricsGet_t()
    reused.version, reused.numMetrics = pynvml.NVML_GPM_METRICS_GET_VERSION, len(METRIC_IDS)
    for i, m in enumerate(METRIC_IDS):
        reused.metrics[i].metricId = m

    def gpuwatch_way():
        pynvml.nvmlGpmSampleGet(h, b)
        reused.sample1, reused.sample2 = a, b
        pynvml.nvmlGpmMetricsGet(reused)
        return [reused.metrics[i].value for i in range(len(METRIC_IDS))]

    def fresh_way():
        pynvml.nvmlGpmSampleGet(h, b)
        request = pynvml.c_nvmlGpmMetricsGet_t()
        request.version, request.numMetrics = pynvml.NVML_GPM_METRICS_GET_VERSION, 4
        request.sample1, request.sample2 = a, b
        for i, m in enumerate(METRIC_IDS):
            request.metrics[i].metricId = m
        pynvml.nvmlGpmMetricsGet(request)
        return [request.metrics[i].value for i in range(len(METRIC_IDS))]

    pair = {"reused_s": best(gpuwatch_way, samples * 8), "fresh_s": best(fresh_way, samples * 8)}
    pynvml.nvmlGpmSampleFree(a)
    pynvml.nvmlGpmSampleFree(b)
    pynvml.nvmlShutdown()
result.update(pair)
print(json.dumps(result))
"""


def measure_real(library, pids: list[int], gpm: str, samples: int) -> dict:
    with tempfile.TemporaryDirectory() as probes:
        env = fake_driver_env(library, GPUS, pids, probes)
        env["FAKENVML_GPM"] = gpm
        env["PYTHONPATH"] = str(REPO)
        done = subprocess.run([sys.executable, "-c", CHILD, str(samples)], env=env,
                              capture_output=True, text=True, check=True, cwd=REPO)
    return json.loads(done.stdout)


def measure_simulated(gpm: bool, samples: int) -> float:
    scenario = resolve_scenario("multi-gpu-ddp")
    scenario = dataclasses.replace(scenario, gpus=tuple(
        dataclasses.replace(g, gpm=gpm) for g in scenario.gpus))
    clock = SteppedClock(0.0)
    lib = SimulatedNvml(scenario, clock)
    backend = NvmlBackend(lib, ScenarioHost(lib, clock), clock, kind=BackendKind.SIMULATED,
                          pcie_thread=False).open()
    t = [100.0]

    def tick() -> None:
        t[0] += 1.0
        clock.set_elapsed(t[0])
        backend.sample()

    for _ in range(3):
        tick()
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        for _ in range(samples):
            tick()
        best = min(best, (time.process_time() - start) / samples)
    backend.close()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=300)
    args = parser.parse_args()
    library = build_fake_driver()
    sleepers = start_sleepers(GPUS * PER_GPU)
    try:
        pids = [c.pid for c in sleepers]
        without = measure_real(library, pids, "none", args.samples)
        with_gpm = measure_real(library, pids, "all", args.samples)
    finally:
        stop(sleepers)
    added = with_gpm["sample_s"] - without["sample_s"]
    print(f"real path, {GPUS} GPUs x {PER_GPU} processes (fake driver), CPU per sample:")
    print(f"  without GPM     {without['sample_s'] * 1e6:8.0f} µs")
    print(f"  GPM on {with_gpm['gpm_gpus']} GPUs   {with_gpm['sample_s'] * 1e6:8.0f} µs  "
          f"(+{added * 1e6:.0f} µs, +{added / GPUS * 1e6:.1f} µs per GPU, "
          f"x{with_gpm['sample_s'] / without['sample_s']:.2f})")
    print("one GPU's GPM pair through the binding (sample + 4 metrics):")
    print(f"  request reused  {with_gpm['reused_s'] * 1e6:8.1f} µs")
    print(f"  request new     {with_gpm['fresh_s'] * 1e6:8.1f} µs  "
          f"(x{with_gpm['fresh_s'] / with_gpm['reused_s']:.1f} the reused one)")
    off, on = measure_simulated(False, args.samples), measure_simulated(True, args.samples)
    print(f"simulated, multi-gpu-ddp ({GPUS} H100s), CPU per sample:")
    print(f"  GPM off         {off * 1e6:8.0f} µs")
    print(f"  GPM on          {on * 1e6:8.0f} µs  (x{on / off:.2f})")


if __name__ == "__main__":
    main()
