"""Writing the same snapshots in both session layouts, and everything a reader makes of a
file, as plain values that compare with ``==`` (NaN equal to NaN)."""

from __future__ import annotations

import dataclasses
import io
import json
import math
import sqlite3
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from dense_layout import DenseSessionWriter

from gpuwatch.advisor import Advisor
from gpuwatch.core.history import GPU_COLUMNS, History
from gpuwatch.core.snapshot import (
    BackendInfo,
    BackendKind,
    GpuSample,
    GpuState,
    MemoryInfo,
    ProcessSample,
    Snapshot,
)
from gpuwatch.sessions.reader import GPU_DETAIL_COLUMNS, SessionReader
from gpuwatch.sessions.replay import load_overview, load_replay
from gpuwatch.sessions.report_csv import write_csv_zip
from gpuwatch.sessions.report_html import render_html
from gpuwatch.sessions.report_json import report_to_json
from gpuwatch.sessions.report_model import build_report
from gpuwatch.sessions.writer import SessionWriter
from gpuwatch.telemetry.source import SourceOptions, open_backend

GIB = 1024**3
BACKEND = BackendInfo(BackendKind.SIMULATED, scenario="hand-made", hostname="box")
SESSION_UUID = "5e55104e-0000-4000-8000-000000000000"
Op = tuple[str, Any]        # ("snapshot", Snapshot), ("hint", HintEvent), ("commit", None), ...


def simulated(scenario: str, until_s: float, step_s: float = 1.0,
              advisor: bool = False) -> list[Op]:
    """What recording ``scenario`` hands the writer: snapshots, hint events, commits."""
    backend = open_backend(SourceOptions(demo=scenario, time_scale="max"))
    history, rules = History(), Advisor() if advisor else None
    ops: list[Op] = []
    t = 0.0
    try:
        while t <= until_s:
            backend.clock.set_elapsed(t)
            snap = backend.sample()
            ops.append(("snapshot", snap))
            if rules is not None:
                history.append(snap)
                ops += [("hint", event) for event in rules.update(history)]
            if len(ops) % 7 == 0:
                ops.append(("commit", None))
            t += step_s
    finally:
        backend.close()
    return ops


def proc(pid: int, gpu: int, used: int | None, started: float | None = 1.0,
         name: str = "python3") -> ProcessSample:
    return ProcessSample(pid, gpu, used, name=name, cmdline=(name, f"job{pid}.py"),
                         user="ada", started_at_s=started)


def gpu(index: int, processes: Iterable[ProcessSample] = (), state: GpuState = GpuState.OK,
        used: int | None = 10 * GIB) -> GpuSample:
    ok = state is GpuState.OK
    return GpuSample(index, f"GPU-{index}", f"Card {index}", state,
                     MemoryInfo(80 * GIB if ok else None, used if ok else None, None, None),
                     error=None if ok else "lost", processes=tuple(processes))


def snapshot(t: float, *gpus: GpuSample) -> Snapshot:
    return Snapshot(1_700_000_000.0 + t, BACKEND, tuple(gpus))


def write(path: Path, ops: list[Op], dense: bool, close: bool = True,
          ended_at_s: float | None = None) -> SessionWriter | DenseSessionWriter:
    """Apply ``ops`` to a new writer of either layout; closed unless ``close`` is False
    (then the caller owns the writer, as a recorder cut short would leave it)."""
    writer = DenseSessionWriter(path) if dense else SessionWriter(path)
    for kind, payload in ops:
        if kind == "snapshot":
            writer.add_snapshot(payload)
        elif kind == "hint":
            writer.add_hint_event(payload)
        elif kind == "event":
            writer.add_event(*payload)
        elif kind == "link":
            writer.add_budget_link(*payload)
        elif kind == "commit":
            writer.commit()
    if close:
        writer.close(ended_at_s)
    return writer


def write_both(folder: Path, ops: list[Op], close: bool = True) -> tuple[Path, Path]:
    """The same ops written in the version-1 layout and the version-2 one, both files
    named alike (in two folders) and given the same session id."""
    paths = []
    for layout in ("dense", "sparse"):
        (folder / layout).mkdir(parents=True, exist_ok=True)
        path = folder / layout / "s.gpuwatch.sqlite"
        write(path, ops, dense=layout == "dense", close=close)
        if close:
            with sqlite3.connect(path) as conn:
                conn.execute("UPDATE session SET uuid = ?", (SESSION_UUID,))
            conn.close()
        paths.append(path)
    return paths[0], paths[1]


def plain(value: Any) -> Any:
    """Dataclasses, arrays and floats as values that compare with ``==``: arrays keep
    their dtype, NaN becomes the string "nan"."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, np.ndarray):
        return (str(value.dtype), [plain(v) for v in value.tolist()])
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return value


def reading(path: Path) -> dict[str, Any]:
    """Everything SessionReader gives for the file (its path left out)."""
    with SessionReader(path) as r:
        info = dataclasses.replace(r.info(), path="")
        out: dict[str, Any] = {"info": info, "gpus": r.gpus(), "peak": r.peak_used_bytes(),
                               "end": r.end_and_interval(), "hints": r.hints(),
                               "events": r.events(), "links": r.budget_links()}
        for g in out["gpus"]:
            out[f"gpu {g.index}"] = r.gpu_samples(g.index)
            out[f"gpu {g.index} detail"] = r.gpu_series(g.index, GPU_DETAIL_COLUMNS)
        out["processes"] = r.processes()
        for p in out["processes"]:
            out[f"process {p.id}"] = r.process_series(p.id)
    return plain(out)


def replayed(path: Path) -> dict[str, Any]:
    """What the replay window loads: full timelines and the quick overview."""
    out: dict[str, Any] = {}
    for name, data in (("full", load_replay(path)), ("overview", load_overview(path))):
        h = data.history
        out[name] = {
            "info": dataclasses.replace(data.info, path=""), "gpus": data.gpus,
            "processes": data.processes, "hints": data.hints, "events": data.events,
            "end": data.end_s, "latest": h.latest.timestamp_s if h.latest else None,
            "gpu rings": {i: {c: ring.column(c) for c in GPU_COLUMNS}
                          for i, ring in sorted(h.gpus.items())},
            "process rings": {key: (ring.column("timestamp_s"), ring.column("used_bytes"))
                              for key, ring in sorted(h.processes.items())},
        }
    return plain(out)


def reports(path: Path) -> dict[str, Any]:
    """The report model and the HTML, JSON and CSV exports (the PDF is drawn from the
    same model); the CSV as its members' bytes (a zip's own bytes hold the time)."""
    with SessionReader(path) as r:
        report = build_report(r)
        buffer = io.BytesIO()
        write_csv_zip(r, buffer)
    with zipfile.ZipFile(buffer) as z:
        members = {name: z.read(name) for name in sorted(z.namelist())}
    model = dataclasses.replace(report, info=dataclasses.replace(report.info, path=""))
    return {"model": plain(model), "html": render_html(report),
            "json": json.dumps(report_to_json(report), indent=2), "csv": members}
