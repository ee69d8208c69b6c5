"""A recorded session loaded whole into a :class:`~gpuwatch.core.history.History`, for replay.

Whole columns are read at once and loaded into the rings (row-by-row appends are far
too slow for a day of 8 GPUs). A process's timeline keeps only the ends of its runs
of equal values (:func:`run_ends`): the same lines, in a fraction of the memory (a
day of 8 GPUs × 64 processes at 1 Hz is 44 million samples, 0.7 GB as points). For a
long session, :func:`load_overview` first reads a min/max-per-bucket overview inside
SQLite, so a first picture is ready at once and no peak is lost. Files are opened read-only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpuwatch.core.history import GPU_COLUMNS, PROCESS_COLUMNS, History, Ring
from gpuwatch.core.snapshot import BackendInfo, BackendKind, Snapshot
from gpuwatch.sessions import read_only
from gpuwatch.sessions.errors import SessionFileError
from gpuwatch.sessions.reader import SessionReader
from gpuwatch.sessions.session_rows import EventRow, GpuRow, HintRow, ProcessRow, SessionInfo

# reader column -> history column (the rest of a GPU's history columns stay unknown)
_GPU_COLUMN_MAP = {"t_s": "timestamp_s", "used_bytes": "used_bytes",
                   "reserved_bytes": "reserved_bytes", "total_bytes": "total_bytes",
                   "gpu_util_percent": "gpu_util_percent",
                   "memory_busy_percent": "memory_busy_percent",
                   "estimated_bandwidth_bytes_per_s": "estimated_bandwidth_bytes_per_s"}


@dataclass
class ReplayData:
    path: Path
    info: SessionInfo
    gpus: list[GpuRow]
    history: History
    processes: list[ProcessRow]
    hints: list[HintRow]
    events: list[EventRow]
    overview: bool = False        # min/max per time slice, not every sample (yet)

    @property
    def start_s(self) -> float:
        return self.info.started_at_s

    @property
    def end_s(self) -> float:
        latest = self.history.latest
        return max(self.start_s + self.info.duration_s,
                   latest.timestamp_s if latest is not None else self.start_s)


def load_replay(path: str | Path, with_processes: bool = True) -> ReplayData:
    """Read a session into a History (any thread). Raises SessionFileError."""
    path = Path(path)
    merged: dict[tuple[int, int], list[tuple[np.ndarray, np.ndarray]]] = {}
    with SessionReader(path) as r:
        info = r.info()
        gpus = r.gpus()
        series = {g.index: r.gpu_series(g.index) for g in gpus}
        processes = r.processes()
        for p in processes if with_processes else ():
            # one process's samples in memory at a time, kept as the ends of its runs
            merged.setdefault((p.gpu, p.pid), []).append(run_ends(*r.process_series(p.id)))
        hints = r.hints()
        events = r.events()
    t0 = info.started_at_s
    longest = max([len(s["t_s"]) for s in series.values()] + [1])
    history = History(capacity=longest, max_processes=max(1, len(processes)),
                      process_capacity=longest)
    last_t = t0
    for index, cols in sorted(series.items()):
        ring = history.gpus[index] = Ring(longest, GPU_COLUMNS, initial=max(1, len(cols["t_s"])))
        data = {_GPU_COLUMN_MAP[k]: v for k, v in cols.items()}
        data["timestamp_s"] = cols["t_s"] + t0
        ring.load_columns(data)
        if len(cols["t_s"]):
            last_t = max(last_t, float(data["timestamp_s"][-1]))
    for key, parts in merged.items():
        t = np.concatenate([ts for ts, _ in parts]) + t0
        used = np.concatenate([u for _, u in parts])
        order = np.argsort(t, kind="stable")
        ring = history.processes[key] = Ring(max(1, len(t)), PROCESS_COLUMNS)
        ring.load_columns({"timestamp_s": t[order], "used_bytes": used[order]})
    history.latest = _latest_snapshot(info, last_t)
    return ReplayData(path, info, gpus, history, processes, hints, events)


def run_ends(t: np.ndarray, used: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A process's samples with those inside a run of equal values left out: the first
    and last sample of each run stay, so a line through the points is the same line,
    and the value at any sample's time (the last point at or before it) is the same.
    A day of a process whose memory is flat is two points, not 86,400."""
    n = len(used)
    if n <= 2:
        return t, used
    same = (used[1:] == used[:-1]) | (np.isnan(used[1:]) & np.isnan(used[:-1]))
    keep = np.ones(n, dtype=bool)
    keep[1:-1] = ~(same[:-1] & same[1:])        # equal to both neighbours: inside a run
    return t[keep], used[keep]


OVERVIEW_ABOVE = 20_000       # samples per GPU: longer sessions are painted from an overview first
OVERVIEW_BUCKETS = 2000       # per GPU: more than a plot is pixels wide


def load_overview(path: str | Path, buckets: int = OVERVIEW_BUCKETS,
                  info: SessionInfo | None = None) -> ReplayData:
    """A quick first look at a long session: per GPU, the min and max of each of
    ``buckets`` time slices (so peaks survive), aggregated inside SQLite. The replay
    window paints this while the full timelines load."""
    path = Path(path)
    with SessionReader(path) as r:
        info = info or r.info()
        gpus = r.gpus()
        processes = r.processes()
        hints = r.hints()
        events = r.events()
    t0 = info.started_at_s
    width = max(1e-3, info.duration_s / buckets)
    conn = read_only.open_read_only(path)
    try:
        history = History(capacity=2 * buckets + 2, max_processes=1, process_capacity=1)
        last_t = t0
        for g in gpus:
            try:
                rows = conn.execute(
                    "SELECT MIN(t_s), MAX(t_s), MIN(used_bytes), MAX(used_bytes), "
                    "MAX(total_bytes), MIN(estimated_bandwidth_bytes_per_s), "
                    "MAX(estimated_bandwidth_bytes_per_s) FROM gpu_sample WHERE gpu = ? "
                    "GROUP BY CAST(t_s / ? AS INTEGER) ORDER BY 1", (g.index, width)).fetchall()
                a = np.array(rows, dtype=np.float64).reshape(-1, 7)
            except Exception as exc:
                raise SessionFileError(str(path), f"cannot be read ({exc})") from None
            n = len(a)
            # two points per slice: its minimum at its start, its maximum at its end
            t = np.empty(2 * n)
            t[0::2], t[1::2] = a[:, 0], a[:, 1]
            used, bw = np.empty(2 * n), np.empty(2 * n)
            used[0::2], used[1::2] = a[:, 2], a[:, 3]
            bw[0::2], bw[1::2] = a[:, 5], a[:, 6]
            ring = history.gpus[g.index] = Ring(max(1, 2 * n), GPU_COLUMNS)
            ring.load_columns({"timestamp_s": t + t0, "used_bytes": used,
                               "total_bytes": np.repeat(a[:, 4], 2),
                               "estimated_bandwidth_bytes_per_s": bw})
            if n:
                last_t = max(last_t, float(t[-1] + t0))
    finally:
        conn.close()
    history.latest = _latest_snapshot(info, last_t)
    return ReplayData(path, info, gpus, history, processes, hints, events, overview=True)


def _latest_snapshot(info: SessionInfo, last_t: float) -> Snapshot:
    """The history's latest snapshot for a replay: the session's backend at its last
    sample, with no GPUs (the replayed rows are in the history's rings)."""
    kind = _backend_kind(info.backend_kind)
    return Snapshot(last_t, BackendInfo(kind, info.driver_version, scenario=info.scenario,
                                        hostname=info.host), gpus=())


def _backend_kind(stored: str) -> BackendKind:
    """The session's backend kind; one this version does not know reads as real NVML."""
    try:
        return BackendKind(stored)
    except ValueError:
        return BackendKind.NVML
