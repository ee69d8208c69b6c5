"""What a card's badge says: the reason of the worst open hint for its GPU, in two or
three words and a figure ("OOM in ~2 min", "LEAK +72 MiB/min", "FRAGMENTED 3.1 GiB",
"OOM 07:02 · pid 71310"), with the hint's sentences for its tooltip. No widgets here.

The words come from the hint's code and its machine-readable ``values`` (the contract
of :class:`gpuwatch.core.hints.Hint`), never from its title, so the badge follows the
advisor's figures whatever its wording. A hint the badge has no words for reads as its
severity ("WARNING", "CRITICAL").
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable

from gpuwatch.core.hints import Hint, Severity
from gpuwatch.core.units import UnitSystem, format_bytes

SEVERITY_WORDS = {Severity.WARNING: "WARNING", Severity.CRITICAL: "CRITICAL"}


def _number(hint: Hint, name: str) -> float | None:
    value = hint.value(name)
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None


def short_duration(seconds: float) -> str:
    """"~45 s", "~2 min", "~3 h", "~2 d": a forecast's lead, rounded as it deserves."""
    s = max(0.0, seconds)
    if s < 90:
        return f"~{max(1, round(s))} s" if s < 60 else "~1 min"
    if s < 90 * 60:
        return f"~{round(s / 60)} min"
    if s < 36 * 3600:
        return f"~{round(s / 3600)} h"
    return f"~{min(round(s / 86400), 99_999)} d"     # absurd leads stay badge-sized


def short_bytes(n: float, units: UnitSystem) -> str:
    """"3.1 GiB", "72 MiB" (no decimal from ten on: a badge is read at a glance)."""
    text = format_bytes(n, units)
    number, _, unit = text.partition(" ")
    try:
        value = float(number)
    except ValueError:
        return text
    if abs(value) > 99_999:              # an absurd figure stays badge-sized
        return f">99999 {unit}"
    return f"{value:.0f} {unit}" if abs(value) >= 10 else text


def clock(at_s: float) -> str:
    """Local time of day, "07:02"."""
    return time.strftime("%H:%M", time.localtime(at_s))


def _oom_risk(h: Hint, units: UnitSystem) -> str:
    ttf = _number(h, "time_to_full_s")
    return "MEMORY ALMOST FULL" if ttf is None else f"OOM in {short_duration(ttf)}"


def _leak(h: Hint, units: UnitSystem) -> str:
    rate = _number(h, "leak_bytes_per_s")
    return "LEAK" if rate is None else f"LEAK +{short_bytes(rate * 60, units)}/min"


def _fragmentation(h: Hint, units: UnitSystem) -> str:
    extra = _number(h, "unexplained_bytes")
    if extra is None:        # the allocator's own figures
        reserved, allocated = _number(h, "reserved_bytes"), _number(h, "allocated_bytes")
        if reserved is not None and allocated is not None:
            extra = reserved - allocated
        else:
            extra = _number(h, "inactive_split_bytes")
    return "FRAGMENTED" if not extra or extra <= 0 else \
        f"FRAGMENTED {short_bytes(extra, units)}"


def _likely_oom(h: Hint, units: UnitSystem) -> str:
    at = _number(h, "exited_at_s")
    parts = ["OOM" if at is None else f"OOM {clock(at)}"]
    if h.pid is not None:
        parts.append(f"pid {h.pid}")
    return " · ".join(parts)


def _contention(h: Hint, units: UnitSystem) -> str:
    combined, usable = _number(h, "combined_bytes"), _number(h, "usable_bytes")
    if combined is None or usable is None or combined <= usable:
        return "SHARED, TOO FULL"
    return f"SHARED +{short_bytes(combined - usable, units)} over"


def _budget(h: Hint, units: UnitSystem) -> str:
    short = _number(h, "short_bytes")
    return "WON'T FIT" if not short or short <= 0 else \
        f"WON'T FIT: {short_bytes(short, units)} short"


_REASONS: dict[str, Callable[[Hint, UnitSystem], str]] = {
    "oom-risk": _oom_risk,
    "memory-leak": _leak,
    "fragmentation": _fragmentation,
    "likely-oom": _likely_oom,
    "gpu-lost": lambda h, u: "LOST",
    "contention": _contention,
    "budget-exceeds-capacity": _budget,
}


def badge_text(hint: Hint, units: UnitSystem = "iec") -> str:
    """The badge's words for ``hint``: its reason with a figure, else its severity."""
    reason = _REASONS.get(hint.code)
    if reason is not None:
        return reason(hint, units)
    return SEVERITY_WORDS.get(hint.severity, hint.severity.value.upper())


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
