"""A hint's reason in two or three words and a figure, for a GPU card's badge
(``Hint.badge``): "OOM in ~3 min", "LEAK +71 MiB/min", "FRAGMENTED 3.1 GiB", "LOST",
"OOM · pid 71310". The rules build them here, so every badge is worded one way and
stays badge-sized whatever the figure (a forecast of centuries, a rate of exabytes).

Sizes are binary (GiB), as in the hints' own sentences.
"""

from __future__ import annotations

import math

from gpuwatch.core.units import format_bytes

LIMIT = 99_999          # a larger figure is absurd: shown as ">99999 <unit>"


def short_duration(seconds: float) -> str:
    """"~45 s", "~2 min", "~3 h", "~2 d": a forecast's lead, rounded as it deserves."""
    s = max(0.0, seconds) if math.isfinite(seconds) else math.inf
    if s < 90:
        return f"~{max(1, round(s))} s" if s < 60 else "~1 min"
    if s < 90 * 60:
        return f"~{round(s / 60)} min"
    if s < 36 * 3600:
        return f"~{round(s / 3600)} h"
    return f"~{min(round(s / 86400), LIMIT)} d" if math.isfinite(s) else f"~{LIMIT} d"


def short_bytes(n: float) -> str:
    """"3.1 GiB", "72 MiB" (no decimal from ten on: a badge is read at a glance)."""
    if not math.isfinite(n):
        return f">{LIMIT} EiB"
    text = format_bytes(n)
    number, _, unit = text.partition(" ")
    try:
        value = float(number)
    except ValueError:
        return text
    if abs(value) > LIMIT:
        return f">{LIMIT} {unit}"
    return f"{value:.0f} {unit}" if abs(value) >= 10 else text


def oom(time_to_full_s: float | None, free_bytes: float, full_now: bool) -> str:
    """``oom-risk``: "FULL", "OOM in ~3 min", or "1.2 GiB FREE" with no forecast."""
    if full_now:
        return "FULL"
    if time_to_full_s is not None:
        return f"OOM in {short_duration(time_to_full_s)}"
    return f"{short_bytes(free_bytes)} FREE"


def leak(bytes_per_s: float) -> str:
    """``memory-leak``: "LEAK +71 MiB/min"."""
    return f"LEAK +{short_bytes(bytes_per_s * 60)}/min"


def fragmented(idle_bytes: float | None) -> str:
    """``fragmentation``: "FRAGMENTED 3.1 GiB" (what it holds beyond its need)."""
    if idle_bytes is None or not idle_bytes > 0:
        return "FRAGMENTED"
    return f"FRAGMENTED {short_bytes(idle_bytes)}"


def died(pid: int) -> str:
    """``likely-oom``: "OOM · pid 71310" (a card puts the local time after "OOM")."""
    return f"OOM · pid {pid}"


def over(excess_bytes: float) -> str:
    """``contention``: "SHARED +2.0 GiB over"."""
    return f"SHARED +{short_bytes(excess_bytes)} over" if excess_bytes > 0 \
        else "SHARED, TOO FULL"


def short(lacking_bytes: float) -> str:
    """``budget-exceeds-capacity``: "WON'T FIT: 3.0 GiB short"."""
    return f"WON'T FIT: {short_bytes(lacking_bytes)} short" if lacking_bytes > 0 \
        else "WON'T FIT"


LOST = "LOST"
