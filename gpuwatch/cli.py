"""The `gpuwatch` command line: argument parsing and dispatch to the subcommands.

Exit codes: 0 ok, 1 runtime failure, 2 bad usage or bad input. Errors are one or two
plain sentences on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from gpuwatch import __version__
from gpuwatch.commands import session_cmds, telemetry_cmds
from gpuwatch.commands.estimate import add_estimate_parser
from gpuwatch.commands.gui import add_gui_parser
from gpuwatch.commands.options import UsageError
from gpuwatch.core.output_paths import OutputPathError
from gpuwatch.core.units import UnitError
from gpuwatch.sessions.errors import SessionFileError
from gpuwatch.sessions.export import ExportError
from gpuwatch.telemetry.errors import NvmlUnavailableError, ScenarioError

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpuwatch",
        description="Monitor GPU memory, budget it before launch, and get warned before "
                    "an out-of-memory crash.")
    parser.add_argument("--version", action="version", version=f"gpuwatch {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_gui_parser(sub)
    telemetry_cmds.add_parsers(sub)
    session_cmds.add_parsers(sub)
    add_estimate_parser(sub)
    return parser


def _subcommands(parser: argparse.ArgumentParser) -> set[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    return set()


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    bare = not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version"))
    if bare and "gui" in _subcommands(parser):
        argv.insert(0, "gui")                # `gpuwatch` alone opens the window
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_OK
    try:
        return int(args.func(args) or EXIT_OK)
    except NvmlUnavailableError as exc:
        print(f"gpuwatch: {exc.reason}\n"
              "To explore gpuwatch on simulated GPUs, add --demo "
              "(for example: gpuwatch snapshot --demo).", file=sys.stderr)
        return EXIT_FAILURE
    except UsageError as exc:
        print(f"gpuwatch: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ScenarioError as exc:
        print(f"gpuwatch: scenario {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (SessionFileError, ExportError, UnitError) as exc:
        print(f"gpuwatch: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OutputPathError as exc:
        print(f"gpuwatch: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
