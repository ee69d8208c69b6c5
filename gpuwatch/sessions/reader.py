"""Reading a recorded session (read-only: a session file is never modified here)."""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpuwatch.sessions import process_changes, schema
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
# the rest of a sample's numbers (read with ``gpu_series(index, GPU_DETAIL_COLUMNS)``)
GPU_DETAIL_COLUMNS = ("t_s", "pcie_tx_bytes_per_s", "pcie_rx_bytes_per_s", "temperature_c",
                      "power_w", "measured_bandwidth_bytes_per_s")
# columns added to gpu_sample after files of the same version were written: read as NULL
# from a file without them
_LATER_COLUMNS = frozenset({"measured_bandwidth_bytes_per_s"})

# What a cell may hold, checked as rows are read: a damaged file is refused with the
# table, column and row, never half-read into a crash further on. Text columns take any
# value as text (bytes that are not UTF-8 are decoded with U+FFFD); numbers must be
# numbers, finite and in range; "!" marks a column that may not be NULL.
BLOCK_ROWS = 8192               # rows per block when a table is streamed (~1 MB)
TIME_LIMIT_S = 1e11              # about 3000 years: a bigger time is a damaged cell
INT_LIMIT = 2**63
_KINDS = {
    "t_s": "time!", "used_bytes": "bytes", "reserved_bytes": "bytes", "total_bytes": "bytes",
    "gpu_util_percent": "real", "memory_busy_percent": "real",
    "estimated_bandwidth_bytes_per_s": "real", "pcie_tx_bytes_per_s": "real",
    "pcie_rx_bytes_per_s": "real", "temperature_c": "real", "power_w": "real",
    "measured_bandwidth_bytes_per_s": "real",
}


class SessionReader:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._conn = schema.open_read_only(self.path)
        try:
            self.version = int(self._conn.execute("PRAGMA user_version").fetchone()[0])
        except sqlite3.Error as exc:
            self._conn.close()
            raise SessionFileError(str(self.path), schema.describe_database_error(exc)) \
                from None
        self._time_bases: dict[int, np.ndarray] = {}
        self._all_changes: tuple[np.ndarray, np.ndarray] | None = None
        self._changes_indexed: bool | None = None     # asked once per reader
        self._table_columns: dict[str, frozenset[str]] = {}

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> SessionReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def damaged(self, reason: str) -> SessionFileError:
        return SessionFileError(str(self.path), f"is damaged: {reason}")

    @contextmanager
    def _query(self) -> Iterator[sqlite3.Connection]:
        try:
            yield self._conn
        except sqlite3.DatabaseError as exc:
            exc = schema.translate_error(self._conn, exc)
            raise SessionFileError(str(self.path), schema.describe_database_error(exc)) \
                from None
        except sqlite3.Error as exc:
            raise SessionFileError(str(self.path), f"cannot be read ({exc})") from None
        except RecursionError:
            raise self.damaged("a value is nested too deeply to read") from None
        except UnicodeDecodeError:      # SQLite's own message quotes damaged schema text
            raise self.damaged("its table definitions are not readable text") from None

    def _rows(self, table: str, columns: str, tail: str = "",
              params: tuple = (), computed: dict[str, str] | None = None) -> list[tuple]:
        """``SELECT columns FROM table tail``, each cell checked against its kind.

        ``columns`` is ``"name:kind, ..."``; kinds are text, int, real, bytes, time, each
        with ``!`` when the column is required. ``computed`` reads a column through an
        SQL expression instead (a damaged cell is still named by the column)."""
        spec = [c.strip().split(":") for c in columns.split(",")]
        computed = computed or {}
        sql = (f"SELECT rowid, {', '.join(computed.get(n, n) for n, _ in spec)} "
               f"FROM {table} {tail}")
        with self._query() as c:
            rows = c.execute(sql, params).fetchall()
        out = []
        for row in rows:
            out.append(tuple(self._cell(v, kind, table, name, row[0])
                             for v, (name, kind) in zip(row[1:], spec, strict=True)))
        return out

    def _cell(self, value: Any, kind: str, table: str, column: str, rowid: Any) -> Any:
        required = kind.endswith("!")
        kind = kind.rstrip("!")
        where = f"{table}.{column} in row {rowid}"
        if value is None:
            if required:
                raise self.damaged(f"{where} is empty but must hold a value")
            return None
        if kind == "text":
            if isinstance(value, bytes):
                return schema.decode_text(value)
            return value if isinstance(value, str) else str(value)
        if isinstance(value, bool) or not isinstance(value, int | float):
            shown = repr(value if not isinstance(value, str | bytes) else value[:24])
            raise self.damaged(f"{where} holds {type(value).__name__} {shown} where a number "
                               "belongs")
        limit = TIME_LIMIT_S if kind == "time" else INT_LIMIT
        if not math.isfinite(value) or abs(value) >= limit:
            raise self.damaged(f"{where} holds an impossible number ({value!r})")
        if kind in ("int", "bytes") and isinstance(value, float):
            if not value.is_integer():
                raise self.damaged(f"{where} holds {value!r} where a whole number belongs")
            return int(value)
        if kind == "time":
            return float(value)
        return value

    def _series(self, table: str, columns: tuple[str, ...], kinds: tuple[str, ...],
                where: str, params: tuple, state: bool = False,
                order: str = "t_s, rowid") -> tuple[np.ndarray, list[str]]:
        """Numeric columns as one float array (NULL -> NaN), and with ``state`` the
        ``state`` text column too, read in one query; a damaged cell is refused."""
        select = self._selectable(table, ("state", *columns) if state else columns)
        with self._query() as c:
            rows = c.execute(f"SELECT {', '.join(select)} FROM {table} {where} "
                             f"ORDER BY {order}", params).fetchall()
        return self._checked(rows, table, columns, kinds, where, params, state, order)

    def _checked(self, rows: list, table: str, columns: tuple[str, ...],
                 kinds: tuple[str, ...], where: str, params: tuple, state: bool,
                 order: str) -> tuple[np.ndarray, list[str]]:
        """Rows of numbers (after a ``state`` text column with ``state``) as a float
        array, checked in numpy; a damaged cell is found (by reading the table again
        through :meth:`_rows`) and named."""
        states: list[str] = []
        if state:
            states = [r[0] if isinstance(r[0], str) else self._text(r[0]) for r in rows]
            rows = [r[1:] for r in rows]
        try:
            data = np.array(rows, dtype=np.float64).reshape(-1, len(columns))
        except (ValueError, TypeError, OverflowError):
            data = None
        if data is not None and None not in states:
            known = data[~np.isnan(data)]
            limits = np.array([TIME_LIMIT_S if k.startswith("time") else INT_LIMIT
                               for k in kinds])
            required = np.array([k.endswith("!") for k in kinds])
            with np.errstate(invalid="ignore"):
                in_range = bool(np.all(np.isfinite(known))) and \
                    not np.any(np.abs(data) >= limits)
            if in_range and not np.isnan(data[:, required]).any():
                return data, states
        # something is wrong: find the cell to name it
        spec = [f"{c}:{k}" for c, k in zip(columns, kinds, strict=True)]
        self._rows(table, ", ".join((["state:text!"] if state else []) + spec),
                   f"{where} ORDER BY {order}", params, self._absent(table, columns))
        if data is not None and None not in states:
            return data, states      # every cell is right: 2**63 - 1 is 2.0**63 as a float
        raise self.damaged(f"{table} holds a value that is not a number")

    def gpu_sample_blocks(self, block: int | None = None) -> Iterator[
            tuple[np.ndarray, list[str]]]:
        """Every GPU's samples in time order (then GPU), in blocks of ``block`` rows:
        ``gpu``, GPU_SERIES_COLUMNS and GPU_DETAIL_COLUMNS[1:] as a float array, and
        the states. One statement read as it goes (SQLite's sorter spills to disk),
        so the memory held is a block's, whatever the session's length."""
        block = block or BLOCK_ROWS
        columns = ("gpu", *GPU_SERIES_COLUMNS, *GPU_DETAIL_COLUMNS[1:])
        kinds = ("int!", *self._kinds(columns[1:]))
        order = "t_s, gpu, rowid"
        with self._query() as c:
            select = self._selectable("gpu_sample", ("state", *columns))
            cursor = c.execute(f"SELECT {', '.join(select)} FROM gpu_sample "
                               f"ORDER BY {order}")
        while True:
            with self._query():
                rows = cursor.fetchmany(block)
            if not rows:
                return
            yield self._checked(rows, "gpu_sample", columns, kinds, "", (), True, order)

    def _absent(self, table: str, columns: tuple[str, ...]) -> dict[str, str]:
        """The later columns of ``columns`` this file lacks, each read as NULL."""
        if not _LATER_COLUMNS.intersection(columns):
            return {}
        present = self._columns(table)
        return {c: "NULL" for c in columns if c in _LATER_COLUMNS and c not in present}

    def _selectable(self, table: str, columns: tuple[str, ...]) -> tuple[str, ...]:
        """``columns`` for a SELECT, a later column this file lacks read as NULL."""
        absent = self._absent(table, columns)
        return tuple(f"NULL AS {c}" if c in absent else c for c in columns)

    def _columns(self, table: str) -> frozenset[str]:
        """The columns ``table`` has in this file (asked once per reader and table)."""
        known = self._table_columns.get(table)
        if known is None:
            with self._query() as c:
                known = frozenset(row[1] for row in c.execute(
                    "SELECT * FROM pragma_table_info(?)", (table,)).fetchall())
            self._table_columns[table] = known
        return known

    @staticmethod
    def _text(value: Any) -> str | None:
        if value is None or isinstance(value, str):
            return value
        return schema.decode_text(value) if isinstance(value, bytes) else str(value)

    def info(self) -> SessionInfo:
        rows = self._rows("session", "uuid:text!, host:text, backend_kind:text!, "
                          "driver_version:text, scenario:text, interval_s:real, "
                          "started_at_s:time!, ended_at_s:time, gpuwatch_version:text",
                          "WHERE id = 1")
        if not rows:
            raise SessionFileError(str(self.path), "holds no recorded samples yet")
        row = rows[0]
        # one GPU's rows through the (gpu, t_s) index: a count without a full scan
        with self._query() as c:
            last, samples = c.execute(
                "SELECT MAX(t_s), COUNT(*) FROM gpu_sample "
                "WHERE gpu = (SELECT MIN(gpu) FROM gpu_sample)").fetchone()
        last = self._cell(last, "time", "gpu_sample", "t_s", "(the latest)")
        duration = (row[7] - row[6]) if row[7] is not None else (last or 0.0)
        return SessionInfo(str(self.path), row[0], row[1], row[2], row[3], row[4], row[5],
                           row[6], row[7], float(duration), int(samples), row[8])

    def end_and_interval(self) -> tuple[float | None, float | None]:
        """The session's end time (None while recording) and its sampling interval."""
        rows = self._rows("session", "ended_at_s:time, interval_s:real", "WHERE id = 1")
        return rows[0] if rows else (None, None)

    def peak_used_bytes(self) -> int | None:
        """The most memory any GPU held during the session."""
        with self._query() as c:
            value = c.execute("SELECT MAX(used_bytes) FROM gpu_sample").fetchone()[0]
        return self._cell(value, "bytes", "gpu_sample", "used_bytes", "(the largest)")

    def gpus(self) -> list[GpuRow]:
        return [GpuRow(*r) for r in self._rows(
            "gpu", "idx:int!, uuid:text, name:text, total_bytes:bytes", "ORDER BY idx")]

    def gpu_series(self, index: int,
                   columns: tuple[str, ...] = GPU_SERIES_COLUMNS) -> dict[str, np.ndarray]:
        """Columns of one GPU's samples in time order; unknown values are NaN.

        ``columns`` (``t_s`` first by convention) are numeric columns of gpu_sample:
        GPU_SERIES_COLUMNS (the default), GPU_DETAIL_COLUMNS, or any mix."""
        data, _ = self._series("gpu_sample", columns, self._kinds(columns), "WHERE gpu = ?",
                               (index,))
        return {name: data[:, i] for i, name in enumerate(columns)}

    def gpu_samples(self, index: int) -> tuple[dict[str, np.ndarray], list[str]]:
        """Every recorded figure of one GPU's samples, read at once (consistent while
        the session is still being written): the numeric columns of GPU_SERIES_COLUMNS
        and GPU_DETAIL_COLUMNS, and the GPU's state per sample (ok, lost, error...)."""
        columns = GPU_SERIES_COLUMNS + GPU_DETAIL_COLUMNS[1:]
        data, states = self._series("gpu_sample", columns, self._kinds(columns),
                                    "WHERE gpu = ?", (index,), state=True)
        return {name: data[:, i] for i, name in enumerate(columns)}, states

    @staticmethod
    def _kinds(columns: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [c for c in columns if c not in _KINDS]
        if unknown:
            raise ValueError(f"not a numeric gpu_sample column: {unknown[0]}")
        return tuple(_KINDS[c] for c in columns)

    def processes(self) -> list[ProcessRow]:
        # schema 2: no end time yet means listed at the last sample written, read in the
        # same query so a file being recorded gives one consistent picture
        computed = {} if self.version < 2 else {"last_seen_s": (
            "COALESCE(last_seen_s, (SELECT t_s FROM gpu_sample ORDER BY rowid DESC LIMIT 1))")}
        rows = self._rows("process", "id:int!, gpu:int!, pid:int!, name:text, cmdline:text, "
                          "user:text, container:text, first_seen_s:time!, last_seen_s:time!, "
                          "peak_used_bytes:bytes", "ORDER BY id", computed=computed)
        return [ProcessRow(r[0], r[1], r[2], r[3], tuple(_json_list(r[4])), *r[5:])
                for r in rows]

    def process_series(self, process_id: int) -> tuple[np.ndarray, np.ndarray]:
        """A process's memory at each sample that listed it, in time order: times (s from
        the start) and bytes (NaN where unknown), whichever layout the file has."""
        if self.version < 2:
            data, _ = self._series("process_sample", ("t_s", "used_bytes"),
                                   ("time!", "bytes"), "WHERE process_id = ?", (process_id,))
            return data[:, 0], data[:, 1]
        gpu = self._rows("process", "gpu:int!", "WHERE id = ?", (process_id,))
        if not gpu:
            return np.empty(0), np.empty(0)
        base = self._time_base(gpu[0][0])
        data = self._changes_of(process_id)
        sample = data[:, 0]
        bad = (sample < 0) | (sample != np.floor(sample))
        if bad.any():
            rowid = self._conn.execute(
                "SELECT rowid FROM process_change WHERE process_id = ? ORDER BY sample, rowid "
                f"LIMIT 1 OFFSET {int(np.flatnonzero(bad)[0])}", (process_id,)).fetchone()
            raise self.damaged(f"process_change.sample in row {rowid[0] if rowid else '?'} "
                               "is not a sample number")
        return process_changes.expand(base, sample.astype(np.int64), data[:, 1],
                                      data[:, 2] != 0)

    def _changes_of(self, process_id: int) -> np.ndarray:
        """A process's process_change rows (sample, used_bytes, listed) in order. Through
        the index where the file has it (closed files); else every row is read once, in
        order, and each process takes its slice, rather than scanning the table once
        per process (a file being recorded, or one a crash cut short)."""
        columns, kinds = ("sample", "used_bytes", "listed"), ("int!", "bytes", "int!")
        if self._changes_indexed is None:
            self._changes_indexed = self._has_index(schema.INDEX_PROCESS_CHANGES)
        if self._changes_indexed:
            return self._series("process_change", columns, kinds, "WHERE process_id = ?",
                                (process_id,), order="sample, rowid")[0]
        if self._all_changes is None:
            data, _ = self._series("process_change", ("process_id", *columns),
                                   ("int!", *kinds), "", (),
                                   order="process_id, sample, rowid")
            self._all_changes = (data[:, 0], data[:, 1:])
        ids, rows = self._all_changes
        first, last = np.searchsorted(ids, (process_id, process_id + 1))
        return rows[first:last]

    def _has_index(self, name: str) -> bool:
        with self._query() as c:
            return c.execute("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?",
                             (name,)).fetchone() is not None

    def _time_base(self, gpu: int) -> np.ndarray:
        """The times of a GPU's samples in the order they were written: position n is
        the ``sample`` n of a process_change row. Read once per reader and GPU: in a file
        being recorded, rows written after that wait for the next reader."""
        base = self._time_bases.get(gpu)
        if base is None:
            data, _ = self._series("gpu_sample", ("t_s",), ("time!",), "WHERE gpu = ?",
                                   (gpu,), order="rowid")
            base = self._time_bases[gpu] = data[:, 0]
        return base

    def hints(self) -> list[HintRow]:
        rows = self._rows("hint", "code:text!, severity:text!, gpu:int, pid:int, title:text!, "
                          "detail:text, actions:text, first_seen_s:time!, last_seen_s:time!, "
                          "closed_s:time", "ORDER BY first_seen_s, id")
        return [HintRow(*r[:6], tuple(_json_list(r[6])), *r[7:]) for r in rows]

    def events(self) -> list[EventRow]:
        return [EventRow(*r) for r in self._rows(
            "event", "t_s:time!, kind:text!, gpu:int, pid:int, detail:text",
            "ORDER BY t_s, rowid")]

    def budget_links(self) -> list[BudgetLinkRow]:
        rows = self._rows("budget_link", "gpu:int!, pid:int!, label:text, estimate:text!, "
                          "linked_at_s:time!", "ORDER BY rowid")
        out = []
        for gpu, pid, label, estimate, at in rows:
            try:
                doc = json.loads(estimate)
            except (TypeError, ValueError, RecursionError):
                continue       # an unreadable link is left out, not fatal
            if isinstance(doc, dict):
                out.append(BudgetLinkRow(gpu, pid, label, doc, at))
        return out


def _json_list(text: str | None) -> list[str]:
    """A JSON list of strings; anything else (damaged, not a list) reads as empty."""
    try:
        value = json.loads(text) if text else []
        return [str(v) for v in value] if isinstance(value, list) else []
    except (ValueError, RecursionError):
        return []
