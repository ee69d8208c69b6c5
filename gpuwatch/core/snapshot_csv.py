"""Snapshots as CSV rows: one row per GPU per sample, for `snapshot` and `record`.

The columns are a stable contract (docs/cli.md lists them): units are in the names, as
in the JSON documents; an unknown value is an empty cell, never 0.
"""

from __future__ import annotations

import csv
import io
import time

from gpuwatch.core.csv_cells import cells
from gpuwatch.core.snapshot import Snapshot

COLUMNS = (
    "sampled_at", "timestamp_s", "host", "gpu", "uuid", "name", "state",
    "total_bytes", "used_bytes", "free_bytes", "reserved_bytes",
    "gpu_util_percent", "memory_busy_percent",
    "estimated_bandwidth_bytes_per_s", "peak_bandwidth_bytes_per_s",
    "pcie_tx_bytes_per_s", "pcie_rx_bytes_per_s", "temperature_c", "power_w",
    "power_limit_w", "processes", "processes_used_bytes",
)


def _iso(timestamp_s: float) -> str:
    """ISO 8601 in UTC with milliseconds: 2026-12-05T09:12:03.250Z."""
    whole = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(timestamp_s))
    return f"{whole}.{int(timestamp_s * 1000) % 1000:03d}Z"


def _round(value: float | None) -> float | int | None:
    if value is None:
        return None
    return int(value) if float(value).is_integer() else round(float(value), 3)


def snapshot_rows(s: Snapshot) -> list[list[object]]:
    """The rows of one sample (one per GPU), cells ready for ``csv.writer``."""
    rows = []
    stamp = _iso(s.timestamp_s)
    for g in s.gpus:
        m = g.memory
        known = [p.used_bytes for p in g.processes if p.used_bytes is not None]
        rows.append(cells((
            stamp, round(s.timestamp_s, 3), s.backend.hostname, g.index, g.uuid, g.name,
            g.state.value, m.total_bytes, m.used_bytes, m.free_bytes, m.reserved_bytes,
            _round(g.gpu_util_percent), _round(g.memory_busy_percent),
            _round(g.estimated_bandwidth_bytes_per_s), _round(g.peak_bandwidth_bytes_per_s),
            _round(g.pcie_tx_bytes_per_s), _round(g.pcie_rx_bytes_per_s),
            _round(g.temperature_c), _round(g.power_w), _round(g.power_limit_w),
            len(g.processes) if g.processes_error is None else None,
            sum(known) if g.processes_error is None and len(known) == len(g.processes)
            else None,
        )))
    return rows


def csv_text(rows: list[list[object]], *, header: bool) -> str:
    """Rows as CSV text with ``\\n`` line ends (what pipes expect), the header first
    when asked."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    if header:
        writer.writerow(COLUMNS)
    writer.writerows(rows)
    return buf.getvalue()
