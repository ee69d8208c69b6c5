"""The options of `gpuwatch report` and `gpuwatch sessions`.

Their work is in :mod:`gpuwatch.commands.session_cmds`, imported when one of them runs.
The report formats are written out here rather than imported from
``gpuwatch.sessions.export`` (a test keeps the two equal), so that building the parser
loads no sessions code.
"""

from __future__ import annotations

import argparse
import math

from gpuwatch.commands import options
from gpuwatch.commands.parsing import SESSIONS_DIR, describe

RUNS = "gpuwatch.commands.session_cmds"

FORMATS = ("html", "pdf", "csv", "json")          # = gpuwatch.sessions.export.FORMATS
FORMAT_OF_EXTENSION = {".html": "html", ".htm": "html", ".pdf": "pdf", ".json": "json",
                       ".zip": "csv", ".csv": "csv"}  # = sessions.export.FORMAT_OF_EXTENSION


def prune_days(text: str) -> float:
    """``--prune-days``: a finite number of days, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"the age must be a number of days, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(
            f"the age must be a finite number of days, 0 or more, got {text!r}")
    return value


def prune_size(text: str) -> int:
    """``--prune-size``: a size such as 2GiB or 0B."""
    from gpuwatch.core.units import UnitError, parse_size

    return options.parsed(text, parse_size, UnitError)


def declare_report(p: argparse.ArgumentParser) -> None:
    describe(
        p,
        description="Export a recorded session as a report: its GPUs, memory over time, "
                    "processes and hints.",
        example_lines=["gpuwatch report latest                      # HTML beside the session",
                       "gpuwatch report latest -o run.pdf            # the format follows -o",
                       "gpuwatch report latest --format json -o -    # to standard output"],
        run=f"{RUNS}:run_report")
    p.add_argument("session", metavar="SESSION",
                   help="a session file, the name of one in the sessions folder, or "
                        "'latest' (the newest)")
    extensions = ", ".join(f"{ext} {fmt}" for ext, fmt in FORMAT_OF_EXTENSION.items())
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="the report format: html (one self-contained page), pdf, csv (a "
                        "zip of CSV tables; with -o NAME.csv, the GPU samples alone as "
                        "one CSV file) or json (gpuwatch.report/1). Default: the "
                        f"format the extension of -o names ({extensions}); html when -o "
                        "is not given or is a folder, json when -o is '-'. An extension "
                        "that names another format than --format is refused.")
    p.add_argument("-o", "--output", metavar="PATH",
                   help="where to write: a new file in an existing folder, an existing "
                        "regular file, or a folder (the default name goes inside); '-' "
                        "writes JSON to standard output. Default: beside the session, "
                        "named *-report.<ext>")


def declare_sessions(p: argparse.ArgumentParser) -> None:
    describe(
        p,
        description=f"List the sessions recorded in {SESSIONS_DIR}, newest first: length, "
                    "GPUs, hints, source and peak memory. With --prune-days or "
                    "--prune-size, delete old ones instead. A session that is still being "
                    "recorded is never pruned.",
        example_lines=["gpuwatch sessions",
                       "gpuwatch sessions --prune-days 30 --prune-size 2GiB"],
        run=f"{RUNS}:run_sessions")
    p.add_argument("--prune-days", type=prune_days, metavar="DAYS",
                   help="delete sessions older than DAYS days, 0 or more; fractions allowed "
                        "(default: no age limit)")
    p.add_argument("--prune-size", type=prune_size, metavar="SIZE",
                   help="delete the oldest sessions until the rest fit in SIZE bytes; give "
                        "the unit, e.g. 2GiB or 500MB (default: no size limit)")
