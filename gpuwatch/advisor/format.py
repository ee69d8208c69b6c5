"""Hints for people (one readable line per event) and for programs (JSON lines).

``gpuwatch record`` prints :func:`format_event` for each event, or with ``--json``
``json.dumps(event_to_json(event))``. The window can use :func:`format_hint_text`.
"""

from __future__ import annotations

import time

from gpuwatch.core.hints import Hint, HintEvent, HintEventKind, event_to_json, hint_to_json
from gpuwatch.core.units import format_duration

__all__ = ["event_to_json", "format_event", "format_hint_text", "hint_to_json"]

_LABEL = {HintEventKind.OPENED: "", HintEventKind.UPDATED: "update: ",
          HintEventKind.CLOSED: "ended: "}


def _when(at_s: float, start_s: float | None) -> str:
    if start_s is not None:
        return f"+{format_duration(max(0.0, at_s - start_s))}"
    return time.strftime("%H:%M:%S", time.localtime(at_s))


def _where(hint: Hint) -> str:
    where = f"GPU {hint.gpu_index}"
    if hint.pid is not None:
        where += f" pid {hint.pid}" + (f" ({hint.process_name})" if hint.process_name else "")
    return where


def format_event(event: HintEvent, start_s: float | None = None) -> str:
    """One line: time, severity, code, where, title; evidence and actions after ``|``.

    ``start_s`` prints the time as ``+12 min 04 s`` since then (virtual runs), otherwise
    the local time of day. A closed hint prints only its title and how long it lasted.
    """
    h = event.hint
    head = (f"{_when(event.at_s, start_s)}  {h.severity.value.upper():<8} "
            f"{_LABEL[event.kind]}{h.code} [{_where(h)}] {h.title}")
    if event.kind is HintEventKind.CLOSED:
        return f"{head} (cleared after {format_duration(event.at_s - h.opened_at_s)})"
    parts = [head]
    if h.evidence:
        parts.append("; ".join(h.evidence))
    if h.actions:
        parts.append("→ " + "; ".join(a.summary for a in h.actions))
    return " | ".join(parts)


def format_hint_text(hint: Hint) -> tuple[str, str, str]:
    """(title with place, evidence, actions) as plain text for a hint list or a tray bubble."""
    return (f"{hint.title} [{_where(hint)}]", "; ".join(hint.evidence),
            "; ".join(a.summary for a in hint.actions))
