"""What a card's badge says: the reason of the worst open hint for its GPU, in two or
three words and a figure ("OOM in ~2 min", "LEAK +72 MiB/min", "FRAGMENTED 3.1 GiB",
"OOM 07:02 · pid 71310"), with the hint's sentences for its tooltip. No widgets here.

The words are the advisor's (``Hint.badge``, worded in ``gpuwatch.advisor.badges``): one
source of truth for every view. The card adds only what the advisor, having no clock
of its own, cannot: the local time of a death ("OOM · pid 71310" → "OOM 07:02 · pid
71310"). A hint with no badge reads as its severity ("WARNING", "CRITICAL").
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable

from gpuwatch.core.hints import Hint, Severity

SEVERITY_WORDS = {Severity.WARNING: "WARNING", Severity.CRITICAL: "CRITICAL"}
DEATH = "likely-oom"


def _number(hint: Hint, name: str) -> float | None:
    value = hint.value(name)
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None


def clock(at_s: float) -> str:
    """Local time of day, "07:02"."""
    return time.strftime("%H:%M", time.localtime(at_s))


def badge_text(hint: Hint) -> str:
    """The badge's words for ``hint``: the advisor's reason, else its severity."""
    if not hint.badge:
        return SEVERITY_WORDS.get(hint.severity, hint.severity.value.upper())
    at = _number(hint, "exited_at_s")
    if hint.code == DEATH and at is not None and hint.badge.startswith("OOM "):
        try:
            return f"OOM {clock(at)} {hint.badge[4:]}"
        except (OverflowError, ValueError, OSError):     # a time outside any calendar
            return hint.badge
    return hint.badge


def hint_sentence(hint: Hint) -> str:
    """"Critical: <title>" and its evidence, one sentence a line (the badge's tooltip)."""
    lines = [f"{hint.severity.value.capitalize()}: {hint.title}"]
    lines += [f"  {e}" for e in hint.evidence]
    return "\n".join(lines)


def _order(hint: Hint) -> tuple:
    ttf = _number(hint, "time_to_full_s")
    return (-hint.severity.rank, math.inf if ttf is None else ttf)


def card_reasons(hints: Iterable[Hint]) -> dict[int, tuple[Hint, ...]]:
    """GPU index -> its warning and critical hints, the one the badge names first (worst
    severity, then the soonest failure, then the order given)."""
    out: dict[int, list[Hint]] = {}
    for h in hints:
        if h.severity >= Severity.WARNING:
            out.setdefault(h.gpu_index, []).append(h)
    return {gpu: tuple(sorted(hs, key=_order)) for gpu, hs in out.items()}
