"""Reading a recorded session (read-only: a session file is never modified here).

:class:`SessionReader` gives the session's tables as rows (:mod:`session_rows`) and its
samples as numpy arrays: a GPU's series, every GPU's samples streamed in blocks, and a
process's memory per sample rebuilt from the rows where it changed. Every cell is
checked as it is read (:mod:`checked_reads`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from gpuwatch.sessions import process_changes, schema
from gpuwatch.sessions.checked_reads import CheckedReads
from gpuwatch.sessions.errors import SessionFileError
from gpuwatch.sessions.session_rows import (
    BudgetLinkRow,
    EventRow,
    GpuRow,
    HintRow,
    ProcessRow,
    SessionInfo,
    json_list,
)

GPU_SERIES_COLUMNS = ("t_s", "used_bytes", "reserved_bytes", "total_bytes", "gpu_util_percent",
                      "memory_busy_percent", "estimated_bandwidth_bytes_per_s")
# the rest of a sample's numbers (read with ``gpu_series(index, GPU_DETAIL_COLUMNS)``)
GPU_DETAIL_COLUMNS = ("t_s", "pcie_tx_bytes_per_s", "pcie_rx_bytes_per_s", "temperature_c",
                      "power_w", "measured_bandwidth_bytes_per_s")

BLOCK_ROWS = 8192               # rows per block when a table is streamed (~1 MB)
# what each numeric gpu_sample cell may hold ("!": never NULL; see checked_reads)
_KINDS = {
    "t_s": "time!", "used_bytes": "bytes", "reserved_bytes": "bytes", "total_bytes": "bytes",
    "gpu_util_percent": "real", "memory_busy_percent": "real",
    "estimated_bandwidth_bytes_per_s": "real", "pcie_tx_bytes_per_s": "real",
    "pcie_rx_bytes_per_s": "real", "temperature_c": "real", "power_w": "real",
    "measured_bandwidth_bytes_per_s": "real",
}


class SessionReader(CheckedReads):
    """A session file, read-only; use it as a context manager (or call :meth:`close`)."""

    def __init__(self, path: str | Path):
        super().__init__(path)
        self._time_bases: dict[int, np.ndarray] = {}
        self._all_changes: tuple[np.ndarray, np.ndarray] | None = None
        self._changes_indexed: bool | None = None     # asked once per reader

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
        return [ProcessRow(r[0], r[1], r[2], r[3], tuple(json_list(r[4])), *r[5:])
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
        return [HintRow(*r[:6], tuple(json_list(r[6])), *r[7:]) for r in rows]

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
