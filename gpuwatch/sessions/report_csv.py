"""CSV export: one table per file, packed in a zip; units are in the header names.

Text cells are neutralised against spreadsheet formula injection (OWASP "CSV
injection"): a text cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
return (or their full-width forms) gets a leading ``'``, so a spreadsheet shows it as
text instead of running it; the csv module quotes cells that hold separators, quotes
or line breaks. Numbers (int and float values) are written as numbers, negative ones
included.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from collections.abc import Iterable, Sequence

from gpuwatch.sessions.reader import GPU_DETAIL_COLUMNS, GPU_SERIES_COLUMNS, SessionReader

# a text cell starting with one of these is read as a formula by spreadsheets
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def neutralise(value: object) -> object:
    """A cell safe for spreadsheets: formula-like text gets a leading ``'``; numbers
    and None pass unchanged (None is written as an empty cell)."""
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def _csv(header: Sequence[str], rows: Iterable[Sequence[object]]) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(header)
    for row in rows:
        w.writerow(["" if v is None else neutralise(v) for v in row])
    return buf.getvalue().encode("utf-8")


def _num(v: float) -> object:
    if v != v:             # NaN: unknown
        return None
    return int(v) if float(v).is_integer() else round(float(v), 3)


def write_csv_zip(reader: SessionReader, target: io.BufferedIOBase) -> None:
    info = reader.info()
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("session.csv", _csv(
            ("id", "host", "backend", "driver_version", "scenario", "started_at_unix_s",
             "ended_at_unix_s", "duration_s", "samples"),
            [(info.uuid, info.host, info.backend_kind, info.driver_version, info.scenario,
              info.started_at_s, info.ended_at_s, round(info.duration_s, 3), info.samples)]))
        gpus = reader.gpus()
        z.writestr("gpus.csv", _csv(("gpu", "uuid", "name", "total_bytes"),
                                    [(g.index, g.uuid, g.name, g.total_bytes) for g in gpus]))
        rows = []
        for g in gpus:
            series, states = reader.gpu_samples(g.index)
            columns = [series[c] for c in GPU_SERIES_COLUMNS]
            columns += [states] + [series[c] for c in GPU_DETAIL_COLUMNS[1:]]
            rows += [(row[0], g.index, *row[1:]) for row in zip(*columns, strict=True)]
        rows.sort(key=lambda r: (r[0], r[1]))
        z.writestr("gpu_samples.csv", _csv(
            ("time_s", "gpu", *GPU_SERIES_COLUMNS[1:], "state", *GPU_DETAIL_COLUMNS[1:]),
            ([_num(v) if isinstance(v, float) else v for v in r] for r in rows)))
        procs = reader.processes()
        z.writestr("processes.csv", _csv(
            ("process_id", "gpu", "pid", "name", "user", "container", "cmdline_json",
             "first_seen_s", "last_seen_s", "peak_used_bytes"),
            [(p.id, p.gpu, p.pid, p.name, p.user, p.container, json.dumps(list(p.cmdline)),
              p.first_seen_s, p.last_seen_s, p.peak_used_bytes) for p in procs]))
        sample_rows = []
        for p in procs:
            t, used = reader.process_series(p.id)
            sample_rows += [(_num(a), p.id, _num(b)) for a, b in zip(t, used, strict=True)]
        z.writestr("process_samples.csv", _csv(("time_s", "process_id", "used_bytes"),
                                               sample_rows))
        z.writestr("hints.csv", _csv(
            ("first_seen_s", "last_seen_s", "closed_s", "severity", "code", "gpu", "pid",
             "title", "detail", "actions"),
            [(h.first_seen_s, h.last_seen_s, h.closed_s, h.severity, h.code, h.gpu, h.pid,
              h.title, h.detail, " | ".join(h.actions)) for h in reader.hints()]))
        z.writestr("events.csv", _csv(("time_s", "kind", "gpu", "pid", "detail"),
                                      [(ev.t_s, ev.kind, ev.gpu, ev.pid, ev.detail)
                                       for ev in reader.events()]))
