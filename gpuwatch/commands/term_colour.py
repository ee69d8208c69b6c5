"""Colour for danger and warning in terminal output: ``--color auto|always|never``.

``auto`` (the default) colours only a terminal, and never when ``NO_COLOR`` is set to
anything but the empty string (https://no-color.org) or ``TERM`` is ``dumb``. Only the
few things a reader must not miss are coloured: a GPU that is lost or failing and memory
almost full in red, memory getting full in yellow, and hints by their severity.
"""

from __future__ import annotations

import argparse
import os
from typing import TextIO

CHOICES = ("auto", "always", "never")
RED, YELLOW, RESET = "\033[1;31m", "\033[33m", "\033[0m"
# The advisor's defaults for "memory almost full" (AdvisorSettings.free_critical_fraction
# and free_warning_fraction; a test keeps them equal). Copied, not imported: the advisor
# would bring numpy into `snapshot`.
FREE_CRITICAL_FRACTION = 0.02
FREE_WARNING_FRACTION = 0.05
LEVELS = {"critical": RED, "warning": YELLOW}


def add_color(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--color", "--colour", dest="color", choices=CHOICES, default="auto",
        help="colour danger and warning: auto (a terminal, unless NO_COLOR is set), "
             "always or never (default auto)")


def wanted(choice: str, stream: TextIO) -> bool:
    """Whether to write colour codes to ``stream`` for ``--color choice``."""
    if choice == "never":
        return False
    if choice == "always":
        return True
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def paint(text: str, level: str | None, on: bool) -> str:
    """``text`` in the colour of ``level`` ("critical", "warning"; None: plain)."""
    code = LEVELS.get(level or "")
    return f"{code}{text}{RESET}" if on and code else text


def memory_level(total_bytes: int | None, free_bytes: int | None) -> str | None:
    """"critical" or "warning" when free memory is under the advisor's thresholds."""
    if not total_bytes or free_bytes is None:
        return None
    free = free_bytes / total_bytes
    if free < FREE_CRITICAL_FRACTION:
        return "critical"
    if free < FREE_WARNING_FRACTION:
        return "warning"
    return None
