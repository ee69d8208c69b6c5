"""Process history: the table of live processes' rings against a straightforward history
(one ring per process, least recently seen first), on random snapshot sequences with
processes coming, going, coming back, listed twice, unknown memory, tight bounds; and
the runs (when memory last changed) against the rows they summarise."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

from gpuwatch.core.history import PROCESS_COLUMNS, History, Ring
from gpuwatch.core.snapshot import (
    BackendInfo,
    BackendKind,
    GpuSample,
    GpuState,
    MemoryInfo,
    ProcessSample,
    Snapshot,
)

BACKEND = BackendInfo(BackendKind.SIMULATED, scenario="t")


class ReferenceHistory:
    """The process part of ``History`` as it was written first: a ring per process."""

    def __init__(self, max_processes: int, process_capacity: int):
        self.max_processes = max_processes
        self.process_capacity = process_capacity
        self.processes: OrderedDict[tuple[int, int], Ring] = OrderedDict()

    def append(self, snapshot: Snapshot) -> None:
        for g in snapshot.gpus:
            for p in g.processes:
                key = (g.index, p.pid)
                ring = self.processes.get(key)
                if ring is None:
                    ring = self.processes[key] = Ring(self.process_capacity, PROCESS_COLUMNS,
                                                      initial=64)
                else:
                    self.processes.move_to_end(key)
                ring.append_pair(snapshot.timestamp_s, p.used_bytes)
        while len(self.processes) > self.max_processes:
            self.processes.popitem(last=False)


def snapshot(t: float, gpus: list[tuple[int, list[tuple[int, int | None]]]]) -> Snapshot:
    return Snapshot(t, BACKEND, tuple(
        GpuSample(index, None, "g", GpuState.OK, MemoryInfo(1000, 10, None, None),
                  processes=tuple(ProcessSample(pid, index, used) for pid, used in procs))
        for index, procs in gpus))


# a step: for each of two GPUs, which of a few pids are listed and their memory
_used = st.one_of(st.none(), st.sampled_from([0, 5, 7, 2**40 + 1]))
_gpu_procs = st.lists(st.tuples(st.integers(1, 6), _used), max_size=5)
_steps = st.lists(st.tuples(_gpu_procs, _gpu_procs, st.sampled_from([1.0, 1.0, 0.5, 7.0])),
                  min_size=1, max_size=60)


def _run(steps, max_processes: int, capacity: int):
    history = History(capacity=50, max_processes=max_processes, process_capacity=capacity)
    reference = ReferenceHistory(max_processes, min(capacity, 50))
    t = 0.0
    for gpu0, gpu1, dt in steps:
        t += dt
        snap = snapshot(t, [(0, gpu0), (1, gpu1)])
        history.append(snap)
        reference.append(snap)
        yield t, history, reference


@given(_steps, st.integers(1, 12), st.sampled_from([1, 3, 64, 70, 200]))
def test_process_rings_read_as_one_ring_per_process(steps, max_processes, capacity):
    for _t, history, reference in _run(steps, max_processes, capacity):
        assert list(history.processes) == list(reference.processes)
        assert len(history.processes) == len(reference.processes)
        for key, want in reference.processes.items():
            got = history.process(*key)
            assert got is not None and len(got) == len(want)
            for name in PROCESS_COLUMNS:
                np.testing.assert_array_equal(got.column(name), want.column(name))
                np.testing.assert_array_equal(got.column(name, last=2),
                                              want.column(name, last=2))
            assert got.first("timestamp_s") == want.first("timestamp_s")
            assert got.last("used_bytes") == want.last("used_bytes")
            since = want.last("timestamp_s") - 2.0
            assert got.peak_since("used_bytes", since) == want.peak_since("used_bytes", since)


@given(_steps, st.integers(1, 12), st.sampled_from([3, 64, 200]))
@example([([(1, 0), (1, 5)], [], 1.0), ([], [], 1.0), ([(1, None)], [], 1.0)], 1, 3)
@example([([(1, 0), (1, None), (1, None)], [], 1.0), ([(1, None)], [], 1.0)], 1, 3)
def test_runs_say_what_the_rows_say(steps, max_processes, capacity):
    for t, history, _reference in _run(steps, max_processes, capacity):
        snap = history.latest
        for g in snap.gpus:
            runs = history.process_runs(g.index)
            pids = [p.pid for p in g.processes]
            if runs is None:    # a pid listed twice, or more listed than kept: no view
                listed = [(h.index, p.pid) for h in snap.gpus for p in h.processes]
                assert (len(set(listed)) < len(listed)
                        or len(listed) > history.max_processes)
                continue
            assert len(runs.value) == len(pids)
            for since in (t - 8.0, t - 2.0, t - 0.5, t):
                peaks, sure = runs.steady_peaks(since)
                for i, pid in enumerate(pids):
                    ring = history.process(g.index, pid)
                    rows = ring.since(since, ("timestamp_s", "used_bytes"))
                    if sure[i]:
                        want = Ring.peak_of(rows["used_bytes"])
                        got = None if np.isnan(peaks[i]) else float(peaks[i])
                        assert got == want, (pid, since)
            for i, pid in enumerate(pids):
                ring = history.process(g.index, pid)
                rows = ring.since(float(runs.changed_s[i]), ("used_bytes",))["used_bytes"]
                known = rows[~np.isnan(rows)]
                assert (known == runs.value[i]).all()
        run = history.gpu_run(0)
        ring = history.gpu(0)
        peak, sure = run.steady_peak(ring, t - 3.0)
        if sure:
            assert peak == ring.peak_since("used_bytes", t - 3.0)


def test_a_process_that_comes_back_keeps_its_rows_and_its_ring_object_stays_readable():
    history = History(capacity=100)
    for t in range(3):
        history.append(snapshot(float(t), [(0, [(1, 10), (2, 20)])]))
    held = history.process(0, 1)
    history.append(snapshot(3.0, [(0, [(2, 20)])]))           # pid 1 is not listed
    assert held.column("used_bytes").tolist() == [10, 10, 10]
    assert history.process(0, 1).column("timestamp_s").tolist() == [0, 1, 2]
    history.append(snapshot(4.0, [(0, [(2, 20), (1, 11)])]))  # back, listed second
    assert history.process(0, 1).column("timestamp_s").tolist() == [0, 1, 2, 4]
    assert history.process(0, 1).column("used_bytes").tolist() == [10, 10, 10, 11]
    assert history.process_runs(0).changed_s.tolist() == [-np.inf, 4.0]


def test_a_ring_given_to_the_history_is_kept_as_given():
    """Replaying a session puts rings of its own into ``History.processes``."""
    history = History(capacity=10)
    ring = Ring(5, PROCESS_COLUMNS)
    ring.append_pair(1.0, 3.0)
    history.processes[(0, 9)] = ring
    assert history.process(0, 9) is ring
    assert list(history.processes) == [(0, 9)]
    assert history.process_runs(0) is None and history.gpu_run(0) is None
    history.append(snapshot(2.0, [(0, [(9, 4)])]))
    assert history.process(0, 9).column("used_bytes").tolist() == [3.0, 4.0]
    del history.processes[(0, 9)]
    assert history.process(0, 9) is None and len(history.processes) == 0


def _started(t: float, gpus: list[tuple[int, list[tuple[int, int, float | None]]]]) -> Snapshot:
    return Snapshot(t, BACKEND, tuple(
        GpuSample(index, None, "g", GpuState.OK, MemoryInfo(1000, 10, None, None),
                  processes=tuple(ProcessSample(pid, index, used, started_at_s=start)
                                  for pid, used, start in procs))
        for index, procs in gpus))


def test_a_pid_back_for_another_process_starts_a_ring_of_its_own():
    """A box whose pids come round again (short jobs) must not grow the old ring of a
    pid for every process that takes it; one missing from a listing is the same."""
    history = History(capacity=100)
    for t in range(3):
        history.append(_started(float(t), [(0, [(1, 10, 100.0), (2, 20, 50.0)])]))
    history.append(_started(3.0, [(0, [(2, 20, 50.0)])]))                  # 1 ends
    history.append(_started(4.0, [(0, [(2, 20, 50.0), (1, 99, 103.5)])]))  # a new 1
    assert history.process(0, 1).column("timestamp_s").tolist() == [4.0]
    assert history.process(0, 1).column("used_bytes").tolist() == [99]
    history.append(_started(5.0, [(0, [(1, 98, 103.5)])]))                 # 2 missed once
    history.append(_started(6.0, [(0, [(1, 98, 103.5), (2, 21, 50.0)])]))  # the same 2
    assert history.process(0, 2).column("timestamp_s").tolist() == [0, 1, 2, 3, 4, 6]
    history.append(_started(7.0, [(0, [(1, 98, 103.5)])]))
    history.append(_started(8.0, [(0, [(1, 98, 103.5), (2, 22, None)])]))  # start unknown
    assert len(history.process(0, 2)) == 7                                  # taken as the same


@given(st.lists(st.lists(st.tuples(st.integers(1, 4), st.sampled_from([1, 2]),
                                  st.sampled_from([10.0, 20.0, None])),
                        max_size=4, unique_by=lambda p: p[0]),
                min_size=1, max_size=40))
def test_each_ring_holds_the_rows_of_one_process_since_its_pid_was_taken(steps):
    """Whatever the listings: a pid's ring holds exactly the rows since it was last
    listed anew with another known start than before."""
    history = History(capacity=200)
    rows: dict[int, list[float]] = {}
    start_of: dict[int, float] = {}
    listed: set[int] = set()
    for t, procs in enumerate(steps):
        history.append(_started(float(t), [(0, procs)]))
        for pid, _used, start in procs:
            if pid not in listed and start is not None:
                if start_of.get(pid, start) != start:
                    rows[pid] = []
                start_of[pid] = start
            rows.setdefault(pid, []).append(float(t))
        listed = {pid for pid, _, _ in procs}
    for pid, times in rows.items():
        assert history.process(0, pid).column("timestamp_s").tolist() == times
