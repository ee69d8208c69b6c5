"""`gpuwatch report` and `gpuwatch sessions`: exporting and managing recorded sessions.

Their options are declared in :mod:`gpuwatch.commands.session_args`; this module and the
sessions package are imported only when one of them runs.
"""

from __future__ import annotations

import argparse
import sys

from gpuwatch.core.safe_text import clip, visible
from gpuwatch.core.units import format_bytes, format_duration
from gpuwatch.core.wording import plural
from gpuwatch.sessions import liveness, paths
from gpuwatch.sessions.errors import SessionFileError
from gpuwatch.sessions.reader import SessionReader


def run_report(args: argparse.Namespace) -> int:
    from gpuwatch.sessions.export import choose_format, export  # `sessions` needs none of it

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
    print(f"Wrote {visible(str(out))}")
    return 0


def run_sessions(args: argparse.Namespace) -> int:
    if args.prune_days is not None or args.prune_size is not None:
        result = paths.prune(args.prune_days, args.prune_size)
        line = (f"Removed {plural(len(result.removed), 'session')}, "
                f"freed {format_bytes(result.freed_bytes)}")
        if result.kept_live:
            line += (f"; kept {plural(len(result.kept_live), 'session')} still being recorded: "
                     + ", ".join(visible(p.name) for p in result.kept_live))
        print(line + ".")
        for path, reason in result.failed:
            print(f"gpuwatch: could not remove {visible(str(path))} ({visible(reason)})",
                  file=sys.stderr)
        return 1 if result.failed else 0
    found = paths.list_sessions()
    if not found:
        print(f"No sessions recorded yet in {visible(str(paths.sessions_dir()))}.")
        return 0
    for path in found:
        try:
            with SessionReader(path) as r:
                info = r.info()
                gpus = r.gpus()
                hints = len(r.hints())
                peak = r.peak_used_bytes()
        except SessionFileError as exc:
            print(f"{visible(path.name)}  (unreadable: {visible(exc.reason)})")
            continue
        live = "  (recording)" if info.ended_at_s is None and liveness.is_live(path) else ""
        # every text here comes from the file (or its name): any escape is shown, not run
        source = clip(info.backend_kind, 24) + (f" {clip(info.scenario, 60)}"
                                                if info.scenario else "")
        print(f"{visible(path.name)}  {format_duration(info.duration_s):>11}  "
              f"{plural(len(gpus), 'GPU'):<6}  {plural(hints, 'hint'):>9}  {source}"
              f"  peak {format_bytes(peak)}{live}")
    return 0
