"""`gpuwatch serve`: the sampler's GPUs as a Prometheus endpoint until stopped.

Its options are declared in :mod:`gpuwatch.commands.serve_args`.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from gpuwatch.commands import options
from gpuwatch.commands.options import UsageError

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
MISSING_CLIENT = ("gpuwatch serve needs the prometheus-client library, which is not "
                  "installed: pip install 'gpuwatch[prometheus]'")


def run_serve(args: argparse.Namespace) -> int:
    address = args.listen
    if not address.loopback and not args.allow_remote:
        raise UsageError(
            f"--listen {address} can be reached from other machines, and the endpoint has "
            "no authentication: anyone who can connect sees process names, users and "
            "memory. Add --allow-remote to listen there anyway (better: keep 127.0.0.1 "
            "and put a reverse proxy with authentication in front)")
    if args.time_scale == options.MAX_SPEED:
        raise UsageError("--time-scale max samples without pausing, which an endpoint "
                         "scraped in real time cannot use; give a number, e.g. 10")
    from gpuwatch.exporter.budgets import BudgetFileError, parse_budget_rule

    try:
        budgets = [parse_budget_rule(text) for text in args.budget]
    except BudgetFileError as exc:
        raise UsageError(f"--budget {exc}") from None
    try:
        from gpuwatch.exporter.server import SnapshotCollector, serve_metrics
    except ImportError as exc:
        if getattr(exc, "name", "") != "prometheus_client":
            raise
        print(f"gpuwatch: {MISSING_CLIENT}", file=sys.stderr)
        return 1
    from gpuwatch.commands.snapshot_text import describe_backend
    from gpuwatch.exporter.state import ExporterState
    from gpuwatch.telemetry.sampler import Sampler
    from gpuwatch.telemetry.source import open_backend

    backend = open_backend(options.source_options(args, loop=True))
    state = ExporterState(budgets, lambda exc: print(
        f"gpuwatch: the advisor failed on a sample (the readings are still served): "
        f"{exc!r}", file=sys.stderr, flush=True))
    # as dcgm-exporter names the host: NODE_NAME (a Kubernetes node), else the host name
    hostname = (args.hostname or os.environ.get("NODE_NAME") or backend.info.hostname
                or "localhost")
    collector = SnapshotCollector(state, hostname, args.top_processes)
    try:
        server, _ = serve_metrics(address, collector)
    except OSError as exc:
        backend.close()
        print(f"gpuwatch: cannot listen on {address}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    stop = threading.Event()
    sampler = Sampler(backend, args.interval, state.on_snapshot,
                      lambda exc: print(f"gpuwatch: a sample failed: {exc}", file=sys.stderr,
                                        flush=True))
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in STOP_SIGNALS}
    try:
        sampler.start()
        print(f"Serving {describe_backend(backend.info)} every {args.interval:g} s at "
              f"http://{address}/metrics (hostname={hostname}); Ctrl-C stops", flush=True)
        while not stop.wait(0.5):
            if not sampler.running:
                print("gpuwatch: sampling stopped; the endpoint closes", file=sys.stderr)
                return 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sampler.stop()
        server.shutdown()
        server.server_close()
        backend.close()
    return 0
