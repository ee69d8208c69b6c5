"""`gpuwatch report` and `gpuwatch sessions`: exporting and managing recorded sessions."""

from __future__ import annotations

import argparse
import math
import sys

from gpuwatch.core.units import UnitError, format_bytes, format_duration, parse_size
from gpuwatch.sessions import liveness, paths
from gpuwatch.sessions.errors import SessionFileError
from gpuwatch.sessions.export import FORMAT_OF_EXTENSION, FORMATS, choose_format, export
from gpuwatch.sessions.reader import SessionReader


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
    try:
        return parse_size(text)
    except UnitError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="export a recorded session as HTML, PDF, CSV or JSON",
                       description="Export a recorded session. SESSION is a session file, "
                                   "its name in the sessions folder, or 'latest'.")
    p.add_argument("session", metavar="SESSION")
    extensions = ", ".join(f"{ext} {fmt}" for ext, fmt in FORMAT_OF_EXTENSION.items())
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="the report format (csv: a zip of CSV tables). Default: the one "
                        f"the extension of -o names ({extensions}); html when -o is not "
                        "given or is a folder. An extension that names another format "
                        "than --format is refused.")
    p.add_argument("-o", "--output", metavar="PATH",
                   help="where to write: a new file in an existing folder, an existing "
                        "regular file, or a folder (the default name goes inside). "
                        "Default: beside the session, *-report.<ext>; '-' writes JSON to "
                        "standard output")
    p.set_defaults(func=run_report)

    p = sub.add_parser("sessions", help="list recorded sessions, or prune old ones",
                       description=f"Sessions recorded in {paths.sessions_dir()}. A session "
                                   "that is still being recorded is never pruned.")
    p.add_argument("--prune-days", type=prune_days, metavar="DAYS",
                   help="delete sessions older than DAYS (0 or more)")
    p.add_argument("--prune-size", type=prune_size, metavar="SIZE",
                   help="delete the oldest sessions until all fit in SIZE (e.g. 2GiB)")
    p.set_defaults(func=run_sessions)


def run_report(args: argparse.Namespace) -> int:
    fmt = choose_format(args.format, args.output)
    session = paths.resolve_session(args.session)
    if args.output == "-":
        if fmt != "json":
            print("gpuwatch: only --format json can be written to standard output",
                  file=sys.stderr)
            return 2
        import json

        from gpuwatch.sessions.report_json import report_to_json
        from gpuwatch.sessions.report_model import build_report

        with SessionReader(session) as reader:
            print(json.dumps(report_to_json(build_report(reader)), indent=2))
        return 0
    interactive = sys.stderr.isatty()

    def progress(fraction: float, text: str) -> None:
        if interactive:
            print(f"\r{fraction * 100:3.0f} %  {text[:70]:<70}", end="", file=sys.stderr)

    out = export(session, fmt, args.output, progress)
    if interactive:
        print(file=sys.stderr)
    print(f"Wrote {out}")
    return 0


def _sessions(n: int) -> str:
    return f"{n} session{'' if n == 1 else 's'}"


def run_sessions(args: argparse.Namespace) -> int:
    if args.prune_days is not None or args.prune_size is not None:
        result = paths.prune(args.prune_days, args.prune_size)
        line = f"Removed {_sessions(len(result.removed))}, freed {format_bytes(result.freed_bytes)}"
        if result.kept_live:
            line += (f"; kept {_sessions(len(result.kept_live))} still being recorded: "
                     + ", ".join(p.name for p in result.kept_live))
        print(line + ".")
        for path, reason in result.failed:
            print(f"gpuwatch: could not remove {path} ({reason})", file=sys.stderr)
        return 1 if result.failed else 0
    found = paths.list_sessions()
    if not found:
        print(f"No sessions recorded yet in {paths.sessions_dir()}.")
        return 0
    for path in found:
        try:
            with SessionReader(path) as r:
                info = r.info()
                gpus = r.gpus()
                hints = len(r.hints())
                peak = r.peak_used_bytes()
        except SessionFileError as exc:
            print(f"{path.name}  (unreadable: {exc.reason})")
            continue
        live = "  (recording)" if info.ended_at_s is None and liveness.is_live(path) else ""
        print(f"{path.name}  {format_duration(info.duration_s):>11}  {len(gpus)} GPU  "
              f"{hints:>3} hints  {info.backend_kind}"
              f"{' ' + info.scenario if info.scenario else ''}  peak {format_bytes(peak)}{live}")
    return 0
