"""The README's console examples are run, and what they show must match what they print.

Each ``$ gpuwatch ...`` line in a ```console block of README.md is run in-process; the
lines under it are the expected output, trimmed: each must appear in the real output,
in order. ``...`` alone stands for lines left out; a line ending in ``...`` (or ``…``)
matches a line that starts the same; a date and time stand for any date and time.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from cli_support import run

README = Path(__file__).resolve().parents[2] / "README.md"
STAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")


def examples() -> list[tuple[str, list[str]]]:
    found: list[tuple[str, list[str]]] = []
    in_console = False
    for line in README.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_console = line.strip() == "```console"
            continue
        if not in_console:
            continue
        if line.startswith("$ "):
            found.append((line[2:], []))
        elif found:
            found[-1][1].append(line)
    return found


def _matches(expected: str, actual: str) -> bool:
    if expected.endswith(("...", "…")):
        return actual.startswith(expected.rstrip(".…").rstrip())
    if STAMP.search(expected):
        pattern = re.escape(STAMP.sub("\0", expected)).replace("\0", STAMP.pattern)
        return re.fullmatch(pattern, actual) is not None
    return actual == expected


@pytest.mark.parametrize(("command", "shown"), examples(), ids=lambda v: str(v)[:40])
def test_readme_example_prints_what_the_readme_shows(capsys, command, shown):
    argv = shlex.split(command)
    assert argv[0] == "gpuwatch"
    code, out, err = run(capsys, *argv[1:])
    assert code == 0, err
    lines = out.splitlines()
    at = 0
    for expected in (e.rstrip() for e in shown):
        if expected in ("", "..."):
            continue
        while at < len(lines) and not _matches(expected, lines[at].rstrip()):
            at += 1
        assert at < len(lines), f"the README shows {expected!r}, which `{command}` no longer prints"
        at += 1


def test_the_readme_has_examples():
    assert len(examples()) >= 2
