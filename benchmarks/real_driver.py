"""gpuwatch's cost on a real NVIDIA driver: what the fake driver library cannot show.

Run on a machine with an NVIDIA GPU, PyTorch with CUDA, nvidia-ml-py and psutil (the
window's packages are not needed), from the repository's root:

    PYTHONPATH=. python3 benchmarks/real_driver.py [--seconds 60] [--json OUT.json]

It starts four processes that hold 1 GiB on GPU 0 each, in four ways (a fill kernel, or
a bf16 matrix product too, with CUDA's lazy or eager module loading) and attach the
probe, then measures, one section after another (a section that fails prints its
traceback and the others go on):

- the driver's own time per NVML call gpuwatch makes each sample (PCIe blocks ~20 ms);
- CUDA's per-process overhead outside PyTorch (NVML's figure for the process less
  ``torch.cuda.memory_reserved()``) beside the budget estimator's framework overhead;
- one ``NvmlBackend.sample()`` (PCIe on its own thread, as the app runs it) against a
  bare pynvml + psutil loop, CPU per sample;
- ``gpuwatch record --interval 1`` against the bare loop over ``--seconds``, % of a core;
- start-up CPU of ``snapshot --json`` and ``--version`` beside ``python -c pass`` and a
  bare ``nvmlInit``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]

CHILD = r"""
import json, os, signal, sys, torch
x = torch.empty(2**30, dtype=torch.uint8, device="cuda")
x.fill_(1)
if sys.argv[1] == "matmul":
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    (a @ a).sum().item()
torch.cuda.synchronize()
from gpuwatch import probe
probe.attach()
print(json.dumps({"pid": os.getpid(), "work": sys.argv[1],
                  "loading": os.environ.get("CUDA_MODULE_LOADING", "lazy (default)"),
                  "reserved": torch.cuda.memory_reserved(),
                  "torch": torch.__version__, "cuda": torch.version.cuda}), flush=True)
signal.pause()
"""
KINDS = (("fill", {}), ("matmul", {}), ("fill", {"CUDA_MODULE_LOADING": "EAGER"}),
         ("matmul", {"CUDA_MODULE_LOADING": "EAGER"}))


class Report:
    """Sections run in turn; each one's figures go to the JSON file as it ends."""

    def __init__(self, json_path: Path | None):
        self.json_path = json_path
        self.figures: dict[str, Any] = {}

    def section(self, name: str, fn: Callable[[], Any]) -> Any:
        print(f"\n== {name} ==", flush=True)
        start = time.monotonic()
        try:
            result = fn()
        except Exception:          # one machine, one pass: report and go on
            traceback.print_exc()
            result = {"error": traceback.format_exc()[-1500:]}
        print(f"   ({time.monotonic() - start:.1f} s)", flush=True)
        self.figures[name] = result
        if self.json_path is not None:
            self.json_path.write_text(json.dumps(self.figures, indent=1, default=str))
        return result


def private_env(tmp: str) -> dict[str, str]:
    """This process's environment with settings, state and probes of the run's own."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(REPO), env.get("PYTHONPATH"))))
    env["GPUWATCH_PROBE_DIR"] = os.path.join(tmp, "probes")
    env["GPUWATCH_DATA_DIR"] = os.path.join(tmp, "data")
    os.makedirs(env["GPUWATCH_PROBE_DIR"], mode=0o700, exist_ok=True)
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "XDG_DATA_HOME"):
        env[name] = os.path.join(tmp, name.lower())
        os.makedirs(env[name], mode=0o700, exist_ok=True)
    return env


def call_latencies() -> dict:
    """Median and p95 wall time, and median CPU, of each NVML call of a sample."""
    import pynvml

    from gpuwatch.telemetry.nvml.readings import NVLINK_ALL_LINKS

    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    calls = {
        "GetMemoryInfo (v2)": lambda: pynvml.nvmlDeviceGetMemoryInfo(
            h, version=pynvml.nvmlMemory_v2),
        "GetUtilizationRates": lambda: pynvml.nvmlDeviceGetUtilizationRates(h),
        "GetPowerUsage": lambda: pynvml.nvmlDeviceGetPowerUsage(h),
        "GetFieldValues (NVLink)": lambda: pynvml.nvmlDeviceGetFieldValues(h, NVLINK_ALL_LINKS),
        "GetTemperature": lambda: pynvml.nvmlDeviceGetTemperature(
            h, pynvml.NVML_TEMPERATURE_GPU),
        "GetClockInfo": lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_GRAPHICS),
        "GetComputeRunningProcesses": lambda: pynvml.nvmlDeviceGetComputeRunningProcesses(h),
        "GetGraphicsRunningProcesses": lambda: pynvml.nvmlDeviceGetGraphicsRunningProcesses(h),
        "GetPcieThroughput": lambda: pynvml.nvmlDeviceGetPcieThroughput(
            h, pynvml.NVML_PCIE_UTIL_TX_BYTES),
    }
    out: dict[str, Any] = {}
    for name, fn in calls.items():
        walls, cpus = [], []
        try:
            fn()
            for _ in range(20 if "Pcie" in name else 200):
                w0, c0 = time.perf_counter(), time.thread_time()
                fn()
                walls.append((time.perf_counter() - w0) * 1e6)
                cpus.append((time.thread_time() - c0) * 1e6)
        except pynvml.NVMLError as exc:
            out[name] = str(exc)
            print(f"  {name:<30}{exc}")
            continue
        walls.sort()
        out[name] = {"wall_us": statistics.median(walls),
                     "wall_p95_us": walls[int(0.95 * len(walls)) - 1],
                     "cpu_us": statistics.median(cpus)}
        print(f"  {name:<30}wall {out[name]['wall_us']:9.1f} µs (p95 "
              f"{out[name]['wall_p95_us']:9.1f})   CPU {out[name]['cpu_us']:8.1f} µs")
    pynvml.nvmlShutdown()
    return out


def start_holders(env: dict[str, str], children: list[subprocess.Popen]) -> list[dict]:
    """Start the GPU-holding processes (into ``children``) and read what each holds."""
    for work, extra in KINDS:
        children.append(subprocess.Popen([sys.executable, "-c", CHILD, work],
                                         stdout=subprocess.PIPE, text=True,
                                         env={**env, **extra}))
    return [json.loads(child.stdout.readline())  # type: ignore[union-attr]
            for child in children]


def context_overhead(rows: list[dict]) -> list[dict]:
    import pynvml

    from gpuwatch.budget import estimator

    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    used = {p.pid: p.usedGpuMemory for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)}
    pynvml.nvmlShutdown()
    for r in rows:
        r["nvml_bytes"] = used.get(r["pid"])
        r["overhead_mib"] = (r["nvml_bytes"] - r["reserved"]) / 2**20 \
            if r["nvml_bytes"] is not None else None
        print(f"  {r['work']:<7}{r['loading']:<16}PyTorch reserved {r['reserved'] / 2**20:7.0f} "
              f"MiB, NVML {(r['nvml_bytes'] or 0) / 2**20:7.0f} MiB: outside PyTorch "
              f"{r['overhead_mib']:6.0f} MiB   (torch {r['torch']}, CUDA {r['cuda']})")
    print(f"  the estimator's framework overhead: CUDA context "
          f"{estimator.CUDA_CONTEXT_BYTES / 2**20:.0f} MiB + cuBLAS workspace "
          f"{estimator.CUBLAS_WORKSPACE_BYTES / 2**20:.0f} MiB")
    return rows


def sample_cost() -> dict:
    from sampler import BareLoop, _best_of_three

    from gpuwatch.telemetry.clock import WallClock
    from gpuwatch.telemetry.nvml import NvmlBackend
    from gpuwatch.telemetry.probes import ProbeDirectory

    bare = BareLoop()
    bare.sample()
    floor = _best_of_three(bare.sample, 300)
    bare.close()
    backend = NvmlBackend(clock=WallClock(), pcie_thread=True, pcie_interval_s=3600,
                          probes=ProbeDirectory()).open()
    snap = backend.sample()
    full = _best_of_three(backend.sample, 300)
    backend.close()
    probed = sum(snap.probe(p.pid) is not None for p in snap.gpus[0].processes)
    out = {"bare_ms": floor * 1e3, "sample_ms": full * 1e3, "ratio": full / floor,
           "processes": len(snap.gpus[0].processes), "probed": probed}
    print(f"  bare pynvml + psutil loop {out['bare_ms']:.3f} ms, NvmlBackend.sample() "
          f"{out['sample_ms']:.3f} ms CPU a sample: {out['ratio']:.2f}x; "
          f"{out['processes']} processes listed, {probed} with their probe's report")
    return out


def steady(env: dict[str, str], tmp: str, seconds: float) -> dict:
    from steady_cpu import measure

    py = sys.executable
    out = {}
    for label, argv in (
            ("bare pynvml + psutil loop", [py, str(REPO / "benchmarks" / "steady_cpu.py"),
                                           "--bare-loop", "--interval", "1"]),
            ("record --interval 1", [py, "-m", "gpuwatch", "record", "--interval", "1",
                                     "--no-save"])):
        out[label] = measure(label.split()[0], argv, env, tmp, 5.0, seconds)
        print(f"  {label:<28}{out[label]:6.3f} % of a core", flush=True)
    return out


def child_cpu(argv: list[str], env: dict[str, str], runs: int = 5) -> dict:
    cpus, walls = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        w0 = time.monotonic()
        subprocess.run(argv, env=env, capture_output=True, check=False)
        walls.append(time.monotonic() - w0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return {"cpu_s": statistics.median(cpus), "wall_s": statistics.median(walls)}


def startup(env: dict[str, str]) -> dict:
    py = sys.executable
    out = {}
    for label, argv in (("python -c pass", [py, "-c", "pass"]),
                        ("import pynvml; nvmlInit()",
                         [py, "-c", "import pynvml; pynvml.nvmlInit()"]),
                        ("gpuwatch --version", [py, "-m", "gpuwatch", "--version"]),
                        ("gpuwatch snapshot --json",
                         [py, "-m", "gpuwatch", "snapshot", "--json"])):
        out[label] = child_cpu(argv, env)
        print(f"  {label:<28}CPU {out[label]['cpu_s']:.3f} s, wall {out[label]['wall_s']:.3f} s"
              " (median of 5)")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0,
                        help="the steady runs' window (default 60)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    report = Report(args.json)
    tmp = tempfile.mkdtemp(prefix="gpuwatch-real-")
    env = private_env(tmp)
    os.environ.update({k: env[k] for k in ("GPUWATCH_PROBE_DIR", "GPUWATCH_DATA_DIR")})
    children: list[subprocess.Popen] = []
    try:
        report.section("NVML calls on the real driver", call_latencies)

        report.section("CUDA's overhead per process, outside PyTorch",
                       lambda: context_overhead(start_holders(env, children)))
        report.section("one sample", sample_cost)
        report.section("steady CPU", lambda: steady(env, tmp, args.seconds))
        report.section("start-up", lambda: startup(env))
    finally:
        for child in children:
            child.kill()
            child.wait()


if __name__ == "__main__":
    main()
