"""The options of `gpuwatch serve`; its work is in :mod:`gpuwatch.commands.serve`,
imported only when it runs (with prometheus-client, the telemetry and the advisor)."""

from __future__ import annotations

import argparse

from gpuwatch.commands import options
from gpuwatch.commands.parsing import describe

MAX_TOP_PROCESSES = 100


def listen_address(text: str) -> object:
    from gpuwatch.exporter.listen import ListenError, parse_listen

    return options.parsed(text, parse_listen, ListenError, "an address to listen on")


def top_processes(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_TOP_PROCESSES:
        raise argparse.ArgumentTypeError(
            f"the number of processes per GPU must be from 1 to {MAX_TOP_PROCESSES}, "
            f"got {text!r}")
    return int(text)


def declare(p: argparse.ArgumentParser) -> None:
    from gpuwatch.exporter.listen import DEFAULT_LISTEN

    describe(
        p,
        description="Serve this machine's GPUs, their processes and the advisor's hints "
                    "as a Prometheus/OpenMetrics endpoint (/metrics), with dcgm-exporter's "
                    "metric names where both know the same thing and gpuwatch_* metrics "
                    "for the rest (docs/cluster.md lists them). It has no authentication: "
                    "it listens on loopback unless told otherwise with --allow-remote; "
                    "put it behind a reverse proxy to reach it from elsewhere.",
        example_lines=["gpuwatch serve                       # http://127.0.0.1:9400/metrics",
                       "gpuwatch serve --listen 0.0.0.0:9400 --allow-remote",
                       "gpuwatch serve --demo multi-gpu-ddp --listen 9401"],
        run="gpuwatch.commands.serve:run_serve")
    options.add_demo(p)
    options.add_gpu_ids(p)
    options.add_sampling(p)
    p.add_argument("--listen", type=listen_address, default=listen_address(DEFAULT_LISTEN),
                   metavar="HOST:PORT",
                   help=f"the address to accept scrapes on: HOST:PORT, [IPv6]:PORT or a "
                        f"port alone (default {DEFAULT_LISTEN}: this machine only)")
    p.add_argument("--allow-remote", action="store_true",
                   help="allow --listen on an address other machines can reach (the "
                        "endpoint has no authentication; default: loopback only)")
    p.add_argument("--hostname", metavar="NAME",
                   help="the hostname label on every series (default: $NODE_NAME where "
                        "set, as on a Kubernetes node, else this machine's host name, as "
                        "dcgm-exporter does)")
    p.add_argument("--top-processes", type=top_processes, default=8, metavar="N",
                   help="series for the N processes using the most memory on each GPU; "
                        "the rest are summed under pid=\"other\" (1 to "
                        f"{MAX_TOP_PROCESSES}, default 8)")
    p.add_argument("--budget", action="append", default=[], metavar="PATTERN=FILE",
                   help="link processes whose command line contains PATTERN to the "
                        "estimate in FILE (written by `gpuwatch estimate … --json`): their "
                        "predicted peak is exported and the advisor weighs them against "
                        "it; repeatable (default: no budgets)")
