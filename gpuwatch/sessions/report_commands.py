"""Command lines in a report: shown whole where they fit, cut at a separator otherwise
(:func:`cut_command`); :func:`wrap_command` breaks them into lines only after a space,
``/`` or ``=`` (a piece longer than a whole line is the one exception), so a command
never breaks inside a word ("llama-3.1-8 / b")."""

from __future__ import annotations

import re
import shlex

from gpuwatch.sessions.session_rows import ProcessRow

# a command is cut to this many lines of COMMAND_COLUMNS characters in the process table
COMMAND_COLUMNS, COMMAND_LINES = 96, 2
ELLIPSIS = "…"


def command_line(row: ProcessRow) -> str:
    """The process's command line as a shell would take it, after its container."""
    command = shlex.join(row.cmdline) if row.cmdline else ""
    return f"[{row.container}] {command}" if row.container else command


_PIECE = re.compile(r"[/=]*[^ /=]+[/=]?|[/=]+| +")


def command_pieces(command: str) -> list[str]:
    """``command`` cut where a line may break: after a ``/`` or ``=`` (a path's leading
    ``/`` stays with its first name: ``--out=``, ``/mnt/``, ``data/``), and around
    spaces (a run of spaces is a piece of its own)."""
    return _PIECE.findall(command)


def wrap_command(command: str, columns: int) -> list[str]:
    """Lines of at most ``columns`` characters, broken only after a space, ``/`` or ``=``
    (the spaces at a break are dropped); a piece longer than a line is split."""
    columns = max(columns, 8)
    lines: list[str] = []
    line = ""
    for piece in command_pieces(command):
        if piece.isspace():
            if line:
                line += piece
            continue
        if len(line) + len(piece) > columns and line.strip():
            lines.append(line.rstrip())
            line = ""
        while len(piece) > columns:
            lines.append(piece[:columns])
            piece = piece[columns:]
        line += piece
    if line.strip() or not lines:
        lines.append(line.rstrip())
    return lines


def cut_command(command: str, columns: int = COMMAND_COLUMNS,
                lines: int = COMMAND_LINES) -> str:
    """``command`` if it wraps into at most ``lines`` lines of ``columns``; else its
    longest start that does, cut at a separator, with an ellipsis."""
    if len(wrap_command(command, columns)) <= lines:
        return command
    kept = at_space = ""
    for piece in command_pieces(command[: columns * (lines + 1)]):
        trial = kept + piece
        if len(wrap_command(trial.rstrip() + " " + ELLIPSIS, columns)) > lines:
            break
        kept = trial
        if piece.isspace():
            at_space = kept
    if len(at_space) >= 0.75 * len(kept):   # rather after a whole word than in a path
        kept = at_space
    if not kept.strip():                     # one enormous piece: cut it anywhere
        kept = command[: columns * lines - 2]
    return kept.rstrip() + " " + ELLIPSIS
