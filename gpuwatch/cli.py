"""The `gpuwatch` command line: argument parsing and dispatch to the subcommands.

Exit codes: 0 ok, 1 runtime failure, 2 bad usage or bad input. Errors are one or two
plain sentences on stderr, never a traceback.

Start-up is kept small: building the parser imports argparse and little else. A
subcommand's options are declared only when it is the one in use, and its code (with
numpy, the budget engine, telemetry, sessions, the advisor or Qt as it needs) is
imported when it runs (see ``gpuwatch.commands.parsing`` and ``benchmarks/startup.py``).
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections.abc import Sequence

from gpuwatch import __version__
from gpuwatch.commands import COMMANDS
from gpuwatch.commands.parsing import HelpFormatter, LazyParser, examples

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2

# Errors that mean bad usage or bad input (exit 2), as (module, class, message prefix).
# They are found in sys.modules when something is raised, not imported up front: an
# error whose module was never imported cannot have been raised, and importing them all
# would load the sessions exporter for every command.
_BAD_INPUT = (
    ("gpuwatch.commands.options", "UsageError", ""),
    ("gpuwatch.telemetry.errors", "ScenarioError", "scenario "),
    ("gpuwatch.sessions.errors", "SessionFileError", ""),
    ("gpuwatch.sessions.export", "ExportError", ""),
    ("gpuwatch.core.units", "UnitError", ""),
    ("gpuwatch.core.output_paths", "OutputPathError", ""),
    ("gpuwatch.core.gpu_selection", "GpuSelectionError", ""),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpuwatch", formatter_class=HelpFormatter,
        description="Monitor GPU memory, budget it before launch, and get warned before "
                    "an out-of-memory crash. `gpuwatch COMMAND --help` tells more.",
        epilog=examples("gpuwatch                                   # the window",
                        "gpuwatch snapshot --demo                   # simulated GPUs",
                        "gpuwatch estimate --model llama-3.1-8b --gpu H100-80GB"))
    parser.add_argument("--version", action="version", version=f"gpuwatch {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=LazyParser)
    for name, summary, declare in COMMANDS:
        sub.add_parser(name, help=summary, declare=declare)
    return parser


def _raised(exc: BaseException, module: str, name: str) -> bool:
    cls = getattr(sys.modules.get(module), name, None)
    return cls is not None and isinstance(exc, cls)


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _refuse_unknown(parser: argparse.ArgumentParser, command: str | None,
                    unknown: list[str]) -> None:
    """Exit 2 with the usage of the subcommand the unknown arguments were given to (not
    the top level's), and the nearest option it has when one is close."""
    owner = _subparsers(parser).get(command or "", parser)
    message = f"unrecognized arguments: {' '.join(unknown)}"
    flags = [s for a in owner._actions for s in a.option_strings if s.startswith("--")]
    first = next((word.split("=")[0] for word in unknown if word.startswith("--")), None)
    close = difflib.get_close_matches(first, flags, n=1, cutoff=0.8) if first else []
    if close:
        message += f" (did you mean {close[0]}?)"
    owner.error(message)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    if "_ARGCOMPLETE" in os.environ:        # the shell asks for completions (TAB)
        from gpuwatch.commands.completion import complete

        complete(parser)                       # answers and exits
    argv = list(sys.argv[1:] if argv is None else argv)
    bare = not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version"))
    if bare and "gui" in _subparsers(parser):
        argv.insert(0, "gui")                # `gpuwatch` alone opens the window
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        _refuse_unknown(parser, args.command, unknown)
    if args.command is None:
        parser.print_help()
        return EXIT_OK
    try:
        return int(args.func(args) or EXIT_OK)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:
        if _raised(exc, "gpuwatch.telemetry.prometheus.backend", "PrometheusUnavailableError"):
            print(f"gpuwatch: {exc.reason}", file=sys.stderr)
            return EXIT_FAILURE
        if _raised(exc, "gpuwatch.telemetry.errors", "NvmlUnavailableError"):
            print(f"gpuwatch: {exc.reason}\n"
                  "To explore gpuwatch on simulated GPUs, add --demo "
                  f"(for example: gpuwatch {args.command} --demo).", file=sys.stderr)
            return EXIT_FAILURE
        for module, name, prefix in _BAD_INPUT:
            if _raised(exc, module, name):
                print(f"gpuwatch: {prefix}{exc}", file=sys.stderr)
                return EXIT_USAGE
        raise


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
