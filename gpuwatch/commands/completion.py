"""Shell completion for bash, zsh and fish, by argcomplete.

    python -m gpuwatch.commands.completion bash            # the script on stdout
    python -m gpuwatch.commands.completion --all DIR       # gpuwatch.bash, _gpuwatch, gpuwatch.fish

The scripts are argcomplete's own (``argcomplete.shellcode``): on TAB the shell runs
``gpuwatch`` with ``_ARGCOMPLETE`` set, and :func:`complete` answers from the real
parser, so what completes is exactly what ``gpuwatch COMMAND --help`` accepts. Three
things are gpuwatch's own:

- ``gpuwatch`` alone is ``gpuwatch gui``: a line whose first word is an option
  (``gpuwatch --demo oom-ramp <TAB>``) completes as the window's options;
- options that check their values themselves (``--model``, ``--gpu``, ``--precision``,
  ``plan --sort`` …) complete the same names their help lists, ``--demo`` the built-in
  scenarios and ``.toml`` files, ``report SESSION`` ``latest``, the sessions' names and
  session files;
- options whose value is a number or free text complete nothing (not file names).

The packaging build writes the scripts into the bundle; packaging/install.sh installs them.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

PROG = "gpuwatch"
SHELLS = ("bash", "zsh", "fish")
FILE_NAMES = {"bash": f"{PROG}.bash", "zsh": f"_{PROG}", "fish": f"{PROG}.fish"}
FILE_METAVARS = {"PATH", "FILE", "PNG", "DIR"}
SESSION_SUFFIXES = (".gpuwatch.sqlite", ".gpuwatch.sqlite.gz")


def _models() -> list[str]:
    from gpuwatch.budget.catalog import model_names

    return list(model_names())


def _gpus() -> list[str]:
    from gpuwatch.budget.gpus import GPUS

    return [g.name for g in GPUS]


def _precisions() -> list[str]:
    from gpuwatch.budget.precision import PRECISIONS

    return list(PRECISIONS)


def _optimizers() -> list[str]:
    from gpuwatch.budget.precision import OPTIMIZERS

    return list(OPTIMIZERS)


def _presets() -> list[str]:
    from gpuwatch.plan.presets import PRESETS

    return list(PRESETS)


def _scenarios() -> list[str]:
    try:
        from gpuwatch.telemetry.sim.catalog import builtin_names

        return list(builtin_names())
    except (ImportError, OSError):
        return []


# The words an option completes to when it checks its value itself (no argparse choices).
NAMED_VALUES: dict[str, Callable[[], Iterable[str]]] = {
    "model": _models,
    "teacher": _models,
    "gpu": _gpus,
    "precision": _precisions,
    "kv_precision": lambda: ("fp32", "bf16", "fp16", "fp8", "int8", "int4"),
    "optimizer": _optimizers,
    "optimizer_step": lambda: ("foreach", "fused"),
    "checkpointing": lambda: ("none", "selective", "full"),
    "zero": lambda: ("0", "1", "2", "3"),
    "offload": lambda: ("optimizer", "params"),
    "preset": _presets,
    "sort": lambda: ("time", "cost", "memory"),
}


def _files(prefix: str, suffixes: tuple[str, ...] = ()) -> list[str]:
    """Folders (with a trailing ``/``) and files that start with ``prefix``; only the
    files whose names end in ``suffixes`` when given. Hidden ones only when asked for."""
    folder, slash, start = prefix.rpartition("/")
    lead = folder + slash
    try:
        entries = sorted(Path(lead or ".").iterdir())
    except OSError:
        return []
    shown = []
    for entry in entries:
        if not entry.name.startswith(start) or (entry.name.startswith(".") and not start):
            continue
        if entry.is_dir():
            shown.append(f"{lead}{entry.name}/")
        elif not suffixes or entry.name.endswith(suffixes):
            shown.append(f"{lead}{entry.name}")
    return shown


def _demo(prefix: str, **_: object) -> list[str]:
    return [n for n in _scenarios() if n.startswith(prefix)] + _files(prefix, (".toml",))


def _session(prefix: str, **_: object) -> list[str]:
    names = ["latest"]
    try:
        from gpuwatch.sessions.paths import sessions_dir

        names += sorted(p.name for p in sessions_dir().iterdir()
                        if p.name.endswith(SESSION_SUFFIXES))
    except (ImportError, OSError):
        pass
    return [n for n in names if n.startswith(prefix)] + _files(prefix, SESSION_SUFFIXES)


def _any_file(prefix: str, **_: object) -> list[str]:
    return _files(prefix)


def _nothing(prefix: str, **_: object) -> list[str]:
    return []


def _named(values: Callable[[], Iterable[str]]) -> Callable[..., list[str]]:
    def complete(prefix: str, **_: object) -> list[str]:
        return [v for v in values() if v.startswith(prefix)]

    return complete


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Every subcommand's parser, with its (lazily declared) options declared."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for sub_parser in sub.choices.values():
        declared = getattr(sub_parser, "declared", None)
        if callable(declared):
            declared()
    return dict(sub.choices)


def attach_completers(parser: argparse.ArgumentParser) -> None:
    """Give every option and positional of every subcommand what it completes to."""
    for name, sub_parser in subparsers(parser).items():
        for action in sub_parser._actions:
            if action.choices is not None or action.nargs == 0:
                continue                      # argcomplete offers choices itself
            completer: Callable[..., list[str]]
            if action.dest == "demo":
                completer = _demo
            elif name == "report" and action.dest == "session":
                completer = _session
            elif action.dest in NAMED_VALUES:
                completer = _named(NAMED_VALUES[action.dest])
            elif str(action.metavar) in FILE_METAVARS or action.dest in ("out", "output"):
                completer = _any_file
            else:
                completer = _nothing          # a number, a size, a URL: nothing to offer
            action.completer = completer      # type: ignore[attr-defined]


def _as_gui(line: str, point: int) -> tuple[str, int]:
    """``gpuwatch --demo …`` is ``gpuwatch gui --demo …``: the line argcomplete reads,
    with ``gui`` put in where the CLI puts it."""
    head, _, rest = line.partition(" ")
    first, space, _ = rest.lstrip().partition(" ")
    top_level = first in ("-h", "--help", "--version") or (
        not space and first.startswith("--vers"))   # completing --version itself
    if first.startswith("-") and not top_level:
        at = len(head) + 1
        return line[:at] + "gui " + line[at:], point + 4 if point >= at else point
    return line, point


def complete(parser: argparse.ArgumentParser, **argcomplete_options: Any) -> None:
    """Answer the shell's completion request (``_ARGCOMPLETE`` is set) and exit.
    ``argcomplete_options`` go to ``argcomplete.autocomplete`` (tests pass an output
    stream and an exit function)."""
    import argcomplete

    line = os.environ.get("COMP_LINE", "")
    try:
        point = int(os.environ.get("COMP_POINT", len(line)))
    except ValueError:
        point = len(line)
    line, point = _as_gui(line, min(point, len(line)))
    os.environ["COMP_LINE"], os.environ["COMP_POINT"] = line, str(point)
    attach_completers(parser)
    argcomplete.autocomplete(parser, default_completer=_nothing, always_complete_options=False,
                             **argcomplete_options)


def script(shell: str) -> str:
    """The completion script for ``shell`` (bash, zsh or fish)."""
    import argcomplete

    code = argcomplete.shellcode([PROG], shell=shell)
    header = f"# {shell} completion for {PROG} (argcomplete's; do not edit)\n"
    if shell == "zsh":                      # "#compdef" must stay the first line
        first, _, rest = code.lstrip("\n").partition("\n")
        return f"{first}\n{header}{rest}"
    return header + code.lstrip("\n")


def write_all(folder: Path) -> list[Path]:
    """The three scripts in ``folder``, named as each shell looks them up. ``folder``
    is made if missing, but only inside a folder that exists (no missing parents are
    created); OSError if it cannot be."""
    if not folder.is_dir():
        folder.mkdir()
    written = []
    for shell in SHELLS:
        path = folder / FILE_NAMES[shell]
        path.write_text(script(shell))
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gpuwatch.commands.completion",
        description="Print gpuwatch's completion script for a shell, or write all three.")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("shell", nargs="?", choices=SHELLS)
    group.add_argument("--all", metavar="DIR", type=Path,
                       help="write gpuwatch.bash, _gpuwatch and gpuwatch.fish into DIR")
    args = parser.parse_args(argv)
    if args.all is not None:
        try:
            written = write_all(args.all)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            print(f"{parser.prog}: cannot write the completions into {args.all} ({reason}; "
                  "give a folder, or a new one inside a folder that exists)", file=sys.stderr)
            return 2
        for path in written:
            print(path)
        return 0
    sys.stdout.write(script(args.shell))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
