"""What the Prometheus exporter and the Prometheus source cost.

Exporter, in process: CPU to render one scrape (Prometheus text format) from a
snapshot of G GPUs with P processes each, against the cost of taking that sample
(simulated NVML, the same shape) measured in the same run; from the rows, the cost per
GPU and per process series.

Exporter, for real: a `gpuwatch serve --demo multi-gpu-ddp` child (8 GPUs, 8 processes)
scraped over HTTP N times: its CPU per scrape (/proc/PID/stat), less what it spends
sampling while nobody scrapes.

Source: one tick for 64 GPUs across 8 hosts. In process: parsing a Prometheus answer
built from eight exporters' series and turning it into a snapshot, against one local
sample of a simulated 8-GPU node (the sampler's tick). For real (unless --no-server):
8 `gpuwatch serve` children and a Prometheus server scraping them every second; the
source ticks at 1 Hz and its wall time, CPU, answer size and the server's CPU per tick
are measured.

Run:  .venv/bin/python benchmarks/exporter.py [--scrapes N] [--ticks N] [--no-server]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tests" / "exporter"))
from prometheus_support import (  # noqa: E402
    have_prometheus,
    start_exporter,
    start_prometheus,
    wait_for,
)
from sim_support import make_scenario, sim_backend  # noqa: E402

from gpuwatch.exporter.families import Families  # noqa: E402
from gpuwatch.telemetry.prometheus.assemble import Assembler  # noqa: E402
from gpuwatch.telemetry.prometheus.backend import PrometheusBackend  # noqa: E402
from gpuwatch.telemetry.prometheus.caps import GpuCaps  # noqa: E402
from gpuwatch.telemetry.prometheus.response import parse_response  # noqa: E402
from gpuwatch.telemetry.sim.catalog import resolve_scenario  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def _scenario(gpus: int, per_gpu: int):
    return make_scenario(
        gpus=[{"name": "NVIDIA H100 80GB HBM3", "memory_total": "80GiB"}] * gpus,
        processes=[{"pid": 1000 + g * 100 + i, "gpu": g, "name": f"python-{i}",
                    "user": "ann", "memory": f"{i + 1}GiB", "gpu_util_percent": 80}
                   for g in range(gpus) for i in range(per_gpu)])


def _snapshot(gpus: int, per_gpu: int):
    backend = sim_backend(_scenario(gpus, per_gpu), 10.0).open()
    try:
        return backend.sample()
    finally:
        backend.close()


def _sample_cost_s(scenario, at_s: float, samples: int) -> float:
    """CPU seconds of one simulated sample of ``scenario``, best of three rounds."""
    backend = sim_backend(scenario, at_s).open()
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        for i in range(samples):
            backend.clock.set_elapsed(at_s + i)
            backend.sample()
        best = min(best, (time.process_time() - start) / samples)
    backend.close()
    return best


def _sample_cost_us(gpus: int, per_gpu: int, samples: int) -> float:
    return _sample_cost_s(_scenario(gpus, per_gpu), 10.0, samples) * 1e6


class _Once:
    def __init__(self, families: Families):
        self.families = families

    def collect(self):
        return iter(self.families)


def _render_cost_us(families: Families, scrapes: int) -> tuple[float, int]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Once(families))
    best, size = float("inf"), 0
    for _ in range(3):
        start = time.process_time()
        for _ in range(scrapes):
            size = len(generate_latest(registry))
        best = min(best, (time.process_time() - start) / scrapes * 1e6)
    return best, size


def exporter_in_process(scrapes: int) -> None:
    print("Exporter: CPU to render one scrape, against taking the sample it shows "
          "(best of 3 runs)")
    print(f"  {'shape':<28} {'scrape':>10} {'size':>10} {'sample':>10} {'ratio':>7}")
    rows = {}
    for gpus, per_gpu in ((1, 1), (8, 1), (8, 8), (8, 64)):
        cost, size = _render_cost_us(Families(_snapshot(gpus, per_gpu), "node-1"), scrapes)
        sample = _sample_cost_us(gpus, per_gpu, scrapes)
        rows[(gpus, per_gpu)] = cost
        print(f"  {gpus} GPU{'s' if gpus > 1 else ' '} x {per_gpu:>2} processes each{'':<6}"
              f"{cost:7.0f} µs {size / 1024:6.1f} KiB {sample:7.0f} µs  x{cost / sample:4.1f}")
    per_gpu = (rows[(8, 1)] - rows[(1, 1)]) / 7
    per_process = (rows[(8, 8)] - rows[(8, 1)]) / (8 * 7)
    print(f"  per GPU: {per_gpu:.1f} µs; per process series: {per_process:.1f} µs; "
          f"64 processes a GPU cost what 8 do plus the sort ({rows[(8, 64)]:.0f} vs "
          f"{rows[(8, 8)]:.0f} µs: the top 8 and one 'other' series are written)")


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / TICK      # utime + stime


def exporter_for_real(scrapes: int) -> None:
    exporter = start_exporter("node-1", "multi-gpu-ddp", interval_s=1.0)
    try:
        pid = exporter.process.pid
        time.sleep(1.0)
        idle_start, t0 = _cpu_s(pid), time.monotonic()
        time.sleep(5.0)
        idle_rate = (_cpu_s(pid) - idle_start) / (time.monotonic() - t0)
        busy_start, t0 = _cpu_s(pid), time.monotonic()
        size = 0
        for _ in range(scrapes):
            with urllib.request.urlopen(exporter.url, timeout=10) as response:
                size = len(response.read())
        elapsed = time.monotonic() - t0
        spent = _cpu_s(pid) - busy_start - idle_rate * elapsed
        print(f"Exporter over HTTP (multi-gpu-ddp: 8 GPUs, 8 processes; {scrapes} scrapes): "
              f"{spent / scrapes * 1e3:.2f} ms CPU per scrape, {size / 1024:.1f} KiB; "
              f"sampling alone {idle_rate * 100:.1f} % of a core at 1 Hz "
              f"(CPU clock ticks are {1e3 / TICK:.0f} ms)")
    finally:
        exporter.stop()


def _answer(hosts: int) -> bytes:
    """A Prometheus answer holding what ``hosts`` 8-GPU gpuwatch exporters report."""
    snap = _snapshot(8, 8)
    result = []
    for h in range(hosts):
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Once(Families(snap, f"node-{h}")))
        for family in text_string_to_metric_families(generate_latest(registry).decode()):
            for s in family.samples:
                labels = {**s.labels, "__name__": s.name, "job": "gpuwatch",
                          "instance": f"node-{h}:9400"}
                result.append({"metric": labels, "value": [time.time(), repr(s.value)]})
        result.append({"metric": {"__name__": "up", "job": "gpuwatch",
                                  "instance": f"node-{h}:9400"}, "value": [time.time(), "1"]})
    return json.dumps({"status": "success",
                       "data": {"resultType": "vector", "result": result}}).encode()


def _tick_cost_ms(body: bytes, ticks: int, capped: bool) -> float:
    assembler, caps = Assembler(), GpuCaps()
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        for _ in range(ticks):
            now = time.time()
            series = parse_response(body)
            if capped:
                series = caps.admit(series, now)
                assembler.forget(caps.gone(now))
            gpus, _, _ = assembler.build(series, now)
        best = min(best, (time.process_time() - start) / ticks * 1e3)
    assert len(gpus) == 64
    return best


def source_in_process(ticks: int) -> float:
    body = _answer(8)
    bare = _tick_cost_ms(body, ticks, capped=False)
    best = _tick_cost_ms(body, ticks, capped=True)
    local = _sample_cost_s(resolve_scenario("multi-gpu-ddp"), 100.0, ticks) * 1e3
    print(f"Source, in process: 64 GPUs / 8 hosts from a {len(body) / 1024:.0f} KiB answer: "
          f"{best:.2f} ms CPU per tick (parse + GPU caps + assemble; {bare:.2f} ms without "
          f"the caps); one local sample of a simulated 8-GPU node: {local:.2f} ms; ratio "
          f"x{best / local:.1f} for 8x the GPUs")
    return best


def source_for_real(ticks: int) -> None:
    if not have_prometheus():
        print("Source against a real server: skipped (no /usr/bin/prometheus)")
        return
    folder = Path(tempfile.mkdtemp(prefix="gpuwatch-bench-"))
    exporters, server = [], None
    try:
        for h in range(8):
            exporters.append(start_exporter(f"node-{h}", "multi-gpu-ddp", interval_s=1.0))
        server = start_prometheus(folder, [f"127.0.0.1:{e.port}" for e in exporters])
        backend = PrometheusBackend(server.url)
        wait_for("64 GPUs in Prometheus", lambda: len(backend.sample().gpus) == 64
                 and all(g.memory.used_bytes for g in backend.sample().gpus), 60)
        server_start, client_cpu = _cpu_s(server.process.pid), time.process_time()
        walls, t0 = [], time.monotonic()
        bytes_before = backend.client.bytes_read
        for i in range(ticks):
            start = time.monotonic()
            snap = backend.sample()
            walls.append(time.monotonic() - start)
            time.sleep(max(0.0, t0 + i + 1 - time.monotonic()))     # 1 Hz
        elapsed = time.monotonic() - t0
        server_with = (_cpu_s(server.process.pid) - server_start) / elapsed
        client = (time.process_time() - client_cpu) / ticks
        server_start, t0 = _cpu_s(server.process.pid), time.monotonic()
        time.sleep(ticks)                                            # scrapes only
        server_without = (_cpu_s(server.process.pid) - server_start) / (time.monotonic() - t0)
        walls.sort()
        answer = (backend.client.bytes_read - bytes_before) / ticks
        print(f"Source against a real Prometheus (8 exporters x 8 GPUs, scraped every 1 s; "
              f"{ticks} ticks at 1 Hz): {len(snap.gpus)} GPUs; query wall time median "
              f"{walls[len(walls) // 2] * 1e3:.1f} ms, worst {walls[-1] * 1e3:.1f} ms; "
              f"client CPU {client * 1e3:.1f} ms per tick; answer {answer / 1024:.0f} KiB; "
              f"Prometheus CPU {server_with * 100:.1f} % of a core with the queries, "
              f"{server_without * 100:.1f} % scraping alone")
    finally:
        for e in exporters:
            e.stop()
        if server is not None:
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scrapes", type=int, default=200)
    parser.add_argument("--ticks", type=int, default=20)
    parser.add_argument("--no-server", action="store_true",
                        help="skip the runs with child processes and a Prometheus server")
    args = parser.parse_args()
    exporter_in_process(args.scrapes)
    source_in_process(args.ticks)
    if not args.no_server:
        exporter_for_real(args.scrapes)
        source_for_real(args.ticks)


if __name__ == "__main__":
    main()
