"""What the advisor tells people: hints, their lifecycle events, and their JSON form.

A hint is identified by its ``key`` (code, GPU, pid): while the condition behind it
stays true the same hint is updated in place; when it clears the hint is closed. The
advisor (``gpuwatch.advisor``) produces these; the window, the tray, ``gpuwatch record``
and session reports only read them, so they live here with the other shared types.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from gpuwatch.core.units import format_bytes

HINT_SCHEMA = "gpuwatch.hint/1"
HINT_EVENT_SCHEMA = "gpuwatch.hint-event/1"


class Severity(StrEnum):
    """How urgent a hint is. Ordered: ``INFO < WARNING < CRITICAL``."""

    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return _RANK[self]

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Severity):
            return NotImplemented
        return self.rank < other.rank

    def __le__(self, other: object) -> bool:
        if not isinstance(other, Severity):
            return NotImplemented
        return self.rank <= other.rank

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, Severity):
            return NotImplemented
        return self.rank > other.rank

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, Severity):
            return NotImplemented
        return self.rank >= other.rank


_RANK = {Severity.INFO: 0, Severity.WARNING: 1, Severity.CRITICAL: 2}


@dataclass(frozen=True, slots=True)
class HintAction:
    """Something the person can do, with what it saves where the budget engine knows."""

    text: str
    saves_bytes: int | None = None

    @property
    def summary(self) -> str:
        """The action as one phrase, with its saving: ``"… (saves 9.4 GiB)"``."""
        if self.saves_bytes is None:
            return self.text
        return f"{self.text} (saves {format_bytes(self.saves_bytes)})"


HintKey = tuple[str, int, int | None]   # (code, gpu index, pid or None)


@dataclass(frozen=True, slots=True)
class Hint:
    code: str                            # stable: "oom-risk", "memory-leak", …
    severity: Severity
    gpu_index: int
    pid: int | None                      # None for hints about the whole GPU
    title: str                           # one line
    evidence: tuple[str, ...] = ()       # the numbers behind it, one short sentence each
    actions: tuple[HintAction, ...] = ()
    opened_at_s: float = math.nan        # Unix time (snapshot time, virtual when simulated)
    updated_at_s: float = math.nan
    process_name: str | None = None
    # machine-readable figures, unit in the name: ("time_to_full_s", 312.0), …
    values: tuple[tuple[str, float | int | None], ...] = ()
    # the reason in a few words, for a card's badge: "OOM in ~2 min", "LEAK +72 MiB/min",
    # "FRAGMENTED 3.1 GiB", "LOST" (None: the rule gives none; show the severity)
    badge: str | None = None

    @property
    def key(self) -> HintKey:
        return (self.code, self.gpu_index, self.pid)

    def value(self, name: str) -> float | int | None:
        return dict(self.values).get(name)


class HintEventKind(StrEnum):
    OPENED = "opened"
    UPDATED = "updated"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class HintEvent:
    kind: HintEventKind
    hint: Hint
    at_s: float                          # snapshot time of the change


@dataclass(frozen=True, slots=True)
class AllocatorStats:
    """The PyTorch caching allocator's view of one process (``torch.cuda.memory_stats()``).

    Filled by the in-process probe where it runs; every field may be unknown (None).
    """

    timestamp_s: float
    reserved_bytes: int | None = None          # "reserved_bytes.all.current"
    allocated_bytes: int | None = None         # "allocated_bytes.all.current"
    inactive_split_bytes: int | None = None    # "inactive_split_bytes.all.current"
    num_alloc_retries: int | None = None       # cudaMalloc retries after freeing the cache
    num_ooms: int | None = None
    # "allocated_bytes.all.peak": the most the tensors ever held at once (a step's top)
    allocated_peak_bytes: int | None = None


def _number(value: float | int | None) -> float | int | None:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return None
    return value


def hint_to_json(hint: Hint) -> dict[str, Any]:
    """The hint as a ``gpuwatch.hint/1`` JSON object (unknown numbers are null)."""
    return {
        "schema": HINT_SCHEMA,
        "code": hint.code,
        "severity": hint.severity.value,
        "gpu_index": hint.gpu_index,
        "pid": hint.pid,
        "process_name": hint.process_name,
        "title": hint.title,
        "evidence": list(hint.evidence),
        "actions": [{"text": a.text, "saves_bytes": a.saves_bytes} for a in hint.actions],
        "values": {name: _number(v) for name, v in hint.values},
        "opened_at_s": _number(hint.opened_at_s),
        "updated_at_s": _number(hint.updated_at_s),
    }


def event_to_json(event: HintEvent) -> dict[str, Any]:
    """One ``gpuwatch.hint-event/1`` object: what changed, when, and the hint as it is."""
    return {
        "schema": HINT_EVENT_SCHEMA,
        "event": event.kind.value,
        "at_s": _number(event.at_s),
        "hint": hint_to_json(event.hint),
    }
