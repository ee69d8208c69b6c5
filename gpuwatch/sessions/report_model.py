"""What a report says, computed once from a session and rendered by each format."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuwatch.sessions.reader import (
    EventRow,
    HintRow,
    ProcessRow,
    SessionInfo,
    SessionReader,
)

HIGH_USE_FRACTION = 0.9
TOP_PROCESSES = 8


@dataclass(frozen=True)
class GpuSummary:
    index: int
    name: str | None
    total_bytes: int | None
    peak_used_bytes: int | None
    mean_used_bytes: int | None
    time_above_90pct_s: float
    t_s: np.ndarray            # the memory timeline, for charts
    used_bytes: np.ndarray


@dataclass(frozen=True)
class ProcessSummary:
    row: ProcessRow
    t_s: np.ndarray
    used_bytes: np.ndarray


@dataclass(frozen=True)
class BudgetComparison:
    gpu: int
    pid: int
    label: str | None
    predicted_bytes: int | None
    measured_peak_bytes: int | None

    @property
    def unexplained_bytes(self) -> int | None:
        if self.predicted_bytes is None or self.measured_peak_bytes is None:
            return None
        return self.measured_peak_bytes - self.predicted_bytes


@dataclass(frozen=True)
class Report:
    info: SessionInfo
    gpus: tuple[GpuSummary, ...]
    processes: tuple[ProcessSummary, ...]      # top processes by peak memory
    process_count: int
    hints: tuple[HintRow, ...]
    events: tuple[EventRow, ...]
    budgets: tuple[BudgetComparison, ...]


def time_above(t_s: np.ndarray, used: np.ndarray, total: float | None,
               fraction: float = HIGH_USE_FRACTION) -> float:
    """Seconds spent at or above ``fraction`` of ``total``: each sample counts until the next."""
    if not total or t_s.size == 0:
        return 0.0
    steps = np.diff(t_s)
    last = float(np.median(steps)) if steps.size else 0.0
    durations = np.append(steps, last)
    with np.errstate(invalid="ignore"):
        high = used >= fraction * total
    return float(durations[high].sum())


def _int_or_none(value: float) -> int | None:
    return None if np.isnan(value) else int(value)


def build_report(reader: SessionReader, top: int = TOP_PROCESSES) -> Report:
    info = reader.info()
    gpus = []
    for g in reader.gpus():
        series = reader.gpu_series(g.index)
        t, used = series["t_s"], series["used_bytes"]
        known = used[~np.isnan(used)]
        total = g.total_bytes
        gpus.append(GpuSummary(
            index=g.index, name=g.name, total_bytes=total,
            peak_used_bytes=int(known.max()) if known.size else None,
            mean_used_bytes=int(known.mean()) if known.size else None,
            time_above_90pct_s=time_above(t, used, total),
            t_s=t, used_bytes=used))
    rows = reader.processes()
    ranked = sorted(rows, key=lambda r: -(r.peak_used_bytes or 0))[:top]
    processes = tuple(ProcessSummary(r, *reader.process_series(r.id)) for r in ranked)
    peaks = {(r.gpu, r.pid): r.peak_used_bytes for r in rows}
    budgets = tuple(
        BudgetComparison(link.gpu, link.pid, link.label,
                         _predicted(link.estimate), peaks.get((link.gpu, link.pid)))
        for link in reader.budget_links())
    return Report(info, tuple(gpus), processes, len(rows), tuple(reader.hints()),
                  tuple(reader.events()), budgets)


def _predicted(estimate: dict) -> int | None:
    total = estimate.get("total_bytes")
    return int(total) if isinstance(total, int | float) else None
