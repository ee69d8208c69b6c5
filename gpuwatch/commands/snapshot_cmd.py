"""`gpuwatch snapshot`: one sample of every GPU, as a table or a JSON document.

Its options are declared in :mod:`gpuwatch.commands.telemetry_args`; this module is
imported only when the command runs, and needs neither numpy nor the advisor or sessions.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace

from gpuwatch.commands import options
from gpuwatch.commands.snapshot_text import format_snapshot
from gpuwatch.commands.term_colour import wanted
from gpuwatch.core.snapshot_csv import csv_text, snapshot_rows
from gpuwatch.core.snapshot_json import snapshot_to_json
from gpuwatch.telemetry.source import open_backend


def run_snapshot(args: argparse.Namespace) -> int:
    fmt = options.output_format(args)
    source = options.source_options(args, pcie_inline=True)
    if source.demo is not None:          # simulated: the sample is taken exactly at --at
        source = replace(source, time_scale="max")
    backend = open_backend(source)
    try:
        snap = backend.sample()
    finally:
        backend.close()
    if fmt == "json":
        print(json.dumps(snapshot_to_json(snap), indent=2))
    elif fmt == "csv":
        sys.stdout.write(csv_text(snapshot_rows(snap), header=True))
    else:
        print(format_snapshot(snap, colour=wanted(args.color, sys.stdout)))
    return 0
