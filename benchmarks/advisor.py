"""Advisor cost and quality: one evaluation over 8 GPUs with 24 h of history, and the
lead time and false alarms of every rule over every scenario.

* cost: a ``History`` holding 24 h at 1 Hz for 8 GPUs (23 h written straight into the
  rings, the last hour sampled from ``multi-gpu-ddp`` so processes have real rings),
  then ``Advisor.update`` timed after each of 300 further samples;
* quality: each built-in scenario runs at 1 s of virtual time through the simulated
  backend, with the budget links the tests use. A hint is *expected* when its rule was
  built for that scenario; any other warning or critical hint is a false alarm;
  ``oom-ramp``'s lead time is from the first ``oom-risk`` to the first sample with no
  free memory. Then ``workstation`` runs 8 h (looped) at 10 s steps.

* wide: 8 GPUs × 64 processes (``record_headless.py``'s scenario: two minutes of climb,
  then flat), ``History.append`` and ``Advisor.update`` per sample over 600 samples
  from 600 s and from 3,700 s (process rings full), CPU time of this thread, median of
  3 rounds (fresh history and advisor each). ``PYTHONPATH=/path/to/old/checkout``
  measures older code on the same snapshots.

Usage: ``python benchmarks/advisor.py [--quick] [--wide]`` (``--quick`` skips the long
runs; ``--wide`` runs only the wide rows).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from gpuwatch.advisor import Advisor
from gpuwatch.budget import Setup, Workload, estimate, lookup_model
from gpuwatch.core.hints import HintEventKind
from gpuwatch.core.history import DAY_AT_1HZ, GPU_COLUMNS, History
from gpuwatch.telemetry.source import SourceOptions, open_backend

ROOT = Path(__file__).resolve().parents[1]
GIB = 1024**3


def link(advisor: Advisor, gpu: int, pid: int, model: str, batch: int, seq: int,
         **setup: object) -> None:
    spec = lookup_model(model)
    advisor.link(gpu, pid, estimate(spec, Workload(batch=batch, seq=seq),
                                    Setup(**setup)), spec)   # type: ignore[arg-type]


def _links_workstation(a: Advisor) -> None:
    link(a, 0, 48211, "gpt2-medium", 8, 1024, precision="amp-bf16", flash_attention=True)


def _links_fragmentation(a: Advisor) -> None:
    link(a, 0, 66120, "gpt2-medium", 8, 1024, precision="amp-bf16")


def _links_contention(a: Advisor) -> None:
    for pid in (5100, 5200):
        link(a, 0, pid, "gpt2-medium", 12, 1024, precision="amp-bf16")


def _links_underused(a: Advisor) -> None:
    link(a, 0, 7300, "gpt2", 4, 1024)


# scenario -> (duration s, expected codes, links)
SCENARIOS: dict[str, tuple[float, set[str], Callable[[Advisor], None] | None]] = {
    "workstation": (3600, set(), _links_workstation),
    "oom-ramp": (600, {"oom-risk", "likely-oom"}, None),
    "leak": (7200, {"memory-leak"}, None),
    "fragmentation": (1800, {"fragmentation"}, _links_fragmentation),
    "multi-gpu-ddp": (3600, set(), None),
    "churn": (3600, set(), None),
    "faults": (720, {"gpu-lost", "gpu-recovered"}, None),
    "contention": (900, {"contention"}, _links_contention),
    "underused": (1800, {"underused"}, _links_underused),
    "bandwidth": (900, {"bandwidth-saturated"}, None),
}


def run(demo: str, duration: float, step: float = 1.0, loop: bool = False,
        links: Callable[[Advisor], None] | None = None) -> dict:
    backend = open_backend(SourceOptions(demo=demo, time_scale="max", loop=loop))
    advisor, history = Advisor(), History()
    if links:
        links(advisor)
    first: dict[str, tuple[float, str]] = {}
    full_at = None
    events = 0
    t = 0.0
    while t <= duration:
        backend.clock.set_elapsed(t)   # type: ignore[attr-defined]
        snap = backend.sample()
        history.append(snap)
        if full_at is None and any(g.memory.free_bytes == 0 for g in snap.gpus):
            full_at = t
        for e in advisor.update(history):
            events += 1
            if e.kind is HintEventKind.OPENED:
                first.setdefault(e.hint.code, (t, e.hint.severity.value))
        t += step
    backend.close()
    return {"first": first, "full_at": full_at, "events": events}


def prefilled_history() -> tuple[History, Callable[[], None]]:
    """24 h × 8 GPUs at 1 Hz; returns the history and a function that adds one sample."""
    backend = open_backend(SourceOptions(demo="multi-gpu-ddp", time_scale="max", loop=True))
    history = History()
    backend.clock.set_elapsed(0.0)   # type: ignore[attr-defined]
    first = backend.sample()
    t0 = first.timestamp_s
    synthetic = DAY_AT_1HZ - 3600
    names = list(GPU_COLUMNS)
    history.append(first)                       # creates the rings
    for index, ring in history.gpus.items():
        g = first.gpu(index)
        total = g.memory.total_bytes if g else 80 * GIB
        for i in range(synthetic):
            used = 0.7 * total + 0.05 * total * ((i % 16) / 16)
            row = {"timestamp_s": t0 - synthetic + i, "used_bytes": used, "total_bytes": total,
                   "reserved_bytes": 0.0, "gpu_util_percent": 93.0,
                   "memory_busy_percent": 66.0}
            ring.append_values([row.get(n) for n in names])
    step = [1.0]

    def add() -> None:
        backend.clock.set_elapsed(step[0])   # type: ignore[attr-defined]
        history.append(backend.sample())
        step[0] += 1.0

    for _ in range(3600):
        add()
    return history, add


def bench_cost() -> None:
    t = time.perf_counter()
    history, add = prefilled_history()
    print(f"history: {len(history.gpus)} GPUs × {len(history.gpus[0]):,} rows, "
          f"{len(history.processes)} process rings, {history.nbytes / 2**20:.0f} MiB "
          f"(built in {time.perf_counter() - t:.0f} s)")
    advisor = Advisor()
    times = []
    for _ in range(300):
        add()
        t = time.perf_counter()
        advisor.update(history)
        times.append(time.perf_counter() - t)
    times.sort()
    print(f"Advisor.update over 8 GPUs, 24 h history: median {statistics.median(times) * 1e3:.2f} "
          f"ms, p95 {times[int(0.95 * len(times))] * 1e3:.2f} ms, max {times[-1] * 1e3:.2f} ms "
          f"({len(advisor.rules)} rules)")


def wide_snapshots(gpus: int = 8, procs: int = 64, count: int = 1200) -> list:
    """``count`` samples, one a second, of record_headless.py's scenario."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from record_headless import write_scenario
    with tempfile.TemporaryDirectory() as tmp:
        path = write_scenario(Path(tmp) / "wide.toml", gpus, procs)
        backend = open_backend(SourceOptions(demo=str(path), time_scale="max"))
        snaps = []
        for t in range(count):
            backend.clock.set_elapsed(float(t))   # type: ignore[attr-defined]
            snaps.append(backend.sample())
        backend.close()
    return snaps


def bench_wide(rounds: int = 3) -> None:
    """At 600 s (rings still growing: one doubling lands in the measured samples) and
    at 3,700 s (every process ring full: the ring buffers wrap)."""
    snaps = wide_snapshots(count=4300)
    for warmup in (600, 3700):
        measured = 600
        history_ms, advisor_ms = [], []
        for _ in range(rounds):
            history, advisor = History(), Advisor()
            for snap in snaps[:warmup]:
                history.append(snap)
                advisor.update(history)
            in_history = in_advisor = 0.0
            for snap in snaps[warmup:warmup + measured]:
                t0 = time.thread_time()
                history.append(snap)
                t1 = time.thread_time()
                advisor.update(history)
                t2 = time.thread_time()
                in_history += t1 - t0
                in_advisor += t2 - t1
            history_ms.append(1e3 * in_history / measured)
            advisor_ms.append(1e3 * in_advisor / measured)
        h, a = statistics.median(history_ms), statistics.median(advisor_ms)
        print(f"8 GPUs × 64 processes, flat, from {warmup} s: History.append {h:.3f} "
              f"ms/sample, Advisor.update {a:.3f} ms/sample, together {h + a:.3f} ms "
              f"(median of {rounds} rounds of {measured} samples, CPU time)")


def bench_quality(quick: bool) -> None:
    print(f"\n{'scenario':<16} {'virtual':>8}  {'expected (first opened at)':<44} "
          f"{'false alarms (warning+)':<28} other info")
    for demo, (duration, expected, links) in SCENARIOS.items():
        if quick and duration > 1800:
            duration = 1800
        r = run(demo, duration, links=links)
        name = Path(demo).stem
        got = r["first"]
        shown = ", ".join(f"{c} {got[c][0]:.0f} s" if c in got else f"{c} MISSED"
                          for c in sorted(expected)) or "none"
        false = sorted(f"{c} ({s}) {t:.0f} s" for c, (t, s) in got.items()
                       if c not in expected and s != "info")
        info = sorted(c for c, (_, s) in got.items() if c not in expected and s == "info")
        print(f"{name:<16} {duration:>7.0f}s  {shown:<44} {', '.join(false) or '0':<28} "
              f"{', '.join(info) or '-'}")
        if name == "oom-ramp":
            lead = r["full_at"] - got["oom-risk"][0]
            print(f"{'':<16} oom-risk lead time: opened {got['oom-risk'][0]:.0f} s, GPU full "
                  f"at {r['full_at']:.0f} s → {lead:.0f} s of warning (needs ≥ 60 s)")
    if quick:
        return
    r = run("workstation", 8 * 3600, step=10.0, loop=True)
    loud = {c: s for c, (_, s) in r["first"].items() if s != "info"}
    print(f"\nworkstation, 8 h looped at 10 s: {len(loud)} warning/critical hints "
          f"({r['events']} events in all)")


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    bench_wide()
    if "--wide" not in sys.argv:
        bench_cost()
        bench_quality(quick)
