"""`gpuwatch serve` under load: does a normal scrape's latency hold?

A real `gpuwatch serve --demo multi-gpu-ddp` child (8 GPUs) on loopback, and a
single-threaded, non-blocking client (selectors) that plays, in turn:

1. quiet: 50 scrapes one after another (the baseline latency);
2. bursts: N scrapes opened at once (200, then 1,000), each reading its whole answer;
   figures: the median, 95th percentile and slowest answer, and how many were answered
   within 60 s;
3. slowloris: 1,000 connections that send a request header one byte every 2 s and
   never finish it, while a normal scraper scrapes every 0.5 s for 20 s;
4. idle flood: 1,000 connections that send nothing, with the same normal scraper.

Everything is bounded: at most 1,000 client connections, each phase stops at its own
deadline, and the child is stopped at the end. ``--code DIR`` runs the exporter from
another copy of the code (e.g. an older release unpacked with ``git archive``), so a
before/after is measured on the same machine in one sitting.

Run:  .venv/bin/python benchmarks/exporter_load.py [--code DIR] [--connections 1000]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "exporter"))
from load_clients import REQUEST, burst  # noqa: E402
from prometheus_support import free_port, stop_process  # noqa: E402


def start(code: Path, port: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(code)}
    child = subprocess.Popen(
        [sys.executable, "-m", "gpuwatch", "serve", "--demo", "multi-gpu-ddp", "--listen",
         f"127.0.0.1:{port}", "--interval", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd="/")
    end = time.monotonic() + 60
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                if b"DCGM_FI_DEV_FB_USED{" in r.read():
                    return child
        except OSError:
            time.sleep(0.2)
    child.kill()
    raise SystemExit(f"the exporter did not start: {child.stderr.read().decode()[-2000:]}")


def one_scrape(port: int, timeout_s: float = 30.0) -> float | None:
    start_s = time.monotonic()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                    timeout=timeout_s) as r:
            ok = b"DCGM_FI_DEV_FB_USED{" in r.read()
    except OSError:
        return None
    return time.monotonic() - start_s if ok else None


def hold(port: int, n: int, drip: bool, seconds: float) -> tuple[list[float | None], int]:
    """``n`` bad connections (dripping a header, or silent) while a normal scraper
    scrapes every 0.5 s; its latencies, and how many bad connections the server cut."""
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        socks.append(s)
    time.sleep(0.5)
    header = REQUEST.replace(b"\r\n\r\n", b"\r\nX-Slow: ")
    latencies: list[float | None] = []
    sent = 0
    end = time.monotonic() + seconds
    next_drip = time.monotonic()
    while time.monotonic() < end:
        if drip and time.monotonic() >= next_drip:
            for s in socks:
                with contextlib.suppress(OSError):
                    s.send(header[sent % len(header):sent % len(header) + 1])
            sent += 1
            next_drip += 2.0
        latencies.append(one_scrape(port))
        time.sleep(0.5)
    cut = 0
    for s in socks:
        try:
            if s.recv(1) == b"":
                cut += 1
        except BlockingIOError:
            pass
        except OSError:
            cut += 1
        s.close()
    return latencies, cut


def describe(name: str, times: list[float | None], within_s: float = 60.0) -> None:
    done = sorted(t for t in times if t is not None)
    answered = sum(1 for t in done if t <= within_s)
    if not done:
        print(f"  {name:<34} none of {len(times)} answered")
        return
    p95 = done[min(len(done) - 1, int(0.95 * len(done)))]
    print(f"  {name:<34} median {statistics.median(done) * 1e3:8.1f} ms   "
          f"p95 {p95 * 1e3:8.1f} ms   slowest {done[-1] * 1e3:8.1f} ms   "
          f"answered {answered}/{len(times)} within {within_s:g} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--code", type=Path, default=REPO,
                        help="the copy of gpuwatch to run the exporter from")
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--hold-s", type=float, default=20.0)
    args = parser.parse_args()
    n = min(args.connections, 1000)
    port = free_port()
    child = start(args.code.resolve(), port)
    try:
        print(f"exporter from {args.code} on 127.0.0.1:{port} "
              f"(load average {os.getloadavg()[0]:.1f})")
        describe("quiet: 50 scrapes in a row", [one_scrape(port) for _ in range(50)])
        describe("burst of 200 at once", burst(port, min(200, n)))
        time.sleep(2)
        describe(f"burst of {n} at once", burst(port, n))
        time.sleep(2)
        lat, cut = hold(port, n, True, args.hold_s)
        describe(f"scrapes beside {n} slowloris", lat)
        print(f"  {'':<34} slowloris connections closed by the server: {cut}/{n}")
        time.sleep(2)
        lat, cut = hold(port, n, False, args.hold_s)
        describe(f"scrapes beside {n} idle", lat)
        print(f"  {'':<34} idle connections closed by the server: {cut}/{n}")
        describe("quiet again: 50 scrapes", [one_scrape(port) for _ in range(50)])
        print(f"  exporter still running: {child.poll() is None}")
    finally:
        stop_process(child, wait_s=15)
        err = child.stderr.read().decode(errors="replace")
        lines = err.count("\n")
        print(f"  exporter's stderr: {lines} lines, {err.count('Traceback')} tracebacks")


if __name__ == "__main__":
    main()
