"""Turning snapshots, hints and links into rows of a session file (one thread only).

GPUs get a row per sample (the session's time base). A process gets a row only when
something changes: it appears, its memory changes, or it is missing from a listing
(schema version 2, see :mod:`gpuwatch.sessions.schema`); the reader carries each
value forward. Each GPU's listing is kept as lists of pids, start times and bytes, and
the next one compared with it whole, in C: a steady sample costs one batched INSERT of
the GPU rows and no Python per process; a listing that differs is walked process by
process. Peaks and end times are written back at each commit, only for the processes
whose peak rose or that left since the last one. The writer's memory holds the
processes listed now and the last ENDED_REMEMBERED that left, whatever the length.
:class:`gpuwatch.sessions.recorder.Recorder` owns one on its thread.
"""

from __future__ import annotations

import contextlib
import json
import operator
import os
import sqlite3
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from gpuwatch import __version__
from gpuwatch.core.hints import Hint, HintEvent, HintEventKind, Severity
from gpuwatch.core.snapshot import GpuState, ProcessSample, Snapshot
from gpuwatch.sessions import schema
from gpuwatch.sessions.errors import SessionExistsError
from gpuwatch.sessions.liveness import (
    ACQUIRE_TRIES,
    LiveLock,
    SessionBusyError,
    hold_live_lock,
)

HINT_CRITICAL_EVENT = "hint-critical"     # event kind: a hint opened as, or turned, critical
# Ended processes remembered, so one that misses a single listing comes back on its own
# row; older ones are forgotten, so a day of short jobs does not grow the writer.
ENDED_REMEMBERED = 1024
# The writer's page cache, KiB. SQLite's default (2,000 KiB) fills as the file grows
# and stays full: 2 MB more in a window that records, taken over its first hours. The
# writer appends at the right edge of each table and index and reads back little, so
# a small cache serves it (the pages it evicts stay in the system's file cache).
WRITER_CACHE_KIB = 256

ProcessKey = tuple[int, int, float | None]      # (gpu, pid, started at)

_INSERT_CHANGE = "INSERT INTO process_change VALUES (?,?,?,?)"
_PID, _STARTED, _USED = (operator.itemgetter(ProcessSample._fields.index(f))
                         for f in ("pid", "started_at_s", "used_bytes"))
_STATE_TEXT = {state: state.value for state in GpuState}


@dataclass(slots=True)
class _Process:
    id: int
    key: ProcessKey
    used: int | None              # the value of its latest process_change row
    peak: int | None
    listed: bool = True           # in its GPU's latest listing
    last_seen_s: float | None = None   # set when it leaves a listing
    dirty: bool = False           # peak or last_seen_s not yet written to its row


@dataclass(slots=True)
class _Listing:
    """A GPU's latest process listing: pids, start times and bytes in the order listed,
    and the processes by (pid, started at)."""
    pids: list[int]
    starts: list[float | None]
    used: list[int | None]
    processes: dict[tuple[int, float | None], _Process]


def _by_key(proc: _Process) -> tuple:
    """Processes that leave at one sample are written in (GPU, pid, start) order."""
    gpu, pid, started = proc.key
    return gpu, pid, started is not None, started or 0.0


class SessionWriter:
    def __init__(self, path: Path, free_name: bool = False):
        """Create the session file at ``path``, exclusively: nothing already there is
        ever written over. With ``free_name`` (a name gpuwatch chose, not the user), a
        taken ``path`` gives way to the next free one (``-2``, ``-3``...), so two
        recorders started in the same second each keep their own session."""
        self.path, self._live = _claim_session(Path(path), free_name)
        try:
            self._conn = schema.create(self.path, claimed=True)
            self._conn.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KIB}")
        except BaseException:
            self._live.release()
            raise
        self._started: float | None = None
        # alive, or ended since the last commit
        self._processes: dict[ProcessKey, _Process] = {}
        self._left: list[ProcessKey] = []      # ended since the last commit
        self._dirty: list[_Process] = []       # rows to write back at the commit
        self._ended: OrderedDict[ProcessKey, _Process] = OrderedDict()
        self._listings: dict[int, _Listing] = {}
        self._last_id = 0                      # the latest process row's id
        self._new_processes: list[tuple] = []  # process rows of this snapshot
        self._gpu_rows: dict[int, int] = {}    # GPU -> gpu_sample rows written for it
        self._gpu_states: dict[int, GpuState] = {}
        self._known_gpus: set[int] = set()
        self._hints: dict[tuple, int] = {}
        self._critical: set[tuple] = set()    # open hints that have been critical
        self._last_t = 0.0
        self.samples = 0
        self.committed_samples = 0      # samples in the file for sure (committed)

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
        previous_t, self._last_t = self._last_t, t
        conn = self._conn
        gpu_rows: list[tuple] = []
        changes: list[tuple] = []
        events: list[tuple] = []
        left: list[_Process] = []
        counts, listings = self._gpu_rows, self._listings
        here: dict[int, int] = {}           # GPU -> the position of its row in this snapshot
        for g in snapshot.gpus:
            gpu = g.index
            m = g.memory
            if gpu not in self._known_gpus and g.state is GpuState.OK:
                self._known_gpus.add(gpu)
                conn.execute("INSERT OR REPLACE INTO gpu (idx, uuid, name, total_bytes) "
                             "VALUES (?, ?, ?, ?)", (gpu, g.uuid, g.name, m.total_bytes))
            before = self._gpu_states.get(gpu)
            if before is not g.state:
                if before is not None:
                    kind = "gpu-lost" if g.state is GpuState.LOST else (
                        "gpu-recovered" if g.state is GpuState.OK else "gpu-error")
                    events.append((t, kind, gpu, None, g.error))
                self._gpu_states[gpu] = g.state
            gpu_rows.append((t, gpu, _STATE_TEXT[g.state], m.used_bytes, m.reserved_bytes,
                             m.total_bytes, g.gpu_util_percent, g.memory_busy_percent,
                             g.estimated_bandwidth_bytes_per_s, g.pcie_tx_bytes_per_s,
                             g.pcie_rx_bytes_per_s, g.temperature_c, g.power_w,
                             g.measured_bandwidth_bytes_per_s))
            position = here[gpu] = counts.get(gpu, 0)
            counts[gpu] = position + 1
            # pids, start times and bytes, gathered and compared in C: the same listing
            # as last time, the usual case, costs no Python per process
            procs = g.processes
            used = list(map(_USED, procs))
            previous = listings.get(gpu)
            if previous is None or used != previous.used:
                self._relist(gpu, procs, used, position, t, changes, events, left)
            else:
                pids, starts = list(map(_PID, procs)), list(map(_STARTED, procs))
                if pids != previous.pids or starts != previous.starts:
                    self._relist(gpu, procs, used, position, t, changes, events, left)
        if len(here) < len(listings):                    # a GPU missing from the snapshot
            for gpu in [gpu for gpu in listings if gpu not in here]:
                left += listings.pop(gpu).processes.values()
        for proc in sorted(left, key=_by_key):
            self._leave(proc, here, previous_t, t, changes, events)
        _insert(conn, "INSERT INTO gpu_sample VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", gpu_rows)
        if self._new_processes:
            _insert(conn, "INSERT INTO process (id, gpu, pid, name, cmdline, user, container, "
                          "first_seen_s, last_seen_s, peak_used_bytes) "
                          "VALUES (?,?,?,?,?,?,?,?,NULL,?)", self._new_processes)
            self._new_processes.clear()
        if changes:
            _insert(conn, _INSERT_CHANGE, changes)
        if events:
            _insert(conn, "INSERT INTO event VALUES (?,?,?,?,?)", events)
        self.samples += 1

    def _relist(self, gpu: int, samples: tuple[ProcessSample, ...], listed_used: list,
                position: int, t: float, changes: list, events: list,
                left: list[_Process]) -> None:
        """A GPU's listing that differs from its previous one: rows for what changed."""
        previous = self._listings.get(gpu)
        before = previous.processes if previous is not None else {}
        now: dict[tuple[int, float | None], _Process] = {}
        pids, starts = list(map(_PID, samples)), list(map(_STARTED, samples))
        for p, pid, started, used in zip(samples, pids, starts, listed_used, strict=True):
            key = (pid, started)
            if key in now:
                continue              # listed twice in one listing: the first one counts
            proc = before.get(key)
            if proc is None:          # new, or back after a gap
                proc = self._list(gpu, p, position, t, changes, events)
            elif used != proc.used:
                proc.used = used
                changes.append((proc.id, position, used, 1))
                if used is not None and (proc.peak is None or used > proc.peak):
                    proc.peak = used
                    self._mark_dirty(proc)
            now[key] = proc
        left += [proc for key, proc in before.items() if key not in now]
        self._listings[gpu] = _Listing(pids, starts, listed_used, now)

    def _list(self, gpu: int, p: ProcessSample, position: int, t: float,
              changes: list, events: list) -> _Process:
        """A process that was not in its GPU's previous listing: new, or back after a gap."""
        key = (gpu, p.pid, p.started_at_s)
        used = p.used_bytes
        proc = self._processes.get(key)
        if proc is None and key in self._ended:          # back after a missed listing
            proc = self._processes[key] = self._ended.pop(key)
        if proc is None:
            self._last_id += 1          # this writer made the file: it numbers the rows
            proc = self._processes[key] = _Process(self._last_id, key, used, used)
            self._new_processes.append((proc.id, gpu, p.pid, p.name,
                                        json.dumps(list(p.cmdline)), p.user, p.container,
                                        t, used))
            if self.samples:
                events.append((t, "process-started", gpu, p.pid, p.name))
        else:
            proc.used, proc.listed = used, True
            proc.last_seen_s = None                      # listed again: its row says so
            if used is not None and (proc.peak is None or used > proc.peak):
                proc.peak = used
            self._mark_dirty(proc)
        changes.append((proc.id, position, used, 1))
        return proc

    def _leave(self, proc: _Process, here: dict[int, int], previous_t: float, t: float,
               changes: list, events: list) -> None:
        """A process listed in the previous snapshot and not in this one: a row saying
        so, at the position this snapshot's row of its GPU has (or would have, when the
        GPU is missing from the snapshot too)."""
        gpu, pid, _ = proc.key
        proc.listed, proc.last_seen_s = False, previous_t
        self._mark_dirty(proc)
        self._left.append(proc.key)
        at = here.get(gpu)
        changes.append((proc.id, self._gpu_rows.get(gpu, 0) if at is None else at, None, 0))
        events.append((t, "process-ended", gpu, pid, None))

    def _mark_dirty(self, proc: _Process) -> None:
        if not proc.dirty:
            proc.dirty = True
            self._dirty.append(proc)

    def add_hint_event(self, event: HintEvent) -> None:
        hint: Hint = event.hint
        key = hint.key
        t_first, t_now = self._t(hint.opened_at_s), self._t(event.at_s)
        detail = "\n".join(hint.evidence)    # one evidence sentence a line
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
        self._write_back()
        self._conn.commit()
        self.committed_samples = self.samples
        self._forget_ended()

    def _write_back(self) -> None:
        """Peaks that rose and end times that changed since the last commit."""
        if self._dirty:
            _insert(self._conn,
                    "UPDATE process SET peak_used_bytes=?, last_seen_s=? WHERE id=?",
                    [(p.peak, p.last_seen_s, p.id) for p in self._dirty])
            for p in self._dirty:
                p.dirty = False
            self._dirty.clear()

    def _forget_ended(self) -> None:
        """Move processes that have ended (their rows are written) out of the working set."""
        for key in self._left:
            proc = self._processes.get(key)
            if proc is not None and not proc.listed:     # not back since
                self._ended[key] = self._processes.pop(key)
        self._left.clear()
        while len(self._ended) > ENDED_REMEMBERED:
            self._ended.popitem(last=False)

    def close(self, ended_at_s: float | None) -> None:
        """Mark the end, build the indexes a reader uses (:data:`schema.READ_INDEXES_V2`),
        and fold the WAL back in so the session is one shareable file."""
        if self._started is not None:
            end = ended_at_s if ended_at_s is not None else self._started + self._last_t
            self._conn.execute("UPDATE session SET ended_at_s=? WHERE id=1", (end,))
            # still listed at the last sample: their rows get that time, so a closed
            # file needs no reading between the lines
            self._write_back()
            self._conn.execute("UPDATE process SET last_seen_s=? WHERE last_seen_s IS NULL",
                               (self._last_t,))
        try:
            self.commit()
            with contextlib.suppress(sqlite3.Error):   # no room for them: read without
                self._conn.executescript(schema.READ_INDEXES_V2)
            with contextlib.suppress(sqlite3.Error):   # a reader holds it: the WAL stays
                self._conn.execute("PRAGMA journal_mode=DELETE")
        finally:
            self._conn.close()
            self._live.release()


FREE_NAME_TRIES = 1000


def numbered(path: Path, n: int) -> Path:
    """``session-X.gpuwatch.sqlite`` -> ``session-X-n.gpuwatch.sqlite`` (n > 1)."""
    if n <= 1:
        return path
    suffix = "".join(path.suffixes[-2:]) if path.name.endswith(".gpuwatch.sqlite") \
        else path.suffix
    return path.with_name(f"{path.name[: len(path.name) - len(suffix)]}-{n}{suffix}")


def _claim_session(path: Path, free_name: bool) -> tuple[Path, LiveLock]:
    """The path this writer owns, and its live lock: the lock is taken first (so no
    prune takes the new file), then the file is created with ``O_EXCL``."""
    schema.prepare_folder(path)
    for n in range(1, FREE_NAME_TRIES + 1 if free_name else 2):
        candidate = numbered(path, n)
        if os.path.lexists(candidate):
            if free_name:
                continue
            raise SessionExistsError(str(candidate), "already exists; choose another file")
        try:
            live = hold_live_lock(candidate, tries=1 if free_name else ACQUIRE_TRIES)
        except SessionBusyError:
            if free_name:
                continue
            raise
        try:
            schema.claim(candidate)
        except SessionExistsError:
            live.release()
            if free_name:
                continue
            raise
        except BaseException:
            live.release()
            raise
        return candidate, live
    raise SessionExistsError(str(path), f"and {FREE_NAME_TRIES - 1} numbered names after it "
                                        "are taken; choose another file")


_INT64 = range(-(2**63), 2**63)


def _storable(row: tuple) -> tuple:
    """The row with integers SQLite cannot hold (outside signed 64 bits) as NULL: no
    real pid, index or byte count is that large, so such a value means unknown."""
    return tuple(None if type(v) is int and v not in _INT64 else v for v in row)


def _insert(conn: sqlite3.Connection, sql: str, rows: list) -> None:
    """executemany, with :func:`_storable` rows from the first row whose value overflowed
    (the rows before it are in; rare, so the check is not paid on every row)."""
    try:
        conn.executemany(sql, rows)
    except OverflowError:
        first = next(i for i, row in enumerate(rows)
                     if any(type(v) is int and v not in _INT64 for v in row))
        conn.executemany(sql, [_storable(r) for r in rows[first:]])
