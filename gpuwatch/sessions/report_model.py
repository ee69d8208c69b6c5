"""What a report says, computed once from a session and rendered by each format.

Each GPU's memory timeline carries marks, made from the session's hints and samples:
where the first warning and the first critical hint about that GPU opened, the peak,
and each process death the advisor named ``likely-oom``. The summary says how long
before such a death an ``oom-risk`` hint warned of it. A mark or sentence whose facts
are not in the session is not made.

A session keeps each hint once, with the severity it last had, and an event
(``hint-critical``) for the moment a hint opened as or turned critical: the critical line
stands there. Sessions recorded before that event existed have only the hint, and there
the critical line stands where the hint opened.

The top of a report answers at a glance (:func:`glance`): each GPU's peak against its
capacity and its time above 90 %, the worst hint and when it opened, the out-of-memory
sentences, and how the session ended (:class:`SessionEnding`: closed normally, still
being recorded, or cut short with no end time).

How command lines are cut and wrapped is :mod:`gpuwatch.sessions.report_commands`'s.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import numpy as np

from gpuwatch.core.units import format_bytes, format_duration
from gpuwatch.sessions import liveness
from gpuwatch.sessions.reader import SessionReader
from gpuwatch.sessions.session_rows import EventRow, HintRow, ProcessRow, SessionInfo
from gpuwatch.sessions.writer import HINT_CRITICAL_EVENT

HIGH_USE_FRACTION = 0.9
TOP_PROCESSES = 8
OOM_RISK, LIKELY_OOM = "oom-risk", "likely-oom"
ALERT_SEVERITIES = ("warning", "critical")

SEVERITY_RANK = {"info": 1, "warning": 2, "critical": 3}
# how a session ended (SessionEnding.state)
CLOSED, RECORDING, CUT_SHORT = "closed", "recording", "cut-short"

# mark kinds, in the order they are drawn and listed
WARNING_MARK, CRITICAL_MARK, PEAK_MARK, OOM_MARK = "warning", "critical", "peak", "likely-oom"


@dataclass(frozen=True)
class TimelineMark:
    """Something to point at on a GPU's memory timeline."""

    kind: str                      # WARNING_MARK, CRITICAL_MARK (lines), PEAK_MARK, OOM_MARK
    t_s: float                     # seconds from the session start
    label: str                     # "warning", "peak 39.6 GiB", "pid 71310 exited — likely OOM"
    used_bytes: int | None = None  # the GPU's memory there: where a point mark sits
    code: str | None = None        # the hint behind a line or a death
    pid: int | None = None

    @property
    def is_line(self) -> bool:
        return self.kind in (WARNING_MARK, CRITICAL_MARK)


@dataclass(frozen=True)
class OomExit:
    """A process death the advisor called likely out of memory, and the warning before it."""

    gpu: int
    pid: int
    exited_at_s: float             # when likely-oom opened: the first sample without it
    warned_at_s: float | None      # when the oom-risk hint open before it opened
    warning_severity: str | None   # that hint's (last) severity

    @property
    def lead_s(self) -> float | None:
        return None if self.warned_at_s is None else self.exited_at_s - self.warned_at_s

    @property
    def sentence(self) -> str:
        if self.lead_s is None:
            return (f"pid {self.pid} on GPU {self.gpu} exited, likely out of memory, with "
                    "no out-of-memory warning before it.")
        return (f"Warned {format_duration(self.lead_s)} before the out-of-memory exit of "
                f"pid {self.pid} on GPU {self.gpu}.")


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
    marks: tuple[TimelineMark, ...] = ()   # on that timeline: first alerts, peak, deaths

    @property
    def peak_fraction(self) -> float | None:
        """The peak as a fraction of the capacity (None when either is unknown)."""
        if self.peak_used_bytes is None or not self.total_bytes:
            return None
        return self.peak_used_bytes / self.total_bytes

    @property
    def label(self) -> str:
        """``GPU 0 NVIDIA A100-SXM4-40GB``."""
        return f"GPU {self.index} {self.name}" if self.name else f"GPU {self.index}"

    @property
    def peak_text(self) -> str:
        """``peak 39.6 / 40.0 GiB (99 %)``: the peak in the capacity's unit."""
        if self.peak_used_bytes is None:
            return "no memory readings"
        if not self.total_bytes:
            return f"peak {format_bytes(self.peak_used_bytes)} (capacity unknown)"
        return f"peak {peak_of_capacity(self.peak_used_bytes, self.total_bytes)}"

    @property
    def high_use_text(self) -> str:
        """``above 90 % for 1 min 59 s`` or ``never above 90 %``."""
        if not self.total_bytes or self.peak_used_bytes is None:
            return "time above 90 % unknown"
        if self.time_above_90pct_s <= 0:
            return "never above 90 %"
        return f"above 90 % for {format_duration(self.time_above_90pct_s)}"

    @property
    def glance(self) -> str:
        """``GPU 0 NVIDIA A100-SXM4-40GB: peak 39.6 / 40.0 GiB (99 %), above 90 % for 2 min``."""
        return f"{self.label}: {self.peak_text}, {self.high_use_text}"


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
class SessionEnding:
    """How the recording ended: ``closed`` (normally, with an end time), ``recording``
    (no end time and a recorder still holds the file) or ``cut-short`` (no end time and
    nobody writing: the recorder was killed or crashed)."""

    state: str
    started_at_s: float            # Unix time
    ended_at_s: float | None       # Unix time; only when closed
    last_sample_s: float           # seconds from the start

    @property
    def sentence(self) -> str:
        length = format_duration(self.last_sample_s)
        if self.state == CLOSED and self.ended_at_s is not None:
            return (f"Closed normally at {clock(self.ended_at_s)}, after "
                    f"{format_duration(self.ended_at_s - self.started_at_s)}.")
        last = clock(self.started_at_s + self.last_sample_s)
        if self.state == RECORDING:
            return (f"Still being recorded: this report covers the first {length}, to "
                    f"{last}.")
        return (f"Cut short: no end time — a crash or kill stopped the recorder; the last "
                f"sample is {length} in, at {last}.")


@dataclass(frozen=True)
class WorstHint:
    """The most severe hint of the session: critical before warning before info, and
    among equals the one that reached that severity first."""

    hint: HintRow
    severity: str                  # its worst: critical if it ever turned critical
    critical_at_s: float | None    # when it turned critical, if it opened below that
    others: int                    # how many other hints the session has

    @property
    def where(self) -> str:
        parts = [f"GPU {self.hint.gpu}"] if self.hint.gpu is not None else []
        if self.hint.pid is not None:
            parts.append(f"pid {self.hint.pid}")
        return ", ".join(parts)

    @property
    def when(self) -> str:
        """``opened at 2 min 25 s, critical at 5 min 07 s``."""
        text = f"opened at {format_duration(self.hint.first_seen_s)}"
        if self.critical_at_s is not None:
            text += f", critical at {format_duration(self.critical_at_s)}"
        return text

    @property
    def sentence(self) -> str:
        """``CRITICAL GPU 0 memory full now: 0 B free — oom-risk on GPU 0, opened at …``."""
        where = f" on {self.where}" if self.where else ""
        return (f"{self.severity.upper()} {self.hint.title} — {self.hint.code}{where}, "
                f"{self.when}.")


@dataclass(frozen=True)
class Report:
    info: SessionInfo
    gpus: tuple[GpuSummary, ...]
    processes: tuple[ProcessSummary, ...]      # top processes by peak memory
    process_count: int
    hints: tuple[HintRow, ...]
    events: tuple[EventRow, ...]
    budgets: tuple[BudgetComparison, ...]
    oom_exits: tuple[OomExit, ...] = ()
    summary: tuple[str, ...] = field(default=())   # sentences for the top of the report
    ending: SessionEnding | None = None
    worst_hint: WorstHint | None = None

    @property
    def glance(self) -> tuple[str, ...]:
        """The summary block at the top, as plain lines (see :func:`glance`)."""
        return glance(self)


def clock(timestamp_s: float) -> str:
    """``2026-12-03 13:35:07 UTC``."""
    return dt.datetime.fromtimestamp(timestamp_s, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def peak_of_capacity(peak: int, total: int) -> str:
    """``39.6 / 40.0 GiB (99 %)``: both in the capacity's unit. The percentage is rounded,
    except that only a full GPU shows 100 %."""
    unit = format_bytes(total).split()[-1]
    size = {"TiB": 1024**4, "GiB": 1024**3, "MiB": 1024**2, "KiB": 1024}.get(unit, 1)
    digits = 0 if unit == "B" else 1
    percent = round(100 * peak / total)
    if peak < total:
        percent = min(percent, 99)
    return f"{peak / size:.{digits}f} / {total / size:.{digits}f} {unit} ({percent} %)"


def session_ending(info: SessionInfo) -> SessionEnding:
    if info.ended_at_s is not None:
        state = CLOSED
    else:
        state = RECORDING if liveness.is_live(info.path) else CUT_SHORT
    return SessionEnding(state, info.started_at_s, info.ended_at_s, info.duration_s)


def worst_hint(hints: tuple[HintRow, ...] | list[HintRow],
               events: tuple[EventRow, ...] | list[EventRow] = ()) -> WorstHint | None:
    """The most severe hint (see :class:`WorstHint`); None without hints."""
    best: tuple | None = None
    for n, h in enumerate(hints):
        turned = min((e.t_s for e in events if e.kind == HINT_CRITICAL_EVENT
                      and e.detail == h.code and e.gpu == h.gpu and e.pid == h.pid
                      and h.first_seen_s <= e.t_s <= h.last_seen_s), default=None)
        severity = "critical" if turned is not None else h.severity
        reached = turned if turned is not None else h.first_seen_s
        key = (-SEVERITY_RANK.get(severity, 0), reached, n)
        if best is None or key < best[0]:
            later = turned if turned is not None and turned > h.first_seen_s else None
            best = (key, h, severity, later)
    if best is None:
        return None
    return WorstHint(best[1], best[2], best[3], len(hints) - 1)


def glance(r: Report) -> tuple[str, ...]:
    """The report's first lines: each GPU's peak against capacity and time above 90 %,
    the worst hint, the out-of-memory sentences, how the session ended."""
    lines = [g.glance for g in r.gpus]
    lines.append(f"Worst hint: {r.worst_hint.sentence}" if r.worst_hint else
                 "No hints fired during this session.")
    lines += r.summary
    if r.ending is not None:
        lines.append(r.ending.sentence)
    return tuple(lines)


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


def oom_exits(hints: tuple[HintRow, ...] | list[HintRow]) -> tuple[OomExit, ...]:
    """Each ``likely-oom`` death, with the ``oom-risk`` warning on its GPU that opened
    before it: the one still open as it died, else the latest that opened before."""
    out = []
    for death in hints:
        if death.code != LIKELY_OOM or death.gpu is None or death.pid is None:
            continue
        t = death.first_seen_s
        before = [h for h in hints if h.code == OOM_RISK and h.gpu == death.gpu
                  and h.severity in ALERT_SEVERITIES and h.first_seen_s < t]
        open_then = [h for h in before if h.closed_s is None or h.closed_s >= t]
        warning = max(open_then or before, key=lambda h: h.first_seen_s, default=None)
        out.append(OomExit(death.gpu, death.pid, t,
                           None if warning is None else warning.first_seen_s,
                           None if warning is None else warning.severity))
    return tuple(out)


def timeline_marks(gpu: int, t_s: np.ndarray, used: np.ndarray,
                   hints: tuple[HintRow, ...] | list[HintRow],
                   events: tuple[EventRow, ...] | list[EventRow] = ()
                   ) -> tuple[TimelineMark, ...]:
    """The marks on one GPU's memory timeline (see the module's docstring)."""
    marks: list[TimelineMark] = []
    mine = [h for h in hints if h.gpu == gpu]
    first = min((h for h in mine if h.severity in ALERT_SEVERITIES),
                key=lambda h: h.first_seen_s, default=None)
    if first is not None:
        marks.append(TimelineMark(WARNING_MARK, first.first_seen_s, WARNING_MARK,
                                  code=first.code, pid=first.pid))
    turned = min((e for e in events if e.kind == HINT_CRITICAL_EVENT and e.gpu == gpu),
                 key=lambda e: e.t_s, default=None)
    if turned is not None:
        marks.append(TimelineMark(CRITICAL_MARK, turned.t_s, CRITICAL_MARK, code=turned.detail,
                                  pid=turned.pid))
    elif not any(e.kind == HINT_CRITICAL_EVENT for e in events):   # an older session
        first = min((h for h in mine if h.severity == "critical"),
                    key=lambda h: h.first_seen_s, default=None)
        if first is not None:
            marks.append(TimelineMark(CRITICAL_MARK, first.first_seen_s, CRITICAL_MARK,
                                      code=first.code, pid=first.pid))
    known = ~np.isnan(used)
    if known.any():
        i = int(np.flatnonzero(known)[np.argmax(used[known])])
        peak = int(used[i])
        marks.append(TimelineMark(PEAK_MARK, float(t_s[i]), f"peak {format_bytes(peak)}",
                                  used_bytes=peak))
    for h in mine:
        if h.code != LIKELY_OOM or h.pid is None:
            continue
        before = known & (t_s < h.first_seen_s)       # the GPU as the process went
        held = int(used[np.flatnonzero(before)[-1]]) if before.any() else None
        marks.append(TimelineMark(OOM_MARK, h.first_seen_s,
                                  f"pid {h.pid} exited — likely OOM", used_bytes=held,
                                  code=h.code, pid=h.pid))
    return tuple(marks)


def build_report(reader: SessionReader, top: int = TOP_PROCESSES) -> Report:
    info = reader.info()
    hints = tuple(reader.hints())
    events = tuple(reader.events())
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
            t_s=t, used_bytes=used, marks=timeline_marks(g.index, t, used, hints, events)))
    rows = reader.processes()
    ranked = sorted(rows, key=lambda r: -(r.peak_used_bytes or 0))[:top]
    processes = tuple(ProcessSummary(r, *reader.process_series(r.id)) for r in ranked)
    peaks = {(r.gpu, r.pid): r.peak_used_bytes for r in rows}
    budgets = tuple(
        BudgetComparison(link.gpu, link.pid, link.label,
                         _predicted(link.estimate), peaks.get((link.gpu, link.pid)))
        for link in reader.budget_links())
    exits = oom_exits(hints)
    return Report(info, tuple(gpus), processes, len(rows), hints,
                  events, budgets, exits, tuple(e.sentence for e in exits),
                  session_ending(info), worst_hint(hints, events))


def _predicted(estimate: dict) -> int | None:
    total = estimate.get("total_bytes")
    return int(total) if isinstance(total, int | float) else None
