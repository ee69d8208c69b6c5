"""The writer over a day of short jobs: what it keeps in memory stays bounded, and every
process's row still ends with its peak and last-seen time."""

from __future__ import annotations

from gpuwatch.core.snapshot import (
    BackendInfo,
    BackendKind,
    GpuSample,
    GpuState,
    MemoryInfo,
    ProcessSample,
    Snapshot,
)
from gpuwatch.sessions import writer as writer_module
from gpuwatch.sessions.reader import SessionReader
from gpuwatch.sessions.writer import SessionWriter

BACKEND = BackendInfo(BackendKind.SIMULATED, scenario="short jobs")
GIB = 1024**3


def _snap(t: float, pids: list[int]) -> Snapshot:
    procs = tuple(ProcessSample(pid, 0, (pid % 7 + 1) * GIB + int(t), started_at_s=float(pid))
                  for pid in pids)
    gpu = GpuSample(0, "GPU-0", "g", GpuState.OK, MemoryInfo(80 * GIB, 10 * GIB, None, None),
                    processes=procs)
    return Snapshot(1000.0 + t, BACKEND, (gpu,))


def test_ended_processes_leave_the_working_set_but_keep_their_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(writer_module, "ENDED_REMEMBERED", 16)
    w = SessionWriter(tmp_path / "s.sqlite")
    jobs = 200                              # each lives three samples, two at a time
    for t in range(jobs + 2):
        w.add_snapshot(_snap(float(t), [pid for pid in range(t - 2, t + 1) if 0 <= pid < jobs]))
        if t % 5 == 0:
            w.commit()
        assert len(w._processes) <= 3 + 5 * 3 and len(w._ended) <= 16
    w.close(None)
    with SessionReader(tmp_path / "s.sqlite") as r:
        rows = {p.pid: p for p in r.processes()}
    assert len(rows) == jobs
    for pid in (0, 57, jobs - 1):
        assert rows[pid].first_seen_s == pid and rows[pid].last_seen_s == min(pid + 2, jobs + 1)
        assert rows[pid].peak_used_bytes == (pid % 7 + 1) * GIB + rows[pid].last_seen_s


def test_a_process_missing_from_one_listing_comes_back_on_its_own_row(tmp_path):
    w = SessionWriter(tmp_path / "s.sqlite")
    for t, pids in enumerate([[1], [1], [], [1], [1]]):
        w.add_snapshot(_snap(float(t), pids))
        w.commit()
    w.close(None)
    with SessionReader(tmp_path / "s.sqlite") as r:
        rows = [p for p in r.processes() if p.pid == 1]
    assert len(rows) == 1 and rows[0].first_seen_s == 0 and rows[0].last_seen_s == 4
