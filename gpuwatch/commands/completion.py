"""Shell completion scripts for bash, zsh and fish, generated from the argparse parser.

    python -m gpuwatch.commands.completion bash            # the script on stdout
    python -m gpuwatch.commands.completion --all DIR       # gpuwatch.bash, _gpuwatch, gpuwatch.fish

The subcommands declare their options lazily (:mod:`gpuwatch.commands.parsing`), so
each subcommand's parser is declared here first; what the scripts complete is exactly
what ``gpuwatch COMMAND --help`` shows. Options with choices complete those choices,
``--demo`` completes the built-in scenario names, and options whose value is a file
(metavar PATH, FILE, PNG, SESSION) complete file names. The packaging build writes the
scripts into the bundle; packaging/install.sh installs them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

PROG = "gpuwatch"
SHELLS = ("bash", "zsh", "fish")
FILE_NAMES = {"bash": f"{PROG}.bash", "zsh": f"_{PROG}", "fish": f"{PROG}.fish"}
FILE_METAVARS = {"PATH", "FILE", "PNG", "SESSION", "DIR"}


@dataclass(frozen=True)
class Option:
    flags: tuple[str, ...]
    help: str
    takes_value: bool
    values: tuple[str, ...] = ()        # the words it completes to (choices, scenarios)
    is_file: bool = False


@dataclass
class Command:
    name: str
    summary: str
    options: list[Option] = field(default_factory=list)
    positional_file: bool = False       # a file name as its positional argument


def _summary(text: str | None) -> str:
    """The first sentence of a help text, without argparse's %(default)s escapes."""
    if not text or text == argparse.SUPPRESS:
        return ""
    first = text.replace("%%", "%").split(". ")[0].split(" (default")[0]
    return " ".join(first.split())[:90]


def _scenario_names() -> tuple[str, ...]:
    try:
        from gpuwatch.telemetry.sim.catalog import builtin_names

        return tuple(builtin_names())
    except (ImportError, OSError):
        return ()


def describe_cli(parser: argparse.ArgumentParser | None = None) -> list[Command]:
    """Every subcommand with its options, declared (the lazy ones included)."""
    if parser is None:
        from gpuwatch.cli import build_parser

        parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    summaries = {a.dest: a.help or "" for a in sub._choices_actions}
    commands = []
    for name, sub_parser in sub.choices.items():
        declared = getattr(sub_parser, "declared", None)
        if callable(declared):
            declared()
        command = Command(name, _summary(summaries.get(name)))
        for action in sub_parser._actions:
            if not action.option_strings:
                command.positional_file |= str(action.metavar) in FILE_METAVARS
                continue
            values: tuple[str, ...] = ()
            if action.choices is not None:
                values = tuple(str(c) for c in action.choices)
            elif action.dest == "demo":
                values = _scenario_names()
            command.options.append(Option(
                tuple(action.option_strings), _summary(action.help), action.nargs != 0,
                values, str(action.metavar) in FILE_METAVARS))
        commands.append(command)
    return commands


# bash -------------------------------------------------------------------------------
def bash_script(commands: list[Command]) -> str:
    cases = []
    for c in commands:
        flags = " ".join(f for o in c.options for f in o.flags)
        value_cases = []
        for o in c.options:
            if not o.takes_value:
                continue
            pattern = "|".join(o.flags)
            if o.values:
                reply = f'COMPREPLY=($(compgen -W "{" ".join(o.values)}" -- "$cur")); '
            elif o.is_file:
                reply = 'COMPREPLY=($(compgen -f -- "$cur")); '
            else:
                reply = ""              # a number or a name: nothing to offer
            value_cases.append(f"        {pattern}) {reply}return ;;")
        positional = ('    [[ "$cur" != -* ]] && { COMPREPLY=($(compgen -f -- "$cur")); return; }\n'
                      if c.positional_file else "")
        cases.append(
            f"    {c.name})\n"
            f'      case "$prev" in\n' + "\n".join(value_cases) + ("\n" if value_cases else "")
            + "      esac\n"
            + positional.replace("    [[", "      [[")
            + f'      COMPREPLY=($(compgen -W "{flags}" -- "$cur")) ;;')
    names = " ".join(c.name for c in commands)
    default = next((c for c in commands if c.name == "gui"), None)
    default_flags = " ".join(f for o in default.options for f in o.flags
                             if f not in ("-h", "--help")) if default else ""
    return f"""# bash completion for {PROG} (generated from its command line; do not edit)
_{PROG}() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}} cmd="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "${{COMP_WORDS[i]}}" in -*) ;; *) cmd=${{COMP_WORDS[i]}}; break ;; esac
  done
  if [[ -z "$cmd" ]]; then
    if [[ "$cur" == -* ]]; then
      COMPREPLY=($(compgen -W "--help --version {default_flags}" -- "$cur"))
    else
      COMPREPLY=($(compgen -W "{names}" -- "$cur"))
    fi
    return
  fi
  case "$cmd" in
{chr(10).join(cases)}
  esac
}}
complete -F _{PROG} {PROG}
"""


# zsh --------------------------------------------------------------------------------
def _zsh_quote(text: str) -> str:
    return text.replace("'", "'\\''").replace("[", "\\[").replace("]", "\\]").replace(":", "\\:")


def zsh_script(commands: list[Command]) -> str:
    functions = []
    for c in commands:
        specs = []
        for o in c.options:
            flags = o.flags
            help_ = _zsh_quote(o.help)
            action = ""
            if o.takes_value:
                if o.values:
                    action = f":value:({' '.join(o.values)})"
                elif o.is_file:
                    action = ":file:_files"
                else:
                    action = ":value: "
            if len(flags) == 1:
                specs.append(f"'{flags[0]}[{help_}]{action}'")
            else:
                specs.append(f"'({' '.join(flags)})'{{{','.join(flags)}}}'[{help_}]{action}'")
        if c.positional_file:
            specs.append("'1:session file:_files'")
        body = " \\\n    ".join(specs)
        name = c.name.replace("-", "_")
        functions.append(f"_{PROG}_{name}() {{\n  _arguments -s \\\n    {body}\n}}")
    described = "\n".join(f"    '{c.name}:{_zsh_quote(c.summary)}'" for c in commands)
    return f"""#compdef {PROG}
# zsh completion for {PROG} (generated from its command line; do not edit)
{chr(10).join(functions)}

_{PROG}() {{
  local -a commands
  commands=(
{described}
  )
  if (( CURRENT == 2 )); then
    _describe -t commands '{PROG} command' commands
    _arguments '--help[show help]' '--version[show the version]'
    return
  fi
  local cmd=${{words[2]}}
  shift words
  (( CURRENT-- ))
  if (( $+functions[_{PROG}_${{cmd//-/_}}] )); then
    _{PROG}_${{cmd//-/_}}
  fi
}}

_{PROG} "$@"
"""


# fish -------------------------------------------------------------------------------
def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fish_script(commands: list[Command]) -> str:
    names = " ".join(c.name for c in commands)
    lines = [f"# fish completion for {PROG} (generated from its command line; do not edit)",
             f"complete -c {PROG} -f",
             f"complete -c {PROG} -n 'not __fish_seen_subcommand_from {names}' -l version "
             "-d 'show the version'"]
    for c in commands:
        lines.append(f"complete -c {PROG} -n 'not __fish_seen_subcommand_from {names}' "
                     f"-a {c.name} -d {_fish_quote(c.summary)}")
    for c in commands:
        cond = f"-n '__fish_seen_subcommand_from {c.name}'"
        if c.positional_file:
            lines.append(f"complete -c {PROG} {cond} -F")
        for o in c.options:
            parts = [f"complete -c {PROG} {cond}"]
            for flag in o.flags:
                parts.append(f"-l {flag[2:]}" if flag.startswith("--") else f"-s {flag[1:]}")
            if o.takes_value:
                if o.values:
                    parts.append(f"-x -a {_fish_quote(' '.join(o.values))}")
                elif o.is_file:
                    parts.append("-r -F")
                else:
                    parts.append("-x")
            if o.help:
                parts.append(f"-d {_fish_quote(o.help)}")
            lines.append(" ".join(parts))
    return "\n".join(lines) + "\n"


GENERATORS: dict[str, Callable[[list[Command]], str]] = {
    "bash": bash_script, "zsh": zsh_script, "fish": fish_script}


def script(shell: str, commands: list[Command] | None = None) -> str:
    return GENERATORS[shell](describe_cli() if commands is None else commands)


def write_all(folder: Path) -> list[Path]:
    """The three scripts in ``folder``, named as each shell looks them up. ``folder``
    is made if missing, but only inside a folder that exists (no missing parents are
    created); OSError if it cannot be."""
    if not folder.is_dir():
        folder.mkdir()
    commands = describe_cli()
    paths = []
    for shell in SHELLS:
        path = folder / FILE_NAMES[shell]
        path.write_text(script(shell, commands), encoding="utf-8")
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gpuwatch.commands.completion",
        description="Print gpuwatch's completion script for a shell, or write all three.")
    parser.add_argument("shell", nargs="?", choices=SHELLS)
    parser.add_argument("--all", metavar="DIR", type=Path,
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
    if args.shell is None:
        parser.error("name a shell (bash, zsh or fish) or give --all DIR")
    sys.stdout.write(script(args.shell))
    return 0


if __name__ == "__main__":
    sys.exit(main())
