"""Reading a recorded session (read-only: a session file is never modified here)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpuwatch.sessions import schema
from gpuwatch.sessions.errors import SessionFileError


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


GPU_SERIES_COLUMNS = ("t_s", "used_bytes", "reserved_bytes", "total_bytes", "gpu_util_percent",
                      "memory_busy_percent", "estimated_bandwidth_bytes_per_s")


class SessionReader:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._conn = schema.open_read_only(self.path)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> SessionReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _query(self) -> Iterator[sqlite3.Connection]:
        try:
            yield self._conn
        except sqlite3.DatabaseError as exc:
            raise SessionFileError(str(self.path), schema.describe_database_error(exc)) \
                from None

    def info(self) -> SessionInfo:
        with self._query() as c:
            row = c.execute("SELECT uuid, host, backend_kind, driver_version, scenario, "
                            "interval_s, started_at_s, ended_at_s, gpuwatch_version "
                            "FROM session WHERE id = 1").fetchone()
            if row is None:
                raise SessionFileError(str(self.path), "holds no recorded samples yet")
            # one GPU's rows through the (gpu, t_s) index: a count without a full scan
            last, samples = c.execute(
                "SELECT MAX(t_s), COUNT(*) FROM gpu_sample "
                "WHERE gpu = (SELECT MIN(gpu) FROM gpu_sample)").fetchone()
        duration = (row[7] - row[6]) if row[7] is not None else (last or 0.0)
        return SessionInfo(str(self.path), row[0], row[1], row[2], row[3], row[4], row[5],
                           row[6], row[7], float(duration), int(samples), row[8])

    def peak_used_bytes(self) -> int | None:
        """The most memory any GPU held during the session."""
        with self._query() as c:
            value = c.execute("SELECT MAX(used_bytes) FROM gpu_sample").fetchone()[0]
        return None if value is None else int(value)

    def gpus(self) -> list[GpuRow]:
        with self._query() as c:
            return [GpuRow(*r) for r in c.execute(
                "SELECT idx, uuid, name, total_bytes FROM gpu ORDER BY idx")]

    def gpu_series(self, index: int) -> dict[str, np.ndarray]:
        """Columns of one GPU's samples in time order; unknown values are NaN."""
        with self._query() as c:
            rows = c.execute(f"SELECT {', '.join(GPU_SERIES_COLUMNS)} FROM gpu_sample "
                             "WHERE gpu = ? ORDER BY t_s", (index,)).fetchall()
        data = np.array(rows, dtype=np.float64).reshape(-1, len(GPU_SERIES_COLUMNS))
        return {name: data[:, i] for i, name in enumerate(GPU_SERIES_COLUMNS)}

    def processes(self) -> list[ProcessRow]:
        with self._query() as c:
            rows = c.execute("SELECT id, gpu, pid, name, cmdline, user, container, "
                             "first_seen_s, last_seen_s, peak_used_bytes FROM process "
                             "ORDER BY id").fetchall()
        return [ProcessRow(r[0], r[1], r[2], r[3], tuple(_json_list(r[4])), *r[5:])
                for r in rows]

    def process_series(self, process_id: int) -> tuple[np.ndarray, np.ndarray]:
        with self._query() as c:
            rows = c.execute("SELECT t_s, used_bytes FROM process_sample WHERE process_id = ? "
                             "ORDER BY t_s", (process_id,)).fetchall()
        data = np.array(rows, dtype=np.float64).reshape(-1, 2)
        return data[:, 0], data[:, 1]

    def hints(self) -> list[HintRow]:
        with self._query() as c:
            rows = c.execute("SELECT code, severity, gpu, pid, title, detail, actions, "
                             "first_seen_s, last_seen_s, closed_s FROM hint "
                             "ORDER BY first_seen_s, id").fetchall()
        return [HintRow(*r[:6], tuple(_json_list(r[6])), *r[7:]) for r in rows]

    def events(self) -> list[EventRow]:
        with self._query() as c:
            return [EventRow(*r) for r in c.execute(
                "SELECT t_s, kind, gpu, pid, detail FROM event ORDER BY t_s, rowid")]

    def budget_links(self) -> list[BudgetLinkRow]:
        with self._query() as c:
            rows = c.execute("SELECT gpu, pid, label, estimate, linked_at_s FROM budget_link "
                             "ORDER BY rowid").fetchall()
        out = []
        for gpu, pid, label, estimate, at in rows:
            try:
                doc = json.loads(estimate)
            except (TypeError, ValueError):
                continue       # an unreadable link is left out, not fatal
            out.append(BudgetLinkRow(gpu, pid, label, doc, at))
        return out


def _json_list(text: str | None) -> list[str]:
    try:
        value = json.loads(text) if text else []
    except ValueError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []
