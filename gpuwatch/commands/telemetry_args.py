"""The options of `gpuwatch snapshot`, `gpuwatch record` and `gpuwatch scenarios`.

Their work is in :mod:`~gpuwatch.commands.snapshot_cmd`, :mod:`~gpuwatch.commands.record_cmd`
and :mod:`~gpuwatch.commands.scenarios_cmd`, each imported only when its command runs.
"""

from __future__ import annotations

import argparse

from gpuwatch.commands import options
from gpuwatch.commands.parsing import SESSIONS_DIR, describe
from gpuwatch.commands.term_colour import add_color


def declare_snapshot(p: argparse.ArgumentParser) -> None:
    describe(
        p,
        description="Take one sample of every GPU and its processes and print it: a block "
                    "per GPU with its memory, activity and processes, or one "
                    "gpuwatch.snapshot/1 JSON document.",
        example_lines=["gpuwatch snapshot",
                       "gpuwatch snapshot --demo oom-ramp --at 300 --json",
                       "gpuwatch snapshot --prometheus http://prometheus:9090"],
        run="gpuwatch.commands.snapshot_cmd:run_snapshot")
    options.add_demo(p)
    options.add_prometheus(p)
    options.add_gpu_ids(p)
    p.add_argument("--at", type=options.seconds, default=0.0, metavar="S",
                   help="simulated GPUs only: sample the scenario at S virtual seconds "
                        "from its start (default 0)")
    p.add_argument("--json", action="store_true",
                   help="print the gpuwatch.snapshot/1 JSON document instead of the table "
                        "(the same as --format json)")
    options.add_format(p, ("table", "json", "csv"),
                       "table: a block per GPU; json: the gpuwatch.snapshot/1 document; "
                       "csv: a header and one row per GPU (columns in docs/cli.md)")
    add_color(p)


def declare_record(p: argparse.ArgumentParser) -> None:
    describe(
        p,
        description="Sample at an interval without a window, with the advisor running: "
                    "one line per GPU each tick, and each hint as it fires. The samples "
                    "and hints are saved as a session for `gpuwatch report`. Ctrl-C (or "
                    "the end of --duration) stops it with a summary.",
        example_lines=["gpuwatch record --interval 5 --duration 3600",
                       "gpuwatch record --demo oom-ramp --time-scale max --no-save",
                       "gpuwatch record --prometheus http://prometheus:9090 "
                       "--match '{cluster=\"a\"}'"],
        run="gpuwatch.commands.record_cmd:run_record")
    options.add_demo(p)
    options.add_prometheus(p)
    options.add_gpu_ids(p)
    options.add_sampling(p)
    p.add_argument("--duration", type=options.positive_seconds, metavar="S",
                   help="stop after S seconds (virtual seconds on simulated GPUs; "
                        "default: the scenario's length, or until Ctrl-C on real GPUs)")
    p.add_argument("--json", action="store_true",
                   help="print JSON lines instead of text: a gpuwatch.snapshot/1 document "
                        "per tick and a line per hint event (the same as --format json)")
    options.add_format(p, ("text", "json", "csv"),
                       "text: a line per GPU each tick; json: JSON lines; csv: a header, "
                       "then one row per GPU per sample (columns in docs/cli.md), hints and "
                       "the summary on stderr")
    add_color(p)
    save = p.add_mutually_exclusive_group()
    save.add_argument("--out", metavar="FILE",
                      help="the session file to write (default: a new file in "
                           f"{SESSIONS_DIR})")
    save.add_argument("--no-save", action="store_true", help="print only; record no session")


def declare_scenarios(p: argparse.ArgumentParser) -> None:
    describe(
        p,
        description="List the built-in scenarios that --demo can run on simulated GPUs: "
                    "name, GPU count, length in virtual time and what it shows. A .toml "
                    "file of your own works too (see docs/scenarios.md).",
        example_lines=["gpuwatch scenarios",
                       "gpuwatch snapshot --demo multi-gpu-ddp"],
        run="gpuwatch.commands.scenarios_cmd:run_scenarios")
