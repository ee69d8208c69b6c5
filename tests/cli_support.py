"""Running the command line in-process, as the tests of every package do."""

from __future__ import annotations

import contextlib
import io

from gpuwatch.cli import main


def _exit_code(exc: SystemExit) -> int:
    """argparse's own usage errors exit 2 (and --help 0) through SystemExit."""
    return exc.code if isinstance(exc.code, int) else 2


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``gpuwatch ARGV``, read through pytest's capsys."""
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = _exit_code(exc)
    out, err = capsys.readouterr()
    return code, out, err


def run_captured(argv: list[str]) -> tuple[int, str, str]:
    """The same with its own capture, for property tests (capsys spans a whole test,
    not one generated example)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = _exit_code(exc)
    return code, out.getvalue(), err.getvalue()
