"""Session files: bytes per hour, recording cost, and the time to open a long session.

Records the 8-GPU `multi-gpu-ddp` scenario at 1 Hz on a stepped virtual clock (so a
day takes minutes, not a day), then opens it the way the session browser and a report
do. Run: .venv/bin/python benchmarks/sessions.py [--hours 24]

``--store`` instead times the session writer alone on a wide machine (8 GPUs × 64
processes, each climbing for two minutes then flat, as in record_headless.py): the
store's cost per sample in steady state (after the first ten minutes), committed once a
second of wall time (as the recorder does at full speed) and once per sample (as it
does at 1 Hz). It prints wall time, and the thread's CPU time beside it (which waiting
for a busy machine's cores does not inflate), the file's size and the time to load the
file for replay. ``--baseline DIR`` measures a checkout of an older commit the same
way, in rounds interleaved with this one:
.venv/bin/python benchmarks/sessions.py --store --hours 1 --baseline /tmp/before
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpuwatch.core.units import format_bytes
from gpuwatch.sessions.reader import SessionReader
from gpuwatch.sessions.recorder import Recorder
from gpuwatch.sessions.report_model import build_report
from gpuwatch.telemetry.source import SourceOptions, open_backend


def record(path: Path, hours: float) -> tuple[float, int]:
    backend = open_backend(SourceOptions(demo="multi-gpu-ddp", time_scale="max", loop=True))
    recorder = Recorder(path, 1.0)
    samples = int(hours * 3600)
    start = time.perf_counter()
    for t in range(samples):
        backend.clock.set_elapsed(float(t))
        recorder.add_snapshot(backend.sample())
    recorder.close(backend.clock.now_s())
    backend.close()
    return time.perf_counter() - start, samples


def open_like_the_browser(path: Path) -> dict[str, float]:
    timings = {}
    start = time.perf_counter()
    with SessionReader(path) as r:
        info = r.info()
        gpus = r.gpus()
        peak = r.peak_used_bytes()
        hints = len(r.hints())
        timings["list entry (info, GPUs, peak, hints)"] = time.perf_counter() - start
        start = time.perf_counter()
        for g in gpus:
            r.gpu_series(g.index)
        timings["all GPU timelines into the plots"] = time.perf_counter() - start
        start = time.perf_counter()
        build_report(r)
        timings["full report model"] = time.perf_counter() - start
    assert info.samples and peak and hints >= 0
    return timings


WARM_UP_S = 600        # the wide scenario's processes climb for 120 s, then stay flat


def measure_store(hours: float, gpus: int, procs: int, commit_each_sample: bool) -> dict:
    """Store cost and file size of one wide recording, in this process."""
    from record_headless import write_scenario

    from gpuwatch.sessions.replay import load_replay
    from gpuwatch.sessions.writer import SessionWriter

    samples = int(hours * 3600)
    with tempfile.TemporaryDirectory() as tmp:
        scenario = write_scenario(Path(tmp) / "wide.toml", gpus, procs)
        backend = open_backend(SourceOptions(demo=str(scenario), time_scale="max"))
        path = Path(tmp) / "wide.gpuwatch.sqlite"
        writer = SessionWriter(path)
        steady = warm = steady_cpu = 0.0
        last_commit = time.perf_counter()
        for t in range(samples):
            backend.clock.set_elapsed(float(t))
            snap = backend.sample()
            start, cpu = time.perf_counter(), time.thread_time()
            writer.add_snapshot(snap)
            if commit_each_sample or start - last_commit >= 1.0:
                writer.commit()
                last_commit = time.perf_counter()
            spent = time.perf_counter() - start
            if t < WARM_UP_S:
                warm += spent
            else:
                steady += spent
                steady_cpu += time.thread_time() - cpu
        start = time.perf_counter()
        writer.close(backend.clock.now_s())
        closing = time.perf_counter() - start
        backend.close()
        start = time.perf_counter()
        load_replay(path)
        replay = time.perf_counter() - start
        return {"samples": samples, "warm_ms": 1e3 * warm / min(samples, WARM_UP_S),
                "steady_ms": 1e3 * steady / max(1, samples - WARM_UP_S),
                "steady_cpu_ms": 1e3 * steady_cpu / max(1, samples - WARM_UP_S),
                "close_ms": 1e3 * closing, "bytes": path.stat().st_size,
                "replay_s": replay}


def store_main(args: argparse.Namespace) -> None:
    checkouts = [("this checkout", None)]
    if args.baseline:
        checkouts.insert(0, (f"baseline {args.baseline}", args.baseline))
    print(f"{args.gpus} GPUs × {args.procs} processes, {args.hours:g} h at 1 Hz in virtual "
          f"time; store = SessionWriter.add_snapshot + commit (steady: after {WARM_UP_S} s)")
    for commit_each in (False, True):
        how = "commit once per sample (1 Hz)" if commit_each else \
            "commit once a second of wall time"
        print(how)
        results: dict[str, list[dict]] = {name: [] for name, _ in checkouts}
        for _ in range(args.rounds):
            for name, root in checkouts:
                results[name].append(_child(args, root, commit_each))
        for name, rounds in results.items():
            best = min(rounds, key=lambda r: r["steady_ms"])
            each = ", ".join(f"{r['steady_ms']:.3f}" for r in rounds)
            print(f"  {name:<34} steady {best['steady_ms']:6.3f} ms/sample "
                  f"(rounds: {each}; CPU {best['steady_cpu_ms']:.3f}), "
                  f"first {WARM_UP_S} s {best['warm_ms']:.3f} ms/sample, "
                  f"close {best['close_ms']:.0f} ms, file {format_bytes(best['bytes'])}, "
                  f"replay load {best['replay_s']:.2f} s")
        if args.baseline:
            base, new = (min(r["steady_ms"] for r in results[n]) for n, _ in checkouts)
            print(f"  steady store: {base / new:.1f}× less time than the baseline")


def _child(args: argparse.Namespace, root: str | None, commit_each: bool) -> dict:
    """One measurement in a fresh interpreter (``root`` first on its path)."""
    env = dict(os.environ)
    here = str(Path(__file__).resolve().parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, here) if p)
    command = [sys.executable, __file__, "--store-child", "--hours", str(args.hours),
               "--gpus", str(args.gpus), "--procs", str(args.procs)]
    if commit_each:
        command.append("--commit-each-sample")
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hours", type=float, default=None,
                        help="24 by default; 1 with --store")
    parser.add_argument("--store", action="store_true",
                        help="time the writer alone on GPUS × PROCS processes")
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--procs", type=int, default=64, help="processes per GPU")
    parser.add_argument("--baseline", help="a checkout of an older commit to compare with")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--store-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--commit-each-sample", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.store_child:
        print(json.dumps(measure_store(args.hours, args.gpus, args.procs,
                                       args.commit_each_sample)))
        return
    if args.store:
        args.hours = 1.0 if args.hours is None else args.hours
        store_main(args)
        return
    args.hours = 24.0 if args.hours is None else args.hours
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "day.gpuwatch.sqlite"
        seconds, samples = record(path, args.hours)
        size = path.stat().st_size
        print(f"recorded {samples} samples of 8 GPUs x 1 process each in {seconds:.1f} s "
              f"({seconds / samples * 1e3:.2f} ms per sample incl. simulation)")
        print(f"file size {format_bytes(size)} for {args.hours:g} h: "
              f"{format_bytes(size / args.hours)} per hour at 1 Hz")
        for name, value in open_like_the_browser(path).items():
            print(f"open: {name:<40} {value:7.3f} s")


if __name__ == "__main__":
    main()
