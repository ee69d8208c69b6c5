"""`gpuwatch report` and `gpuwatch sessions`: exporting and managing recorded sessions."""

from __future__ import annotations

import argparse
import sys

from gpuwatch.core.units import format_bytes, format_duration, parse_size
from gpuwatch.sessions import paths
from gpuwatch.sessions.errors import SessionFileError
from gpuwatch.sessions.export import FORMATS, export
from gpuwatch.sessions.reader import SessionReader


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="export a recorded session as HTML, PDF, CSV or JSON",
                       description="Export a recorded session. SESSION is a session file, "
                                   "its name in the sessions folder, or 'latest'.")
    p.add_argument("session", metavar="SESSION")
    p.add_argument("--format", choices=FORMATS, default="html")
    p.add_argument("-o", "--output", metavar="PATH",
                   help="where to write (default: beside the session, *-report.<ext>; "
                        "'-' writes JSON to standard output)")
    p.set_defaults(func=run_report)

    p = sub.add_parser("sessions", help="list recorded sessions, or prune old ones",
                       description=f"Sessions recorded in {paths.sessions_dir()}.")
    p.add_argument("--prune-days", type=float, metavar="DAYS",
                   help="delete sessions older than DAYS")
    p.add_argument("--prune-size", metavar="SIZE",
                   help="delete the oldest sessions until all fit in SIZE (e.g. 2GiB)")
    p.set_defaults(func=run_sessions)


def run_report(args: argparse.Namespace) -> int:
    session = paths.resolve_session(args.session)
    if args.output == "-":
        if args.format != "json":
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

    out = export(session, args.format, args.output, progress)
    if interactive:
        print(file=sys.stderr)
    print(f"Wrote {out}")
    return 0


def run_sessions(args: argparse.Namespace) -> int:
    if args.prune_days is not None or args.prune_size is not None:
        limit = parse_size(args.prune_size) if args.prune_size is not None else None
        result = paths.prune(args.prune_days, limit)
        print(f"Removed {len(result.removed)} sessions, freed {format_bytes(result.freed_bytes)}.")
        return 0
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
        print(f"{path.name}  {format_duration(info.duration_s):>11}  {len(gpus)} GPU  "
              f"{hints:>3} hints  {info.backend_kind}"
              f"{' ' + info.scenario if info.scenario else ''}  peak {format_bytes(peak)}")
    return 0
