"""Headless recording in virtual time: samples per second, store and advisor included.

Builds a scenario of GPUS GPUs with PROCS processes each (8 × 64 by default; each climbs
for two minutes, its warm-up, then runs flat as most training does), then does
what `gpuwatch record --time-scale max` does per tick, in one thread so every stage can
be timed: the simulated backend's sample, the history, the advisor, the session writer
(real SQLite, committed once a second of wall time as the recorder does) and the printed
tick. The same run measures the bare `sample()` as the baseline, so the ratio says what
the rest costs. Run: .venv/bin/python benchmarks/record_headless.py [--samples 600]
[--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from gpuwatch.advisor import Advisor
from gpuwatch.commands.snapshot_text import format_tick
from gpuwatch.core.history import History
from gpuwatch.sessions.writer import SessionWriter
from gpuwatch.telemetry.source import SourceOptions, open_backend


def write_scenario(path: Path, gpus: int, procs: int) -> Path:
    lines = ['schema = "gpuwatch.scenario/1"', 'name = "wide"',
             f'description = "{gpus} GPUs with {procs} processes each."', "duration_s = 86400"]
    for _ in range(gpus):
        lines += ["[[gpus]]", 'name = "NVIDIA H100 80GB HBM3"', 'memory_total = "80GiB"']
    pid = 1000
    for gpu in range(gpus):
        for rank in range(procs):
            pid += 1
            lines += ["[[processes]]", f"pid = {pid}", f"gpu = {gpu}", 'name = "python3"',
                      f'cmdline = ["python3", "train.py", "--rank", "{rank}"]', 'user = "alice"',
                      f'memory = [[0, "100MiB"], [120, "{500 + rank}MiB"],'
                      f' [86400, "{500 + rank}MiB"]]',
                      "gpu_util_percent = 50"]
    path.write_text("\n".join(lines) + "\n")
    return path


class Stages:
    """Wall time per stage, summed over the run."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def time(self, name: str, fn: Callable[[], object]) -> object:
        start = time.perf_counter()
        result = fn()
        self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start
        return result


def run(scenario: Path, samples: int, out: Path) -> tuple[float, float, float, Stages]:
    """(bare samples/s, recorded samples/s, recorded samples per CPU second, stage
    times). CPU time beside wall time: on a shared machine the wall clock also counts
    the time other processes held the core."""
    backend = open_backend(SourceOptions(demo=str(scenario), time_scale="max"))
    start = time.perf_counter()
    for t in range(samples):
        backend.clock.set_elapsed(float(t))
        backend.sample()
    bare = samples / (time.perf_counter() - start)

    history, advisor, writer, stages = History(), Advisor(), SessionWriter(out), Stages()
    last_commit = time.perf_counter()
    start = time.perf_counter()
    cpu_start = time.process_time()
    for t in range(samples):
        backend.clock.set_elapsed(float(samples + t))
        snap = stages.time("sample", backend.sample)
        stages.time("history", lambda snap=snap: history.append(snap))
        events = stages.time("advisor", lambda: advisor.update(history))
        stages.time("store", lambda snap=snap: writer.add_snapshot(snap))
        for event in events:
            writer.add_hint_event(event)
        if time.perf_counter() - last_commit >= 1.0:
            stages.time("store", writer.commit)
            last_commit = time.perf_counter()
        stages.time("print", lambda snap=snap, t=t: "\n".join(format_tick(snap, float(t))))
    stages.time("store", lambda: writer.close(backend.clock.now_s()))
    recorded = samples / (time.perf_counter() - start)
    recorded_cpu = samples / (time.process_time() - cpu_start)
    backend.close()
    return bare, recorded, recorded_cpu, stages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--procs", type=int, default=64, help="processes per GPU")
    parser.add_argument("--samples", type=int, default=600)
    parser.add_argument("--profile", action="store_true", help="print the top functions")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        scenario = write_scenario(Path(tmp) / "wide.toml", args.gpus, args.procs)
        profiler = cProfile.Profile() if args.profile else None
        if profiler:
            profiler.enable()
        bare, recorded, recorded_cpu, stages = run(scenario, args.samples,
                                                   Path(tmp) / "s.sqlite")
        if profiler:
            profiler.disable()
    print(f"{args.gpus} GPUs × {args.procs} processes, {args.samples} samples in virtual time")
    print(f"  sample() alone        {bare:8.0f} samples/s")
    print(f"  recorded (all stages) {recorded:8.0f} samples/s  ({bare / recorded:.2f}× the"
          " time of sample() alone)")
    print(f"  recorded, CPU time    {recorded_cpu:8.0f} samples per CPU second")
    total = sum(stages.seconds.values())
    for name, seconds in sorted(stages.seconds.items(), key=lambda kv: -kv[1]):
        print(f"    {name:8} {1000 * seconds / args.samples:7.3f} ms/sample"
              f"  {100 * seconds / total:5.1f} %")
    if profiler:
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(25)
        print(text.getvalue())


if __name__ == "__main__":
    main()
