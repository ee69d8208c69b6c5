"""The rows a session holds, as read from its file (see :mod:`gpuwatch.sessions.reader`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SessionInfo:
    path: str
    uuid: str
    host: str | None
    backend_kind: str
    driver_version: str | None
    scenario: str | None
    interval_s: float | None
    started_at_s: float
    ended_at_s: float | None       # None: the recorder did not close it (a crash or kill)
    duration_s: float
    samples: int
    gpuwatch_version: str | None


@dataclass(frozen=True)
class GpuRow:
    index: int
    uuid: str | None
    name: str | None
    total_bytes: int | None


@dataclass(frozen=True)
class ProcessRow:
    id: int
    gpu: int
    pid: int
    name: str | None
    cmdline: tuple[str, ...]
    user: str | None
    container: str | None
    first_seen_s: float
    last_seen_s: float
    peak_used_bytes: int | None


@dataclass(frozen=True)
class HintRow:
    code: str
    severity: str
    gpu: int | None
    pid: int | None
    title: str
    detail: str | None
    actions: tuple[str, ...]
    first_seen_s: float
    last_seen_s: float
    closed_s: float | None


@dataclass(frozen=True)
class EventRow:
    t_s: float
    kind: str
    gpu: int | None
    pid: int | None
    detail: str | None


@dataclass(frozen=True)
class BudgetLinkRow:
    gpu: int
    pid: int
    label: str | None
    estimate: dict[str, Any]
    linked_at_s: float


def json_list(text: str | None) -> list[str]:
    """A JSON list of strings; anything else (damaged, not a list) reads as empty."""
    try:
        value = json.loads(text) if text else []
        return [str(v) for v in value] if isinstance(value, list) else []
    except (ValueError, RecursionError):
        return []
