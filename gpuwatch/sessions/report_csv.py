"""CSV export: one table per file, packed in a zip; units are in the header names.

Text cells are neutralised against spreadsheet formula injection
(:mod:`gpuwatch.core.csv_cells`); numbers are written as numbers, negative ones included.

Every table is written as it is read, row by row (the GPU samples in blocks of one
SQL statement, the process timelines one process at a time), so a day of 8 GPUs × 64
processes exports in the memory of a few blocks. ``report -o r.csv`` writes the GPU
samples alone as one plain CSV file.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from typing import BinaryIO, TextIO

from gpuwatch.core.csv_cells import cells
from gpuwatch.sessions.reader import GPU_DETAIL_COLUMNS, GPU_SERIES_COLUMNS, SessionReader


def _write(stream: TextIO, header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    """A CSV table written row by row as ``rows`` yields them (nothing is gathered)."""
    w = csv.writer(stream)
    w.writerow(header)
    for row in rows:
        w.writerow(cells(row))


def _num(v: float) -> object:
    if v != v:             # NaN: unknown
        return None
    return int(v) if float(v).is_integer() else round(float(v), 3)


GPU_SAMPLES_HEADER = ("time_s", "gpu", *GPU_SERIES_COLUMNS[1:], "state",
                      *GPU_DETAIL_COLUMNS[1:])
_AFTER_STATE = 1 + len(GPU_SERIES_COLUMNS)    # in a block: gpu, series..., detail...


def gpu_sample_rows(reader: SessionReader) -> Iterator[tuple]:
    """Every GPU sample, in time order then GPU, one row at a time (read in blocks)."""
    for data, states in reader.gpu_sample_blocks():
        for values, state in zip(data.tolist(), states, strict=True):
            row = [_num(v) for v in values]
            yield (row[1], row[0], *row[2:_AFTER_STATE], state, *row[_AFTER_STATE:])


def write_gpu_samples_csv(reader: SessionReader, stream: TextIO) -> None:
    """The GPU samples alone, as one CSV table (``report -o r.csv``)."""
    reader.info()            # a damaged session row is refused here too
    _write(stream, GPU_SAMPLES_HEADER, gpu_sample_rows(reader))


def _process_sample_rows(reader: SessionReader, procs: list) -> Iterator[tuple]:
    for p in procs:          # one process's timeline in memory at a time
        t, used = reader.process_series(p.id)
        for a, b in zip(t.tolist(), used.tolist(), strict=True):
            yield _num(a), p.id, _num(b)


def write_csv_zip(reader: SessionReader, target: BinaryIO) -> None:
    """Every table of the session as CSV files in a zip. Each table is streamed into
    its zip entry as it is read, so the memory held does not grow with the session."""
    info = reader.info()
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as z:

        def table(name: str, header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
            with z.open(name, "w", force_zip64=True) as raw, \
                    io.TextIOWrapper(raw, encoding="utf-8", newline="") as text:
                _write(text, header, rows)

        table("session.csv", ("id", "host", "backend", "driver_version", "scenario",
                              "started_at_unix_s", "ended_at_unix_s", "duration_s", "samples"),
              [(info.uuid, info.host, info.backend_kind, info.driver_version, info.scenario,
                info.started_at_s, info.ended_at_s, round(info.duration_s, 3), info.samples)])
        table("gpus.csv", ("gpu", "uuid", "name", "total_bytes"),
              [(g.index, g.uuid, g.name, g.total_bytes) for g in reader.gpus()])
        table("gpu_samples.csv", GPU_SAMPLES_HEADER, gpu_sample_rows(reader))
        procs = reader.processes()
        table("processes.csv", ("process_id", "gpu", "pid", "name", "user", "container",
                                "cmdline_json", "first_seen_s", "last_seen_s",
                                "peak_used_bytes"),
              ((p.id, p.gpu, p.pid, p.name, p.user, p.container, json.dumps(list(p.cmdline)),
                p.first_seen_s, p.last_seen_s, p.peak_used_bytes) for p in procs))
        table("process_samples.csv", ("time_s", "process_id", "used_bytes"),
              _process_sample_rows(reader, procs))
        table("hints.csv", ("first_seen_s", "last_seen_s", "closed_s", "severity", "code",
                            "gpu", "pid", "title", "detail", "actions"),
              [(h.first_seen_s, h.last_seen_s, h.closed_s, h.severity, h.code, h.gpu, h.pid,
                h.title, h.detail, " | ".join(h.actions)) for h in reader.hints()])
        table("events.csv", ("time_s", "kind", "gpu", "pid", "detail"),
              [(ev.t_s, ev.kind, ev.gpu, ev.pid, ev.detail) for ev in reader.events()])
