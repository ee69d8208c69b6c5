"""CPU cost of one sample, simulated and real, against a bare loop making the same reads.

Simulated rows: the simulated NVML on a stepped virtual clock, with the scenario's host
(cached answers). The floor is the same NVML calls made in a plain loop with nothing
done with their results; the ratio is what gpuwatch's translation, host lookup and
snapshot building add.

Real rows: the real ``nvidia-ml-py`` binding over the fake driver library
(tests/fakenvml, built with gcc) listing real ``sleep`` processes, read through psutil
and /proc, with an existing (empty) probe folder: the path a real machine takes, minus
the driver's own time (a fake call answers in well under a microsecond). The floor is a
bare pynvml + psutil loop: the same NVML readings, and for each pid psutil's name,
command line, user, RSS and CPU % (one ``psutil.Process`` kept per pid, ``oneshot``).
They run in a child process, because the loader reads ``LD_LIBRARY_PATH`` at start.

Run:  .venv/bin/python benchmarks/sampler.py [--samples N] [--real-samples N] [--profile]
Another checkout's gpuwatch (e.g. a `git worktree` of an older commit) is measured
with PYTHONPATH=<that checkout> in front, or beside this one, each row in turn, with
``--baseline <that checkout>`` (every measurement then runs in a child process).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pynvml

from gpuwatch.core.history import History
from gpuwatch.core.snapshot import BackendKind
from gpuwatch.telemetry.clock import SteppedClock
from gpuwatch.telemetry.nvml import NvmlBackend
from gpuwatch.telemetry.sim.host import ScenarioHost
from gpuwatch.telemetry.sim.library import SimulatedNvml
from gpuwatch.telemetry.sim.scenario import parse_scenario

REPO = Path(__file__).resolve().parents[1]
SHAPES_SIMULATED = ((8, 64), (8, 512))   # GPUs x processes in all
SHAPES_REAL = ((8, 8), (8, 64))    # GPUs x processes per GPU


def _best_of_three(fn, samples: int, before_each=None) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        for _ in range(samples):
            if before_each is not None:
                before_each()
            fn()
        best = min(best, (time.process_time() - start) / samples)
    return best


def _row(label: str, seconds: float, floor: float | None = None) -> str:
    ratio = f"  ratio {seconds / floor:5.2f}x the floor" if floor else ""
    return f"  {label:<34}{seconds * 1e3:8.3f} ms per sample{ratio}"


# -- simulated ------------------------------------------------------------------------

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


def measure_simulated(gpus: int, processes: int, samples: int) -> dict:
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

    def tick() -> None:      # a new virtual time: no cached state
        clock.set_elapsed(clock.elapsed_s() + 1.0)

    floor = _best_of_three(lambda: floor_sample(lib, handles, fields), samples, tick)
    full = _best_of_three(backend.sample, samples, tick)
    with_history = _best_of_three(lambda: history.append(backend.sample()), samples, tick)
    snap = backend.sample()
    backend.close()
    assert sum(len(g.processes) for g in snap.gpus) == processes
    return {"floor": floor, "sample": full, "with_history": with_history}


# -- real: the fake driver and real processes ------------------------------------------

def build_fake_driver() -> Path:
    """tests/fakenvml's library, built (once) into build/fakenvml."""
    spec = importlib.util.spec_from_file_location(
        "fakenvml_build", REPO / "tests" / "fakenvml" / "build.py")
    helper = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helper)
    return helper.build(REPO / "build" / "fakenvml")


def fake_driver_env(library: Path, gpus: int, pids: list[int], probe_dir: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAKENVML_")}
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        p for p in (str(library), env.get("LD_LIBRARY_PATH")) if p)
    env["FAKENVML_GPUS"] = str(gpus)
    env["FAKENVML_PIDS"] = ",".join(map(str, pids))
    env["GPUWATCH_PROBE_DIR"] = probe_dir
    return env


def start_sleepers(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen(["sleep", "100000"], stdin=subprocess.DEVNULL)
            for _ in range(count)]


def stop(children: list[subprocess.Popen]) -> None:
    for child in children:
        child.kill()
    for child in children:
        child.wait()


class BareLoop:
    """What a monitor written in a few lines does each tick: the NVML readings
    gpuwatch makes, and psutil's name/cmdline/user/rss/cpu for every listed pid."""

    def __init__(self) -> None:
        import psutil

        self._psutil = psutil
        pynvml.nvmlInit()
        self.handles = [pynvml.nvmlDeviceGetHandleByIndex(i)
                        for i in range(pynvml.nvmlDeviceGetCount())]
        self.procs: dict[int, object] = {}

    def sample(self) -> int:
        psutil = self._psutil
        pids = []
        for h in self.handles:
            pynvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2)
            pynvml.nvmlDeviceGetUtilizationRates(h)
            pynvml.nvmlDeviceGetPowerUsage(h)
            pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)
            pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_GRAPHICS)
            pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM)
            pids += [p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)]
            pids += [p.pid for p in pynvml.nvmlDeviceGetGraphicsRunningProcesses(h)]
        rows = []
        for pid in pids:
            proc = self.procs.get(pid)
            if proc is None:
                proc = self.procs[pid] = psutil.Process(pid)
            with proc.oneshot():
                rows.append((pid, proc.name(), proc.cmdline(), proc.username(),
                             proc.memory_info().rss, proc.cpu_percent(None)))
        return len(rows)

    def close(self) -> None:
        pynvml.nvmlShutdown()


def real_child(samples: int, profile: bool) -> None:
    """In the child on the fake driver: measure and print one JSON line."""
    from gpuwatch.telemetry.clock import WallClock
    from gpuwatch.telemetry.probes import ProbeDirectory

    bare = BareLoop()
    expected = bare.sample()
    floor = _best_of_three(bare.sample, samples)
    bare.close()
    backend = NvmlBackend(clock=WallClock(), pcie_thread=True, pcie_interval_s=3600,
                          probes=ProbeDirectory()).open()
    snap = backend.sample()
    listed = [p for g in snap.gpus for p in g.processes]
    assert len(listed) == expected and all(p.found_on_host for p in listed), \
        "every sleep child should be listed and found"
    full = _best_of_three(backend.sample, samples)
    history = History()
    with_history = _best_of_three(lambda: history.append(backend.sample()), samples)
    if profile:
        import cProfile
        import io
        import pstats

        profiler = cProfile.Profile()
        profiler.runcall(lambda: [backend.sample() for _ in range(samples)])
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(14)
        print(out.getvalue(), file=sys.stderr)
    backend.close()
    print(json.dumps({"floor": floor, "sample": full, "with_history": with_history}))


def with_checkout(env: dict, checkout: Path | None) -> dict:
    """``env`` with ``checkout``'s gpuwatch first on the import path (None: as is)."""
    if checkout is None:
        return env
    return {**env, "PYTHONPATH": os.pathsep.join(
        p for p in (str(checkout), env.get("PYTHONPATH")) if p)}


def this_checkout() -> Path:
    import gpuwatch

    return Path(gpuwatch.__file__).resolve().parents[1]


def measure_simulated_in(checkout: Path, gpus: int, processes: int, samples: int) -> dict:
    """measure_simulated in a child process importing ``checkout``'s gpuwatch."""
    argv = [sys.executable, __file__, "--sim-child", str(gpus), str(processes),
            "--samples", str(samples)]
    done = subprocess.run(argv, env=with_checkout(dict(os.environ), checkout),
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the simulated child failed:\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def measure_real(library: Path, gpus: int, per_gpu: int, samples: int,
                 profile: bool, checkout: Path | None = None) -> dict:
    children = start_sleepers(gpus * per_gpu)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            probe_dir = os.path.join(tmp, "probes")
            os.mkdir(probe_dir, 0o700)
            env = with_checkout(
                fake_driver_env(library, gpus, [c.pid for c in children], probe_dir), checkout)
            argv = [sys.executable, __file__, "--real-child", "--samples", str(samples)]
            done = subprocess.run(argv + (["--profile"] if profile else []), env=env,
                                  capture_output=True, text=True, check=False)
    finally:
        stop(children)
    if done.returncode != 0:
        raise SystemExit(f"the real-path child failed:\n{done.stderr}")
    if profile:
        print(done.stderr)
    return json.loads(done.stdout.splitlines()[-1])


ROWS = {"floor": None, "sample": "NvmlBackend.sample()",
        "with_history": "sample() + History.append()"}


def print_rows(r: dict, floor_label: str, before: dict | None) -> None:
    """One shape's rows; with ``before`` (the baseline's figures), both and their ratio."""
    for key, label in ROWS.items():
        label = label or floor_label
        if before is None:
            print(_row(label, r[key], None if key == "floor" else r["floor"]))
        else:
            print(f"  {label:<34}{before[key] * 1e3:8.3f} ms before {r[key] * 1e3:8.3f} ms "
                  f"after  {r[key] / before[key]:5.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=300,
                        help="samples per round, simulated rows (default 300)")
    parser.add_argument("--real-samples", type=int, default=200,
                        help="samples per round, real rows (default 200)")
    parser.add_argument("--only", choices=("simulated", "real"),
                        help="run only these rows")
    parser.add_argument("--profile", action="store_true",
                        help="real rows: print where gpuwatch's sample spends its time")
    parser.add_argument("--baseline", type=Path, metavar="CHECKOUT",
                        help="measure this other checkout's gpuwatch too, row by row")
    parser.add_argument("--real-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--sim-child", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.real_child:
        real_child(args.samples, args.profile)
        return
    if args.sim_child:
        print(json.dumps(measure_simulated(*args.sim_child, args.samples)))
        return
    print("CPU time (process_time) per sample, best of 3 rounds.")
    if args.baseline:
        print(f"before: {args.baseline.resolve()}; after: {this_checkout()}; "
              "each row measured before, then after")
    simulated: dict[int, dict] = {}
    if args.only != "real":
        print("\nSimulated NVML (stepped virtual clock, the scenario's cached host):")
        for gpus, processes in SHAPES_SIMULATED:
            before = None
            if args.baseline:
                before = measure_simulated_in(args.baseline, gpus, processes, args.samples)
                r = measure_simulated_in(this_checkout(), gpus, processes, args.samples)
            else:
                r = measure_simulated(gpus, processes, args.samples)
            simulated[processes] = r
            print(f"{gpus} GPUs x {processes} processes ({processes // gpus} per GPU):")
            print_rows(r, "bare NVML calls (floor)", before)
    if args.only != "simulated":
        library = build_fake_driver()
        print("\nReal path (nvidia-ml-py over the fake driver, real `sleep` processes, "
              "psutil and /proc):")
        for gpus, per_gpu in SHAPES_REAL:
            before = (measure_real(library, gpus, per_gpu, args.real_samples, args.profile,
                                   args.baseline) if args.baseline else None)
            r = measure_real(library, gpus, per_gpu, args.real_samples, args.profile,
                             this_checkout() if args.baseline else None)
            processes = gpus * per_gpu
            print(f"{gpus} GPUs x {processes} processes ({per_gpu} per GPU):")
            print_rows(r, "bare pynvml + psutil loop (floor)", before)
            if processes in simulated:
                print(f"  {'real / simulated sample()':<34}"
                      f"{r['sample'] / simulated[processes]['sample']:8.2f}x")


if __name__ == "__main__":
    main()
