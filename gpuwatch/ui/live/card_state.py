"""What a GPU card says about its state, in words: no widgets here.

A card's outline and badge are the worst open advisor hint for its GPU (warning or
critical), so the card and the Advisor tab never disagree; a lost GPU outranks both.
Every state has a word as well as a colour, so nobody needs to tell amber from red.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gpuwatch.core.hints import Severity
from gpuwatch.core.snapshot import GpuState
from gpuwatch.core.units import UnitSystem, format_bytes
from gpuwatch.ui.settings import Thresholds
from gpuwatch.ui.widgets import theme

# The badge's word for each state a card can be in (None: no badge).
LEVEL_WORDS: Mapping[Severity, str] = {Severity.WARNING: "WARNING",
                                       Severity.CRITICAL: "CRITICAL"}
STATE_WORDS: Mapping[GpuState, str] = {GpuState.LOST: "LOST", GpuState.ERROR: "ERROR"}


def level_color(c: theme.Colors, level: Severity | None) -> str | None:
    """The colour of a state; None for a card with nothing open."""
    if level is Severity.CRITICAL:
        return c.critical
    if level is Severity.WARNING:
        return c.warning
    return None


def fill_level(used_percent: float | None, thresholds: Thresholds | None) -> Severity | None:
    """The memory threshold ``used_percent`` has reached (the settings' 85 and 95 %
    unless changed): what colours a card's % used."""
    if used_percent is None or thresholds is None:
        return None
    if used_percent >= thresholds.memory_critical_percent:
        return Severity.CRITICAL
    if used_percent >= thresholds.memory_warning_percent:
        return Severity.WARNING
    return None


def since_text(seconds: float) -> str:
    """A short "how long ago" for the lost card's big figure: 55 s, 12 min, 3 h, 2 d."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        return f"{s // 3600} h"
    return f"{s // 86400} d"


def lost_phrase(state: GpuState, seconds: float | None) -> str:
    """"lost 55 s ago" (or "read failed 12 s ago"); "lost" when the time is unknown."""
    word = "lost" if state is GpuState.LOST else "read failed"
    return word if seconds is None else f"{word} {since_text(seconds)} ago"


def headroom_text(headroom_bytes: float, units: UnitSystem) -> str:
    """The budget's room above what a process holds now, in neutral words: it says how
    much more the process may take, not that all is well."""
    return f"may grow ~{format_bytes(headroom_bytes, units)} more"


def describe(name: str, figures: Iterable[str], state: str | None,
             hints: Iterable[str]) -> str:
    """The card's accessible description: its state first, then its figures."""
    parts = [state] if state else []
    parts += list(hints)
    parts += [f for f in figures if f]
    return f"{name}. " + ". ".join(parts) if parts else name
