"""A recorded session, replayed through the advisor, gets the judgement it got live.

Real-GPU traces are recorded sessions: CI replays them through the advisor of the day.
That is only sound if what a session file keeps (each GPU's memory, each process's
memory at each sample that listed it) is all the advisor's judgement rests on. Here a
generated run is judged live while the real ``Recorder`` writes it, as ``gpuwatch
record`` does; its file is read back with the real ``SessionReader``, rebuilt sample by
sample, and judged again by a fresh advisor: the same hints, at the same seconds, with
the same titles; and the hints the file kept (``gpuwatch report FILE --format json``)
are those the live advisor opened.
"""

from __future__ import annotations

import math
from pathlib import Path

from generated_shapes import RunSpec, failing_runs, healthy_runs, snapshots
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuwatch.advisor import Advisor
from gpuwatch.core.hints import HintEvent, HintEventKind
from gpuwatch.core.history import History
from gpuwatch.core.snapshot import (
    BackendInfo,
    BackendKind,
    GpuSample,
    GpuState,
    MemoryInfo,
    ProcessSample,
    Snapshot,
)
from gpuwatch.sessions.reader import SessionReader
from gpuwatch.sessions.recorder import Recorder


def judged(snaps) -> list[tuple]:
    """The advisor's events over the snapshots: (t, kind, code, GPU, pid, severity, title)."""
    advisor, history, out = Advisor(), History(), []
    for snap in snaps:
        history.append(snap)
        out += [_row(e) for e in advisor.update(history)]
    return out


def _row(e: HintEvent) -> tuple:
    h = e.hint
    return (round(e.at_s, 3), e.kind.value, h.code, h.gpu_index, h.pid, h.severity.value,
            h.title)


def record_live(spec: RunSpec, path: Path) -> list[tuple]:
    """Judge the run live while recording it, as ``gpuwatch record`` does."""
    recorder = Recorder(path, 1.0)
    advisor, history, out = Advisor(), History(), []
    last = 0.0
    for _, _, snap in snapshots(spec):
        history.append(snap)
        recorder.add_snapshot(snap)
        for event in advisor.update(history):
            recorder.add_hint_event(event)
            out.append(_row(event))
        last = snap.timestamp_s
    recorder.close(last)
    return out


def replayed(path: Path) -> list[Snapshot]:
    """The session's samples, rebuilt as the snapshots they were."""
    with SessionReader(path) as r:
        t0 = r.info().started_at_s
        series = {g.index: r.gpu_series(g.index) for g in r.gpus()}
        listed: dict[int, list[tuple[int, str | None, dict[float, float]]]] = {}
        for p in r.processes():
            times, used = r.process_series(p.id)
            listed.setdefault(p.gpu, []).append(
                (p.pid, p.name, {round(float(a), 6): float(b) for a, b in zip(times, used,
                                                                            strict=True)}))
    info = BackendInfo(BackendKind.SIMULATED)
    n = len(next(iter(series.values()))["t_s"])
    out = []
    for i in range(n):
        gpus = []
        for index, s in sorted(series.items()):
            t = round(float(s["t_s"][i]), 6)
            procs = tuple(ProcessSample(pid, index, None if math.isnan(u) else int(u),
                                        "compute", name=name)
                          for pid, name, at in listed.get(index, ())
                          if (u := at.get(t)) is not None)
            total, used, reserved = (int(s[k][i]) for k in ("total_bytes", "used_bytes",
                                                            "reserved_bytes"))
            gpus.append(GpuSample(index=index, uuid=None, name="Test GPU", state=GpuState.OK,
                                  memory=MemoryInfo(total, used, total - reserved - used,
                                                    reserved),
                                  gpu_util_percent=float(s["gpu_util_percent"][i]),
                                  memory_busy_percent=float(s["memory_busy_percent"][i]),
                                  processes=procs))
        out.append(Snapshot(t0 + float(series[0]["t_s"][i]), info, tuple(gpus)))
    return out


RUNS = st.one_of(healthy_runs(duration=(300, 600)), failing_runs(longest_fill_s=900))


@settings(max_examples=6, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=RUNS)
def test_a_replayed_session_is_judged_as_it_was_live(spec: RunSpec, tmp_path: Path) -> None:
    path = tmp_path / f"{abs(hash(spec.label))}.gpuwatch.sqlite"
    path.unlink(missing_ok=True)
    live = record_live(spec, path)
    again = judged(replayed(path))
    assert again == live, spec.label
    with SessionReader(path) as r:
        kept = sorted((h.code, h.gpu, h.pid, round(h.first_seen_s)) for h in r.hints())
        t0 = r.info().started_at_s
    opened = sorted((code, gpu, pid, round(t - t0)) for t, kind, code, gpu, pid, *_ in live
                    if kind == HintEventKind.OPENED.value)
    assert kept == opened
