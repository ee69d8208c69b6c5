"""The session writer as it was before sparse process rows: schema version 1, one
``process_sample`` row per process and sample.

Kept for tests only, to write the same snapshots in both layouts and compare what
every reader gives. A copy of the old writer, with one change: processes that leave at
one sample are written in (GPU, pid, start) order, as the new writer writes them (the
old writer took them in set order, which no reader relies on).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from gpuwatch import __version__
from gpuwatch.core.hints import Hint, HintEvent, HintEventKind, Severity
from gpuwatch.core.snapshot import GpuState, Snapshot
from gpuwatch.sessions import schema
from gpuwatch.sessions.liveness import hold_live_lock
from gpuwatch.sessions.writer import ENDED_REMEMBERED, HINT_CRITICAL_EVENT, _insert, _storable

ProcessKey = tuple[int, int, float | None]      # (gpu, pid, started at)


def _create_version_1(path: Path) -> sqlite3.Connection:
    """A version-1 file, with the measured-bandwidth column a file written today has (so
    both layouts hold the same figures)."""
    conn = sqlite3.connect(path, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.executescript(schema.SCHEMA_V1)
    conn.execute("ALTER TABLE gpu_sample ADD COLUMN measured_bandwidth_bytes_per_s REAL")
    conn.execute(f"PRAGMA application_id={schema.APPLICATION_ID}")
    conn.execute("PRAGMA user_version=1")
    conn.commit()
    return conn


def _by_key(key: ProcessKey) -> tuple:
    gpu, pid, started = key
    return gpu, pid, started is not None, started or 0.0


@dataclass(slots=True)
class _Process:
    id: int
    peak: int | None
    last_seen_s: float
    dirty: bool = True


class DenseSessionWriter:
    def __init__(self, path: Path):
        self.path = path
        schema.prepare_new(path)
        # held while the file is written, so no prune (here or in another process)
        # takes a session that is still being recorded
        self._live = hold_live_lock(path)
        try:
            self._conn = _create_version_1(path)
        except BaseException:
            self._live.release()
            raise
        self._started: float | None = None
        self._processes: dict[ProcessKey, _Process] = {}     # alive, or ended since the commit
        self._ended: OrderedDict[ProcessKey, _Process] = OrderedDict()
        self._alive: set[ProcessKey] = set()
        self._gpu_states: dict[int, GpuState] = {}
        self._known_gpus: set[int] = set()
        self._hints: dict[tuple, int] = {}
        self._critical: set[tuple] = set()    # open hints that have been critical
        self._last_t = 0.0
        self.samples = 0

    # -- session ---------------------------------------------------------------------

    def start(self, snapshot: Snapshot, interval_s: float | None) -> None:
        b = snapshot.backend
        self._started = snapshot.timestamp_s
        self._conn.execute(
            "INSERT INTO session (id, uuid, host, backend_kind, driver_version, nvml_version, "
            "scenario, interval_s, started_at_s, gpuwatch_version) "
            "VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (str(uuid.uuid4()), b.hostname, b.kind.value, b.driver_version, b.nvml_version,
             b.scenario, interval_s, snapshot.timestamp_s, __version__))

    def _t(self, timestamp_s: float) -> float:
        return round(timestamp_s - (self._started or timestamp_s), 3)

    def add_snapshot(self, snapshot: Snapshot) -> None:
        if self._started is None:
            self.start(snapshot, None)
        t = self._t(snapshot.timestamp_s)
        self._last_t = t
        conn = self._conn
        gpu_rows, sample_rows, events = [], [], []
        alive: set[ProcessKey] = set()
        for g in snapshot.gpus:
            m = g.memory
            if g.index not in self._known_gpus and g.state is GpuState.OK:
                self._known_gpus.add(g.index)
                conn.execute("INSERT OR REPLACE INTO gpu (idx, uuid, name, total_bytes) "
                             "VALUES (?, ?, ?, ?)", (g.index, g.uuid, g.name, m.total_bytes))
            before = self._gpu_states.get(g.index)
            if before is not None and before != g.state:
                kind = "gpu-lost" if g.state is GpuState.LOST else (
                    "gpu-recovered" if g.state is GpuState.OK else "gpu-error")
                events.append((t, kind, g.index, None, g.error))
            self._gpu_states[g.index] = g.state
            gpu_rows.append((t, g.index, g.state.value, m.used_bytes, m.reserved_bytes,
                             m.total_bytes, g.gpu_util_percent, g.memory_busy_percent,
                             g.estimated_bandwidth_bytes_per_s, g.pcie_tx_bytes_per_s,
                             g.pcie_rx_bytes_per_s, g.temperature_c, g.power_w,
                             g.measured_bandwidth_bytes_per_s))
            for p in g.processes:
                key = (g.index, p.pid, p.started_at_s)
                alive.add(key)
                proc = self._processes.get(key)
                if proc is None and key in self._ended:    # back after a missed listing
                    proc = self._processes[key] = self._ended.pop(key)
                if proc is None:
                    cur = conn.execute(
                        "INSERT INTO process (gpu, pid, name, cmdline, user, container, "
                        "first_seen_s, last_seen_s, peak_used_bytes) VALUES (?,?,?,?,?,?,?,?,?)",
                        _storable((g.index, p.pid, p.name, json.dumps(list(p.cmdline)), p.user,
                                   p.container, t, t, p.used_bytes)))
                    proc = self._processes[key] = _Process(cur.lastrowid, p.used_bytes, t)
                    if self.samples:
                        events.append((t, "process-started", g.index, p.pid, p.name))
                else:
                    proc.last_seen_s = t
                    if p.used_bytes is not None and (proc.peak is None or p.used_bytes > proc.peak):
                        proc.peak = p.used_bytes
                    proc.dirty = True
                sample_rows.append((t, proc.id, p.used_bytes))
        for key in sorted(self._alive - alive, key=_by_key):    # (set order before)
            events.append((t, "process-ended", key[0], key[1], None))
        self._alive = alive
        _insert(conn, "INSERT INTO gpu_sample VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", gpu_rows)
        _insert(conn, "INSERT INTO process_sample VALUES (?,?,?)", sample_rows)
        if events:
            _insert(conn, "INSERT INTO event VALUES (?,?,?,?,?)", events)
        self.samples += 1

    def add_hint_event(self, event: HintEvent) -> None:
        hint: Hint = event.hint
        key = hint.key
        t_first, t_now = self._t(hint.opened_at_s), self._t(event.at_s)
        detail = "\n".join(hint.evidence)
        actions = json.dumps([a.summary for a in hint.actions])
        hint_id = self._hints.get(key)
        if hint.severity is Severity.CRITICAL and key not in self._critical:
            # the hint row keeps only its last severity: when it became critical is kept
            # as an event, so a report can place the first critical moment truly
            self._critical.add(key)
            self._conn.execute("INSERT INTO event VALUES (?,?,?,?,?)", _storable(
                (t_now if hint_id is not None else t_first, HINT_CRITICAL_EVENT,
                 hint.gpu_index, hint.pid, hint.code)))
        if hint_id is None:
            cur = self._conn.execute(
                "INSERT INTO hint (code, severity, gpu, pid, title, detail, actions, "
                "first_seen_s, last_seen_s) VALUES (?,?,?,?,?,?,?,?,?)",
                _storable((hint.code, hint.severity.value, hint.gpu_index, hint.pid,
                           hint.title, detail, actions, t_first, t_now)))
            self._hints[key] = hint_id = cur.lastrowid
        else:
            self._conn.execute(
                "UPDATE hint SET severity=?, title=?, detail=?, actions=?, last_seen_s=? "
                "WHERE id=?", (hint.severity.value, hint.title, detail, actions, t_now, hint_id))
        if event.kind is HintEventKind.CLOSED:
            self._conn.execute("UPDATE hint SET closed_s=? WHERE id=?", (t_now, hint_id))
            del self._hints[key]
            self._critical.discard(key)

    def add_event(self, kind: str, timestamp_s: float, detail: str | None = None) -> None:
        self._conn.execute("INSERT INTO event VALUES (?,?,?,?,?)",
                           (self._t(timestamp_s), kind, None, None, detail))

    def add_budget_link(self, gpu: int, pid: int, label: str, estimate_json: dict,
                        timestamp_s: float) -> None:
        self._conn.execute("INSERT INTO budget_link VALUES (?,?,?,?,?)",
                           _storable((gpu, pid, label, json.dumps(estimate_json),
                                      self._t(timestamp_s))))

    # -- durability --------------------------------------------------------------------

    def commit(self) -> None:
        dirty = [(p.peak, p.last_seen_s, p.id) for p in self._processes.values() if p.dirty]
        if dirty:
            _insert(self._conn,
                "UPDATE process SET peak_used_bytes=?, last_seen_s=? WHERE id=?", dirty)
            for p in self._processes.values():
                p.dirty = False
        self._conn.commit()
        self._forget_ended()

    def _forget_ended(self) -> None:
        """Move processes that have ended (their rows are written) out of the working set."""
        for key in [k for k in self._processes if k not in self._alive]:
            self._ended[key] = self._processes.pop(key)
        while len(self._ended) > ENDED_REMEMBERED:
            self._ended.popitem(last=False)

    def close(self, ended_at_s: float | None) -> None:
        """Mark the end, and fold the WAL back in so the session is one shareable file."""
        if self._started is not None:
            end = ended_at_s if ended_at_s is not None else self._started + self._last_t
            self._conn.execute("UPDATE session SET ended_at_s=? WHERE id=1", (end,))
        try:
            self.commit()
            with contextlib.suppress(sqlite3.Error):   # a reader holds it: the WAL stays
                self._conn.execute("PRAGMA journal_mode=DELETE")
        finally:
            self._conn.close()
            self._live.release()
