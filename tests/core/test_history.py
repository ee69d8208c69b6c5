import numpy as np
import pytest

from gpuwatch.core.history import DAY_AT_1HZ, History, Ring
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


def snap(t: float, used: int | None, pids=(1,)) -> Snapshot:
    procs = tuple(ProcessSample(pid, 0, used) for pid in pids)
    gpu = GpuSample(0, "u", "g", GpuState.OK, MemoryInfo(100, used, None, None), processes=procs)
    return Snapshot(t, BACKEND, (gpu,))


def test_ring_keeps_the_newest_rows_in_order():
    ring = Ring(4, {"t": np.float64})
    for i in range(10):
        ring.append({"t": i})
    assert len(ring) == 4
    assert ring.column("t").tolist() == [6, 7, 8, 9]
    assert ring.column("t", last=2).tolist() == [8, 9]
    assert ring.last("t") == 9


def test_ring_grows_by_doubling_up_to_capacity():
    ring = Ring(100, {"t": np.float64}, initial=8)
    for i in range(50):
        ring.append({"t": i})
    assert ring.column("t").tolist() == list(range(50))
    assert ring.nbytes == 64 * 8
    for i in range(50, 250):
        ring.append({"t": i})
    assert ring.nbytes == 100 * 8
    assert ring.column("t").tolist() == list(range(150, 250))


def test_unknown_values_are_nan_not_zero():
    h = History(capacity=10)
    h.append(snap(0, None))
    assert np.isnan(h.gpu(0).column("used_bytes")[0])
    assert h.gpu(0).last("used_bytes") is None


def test_history_tracks_processes_and_evicts_the_least_recently_seen():
    h = History(capacity=10, max_processes=2)
    h.append(snap(0, 5, pids=(1, 2)))
    h.append(snap(1, 6, pids=(2, 3)))
    assert h.process(0, 1) is None
    assert h.process(0, 2).column("used_bytes").tolist() == [5, 6]
    assert h.process(0, 3).column("timestamp_s").tolist() == [1]


def test_a_day_at_1hz_for_8_gpus_is_preallocated_and_bounded():
    per_gpu = History.bytes_per_gpu()
    assert per_gpu == DAY_AT_1HZ * 64     # 4 float64 and 8 float32 columns
    h = History()
    for t in range(3):
        h.append(snap(t, 10))
    assert h.gpu(0).nbytes == per_gpu
    assert 8 * per_gpu < 50 * 1024**2


@pytest.mark.parametrize("capacity", [0, -1])
def test_ring_rejects_empty_capacity(capacity):
    with pytest.raises(ValueError):
        Ring(capacity, {"t": np.float64})


@pytest.mark.parametrize("rows", [0, 1, 5, 8, 9, 13, 16, 40])
def test_rows_since_match_the_columns_whether_or_not_they_wrap(rows):
    ring = Ring(8, {"timestamp_s": np.float64, "v": np.float64}, initial=2)
    for i in range(rows):
        ring.append_values((10.0 * i, float(i)))
    t, v = ring.column("timestamp_s"), ring.column("v")
    for since in (-5.0, 0.0, 10.0 * rows - 35, 10.0 * rows - 30, 10.0 * rows - 10, 1e9):
        got = ring.since(since, ("timestamp_s", "v"))
        keep = t >= since
        assert got["timestamp_s"].tolist() == t[keep].tolist(), (rows, since)
        assert got["v"].tolist() == v[keep].tolist(), (rows, since)


def test_rows_since_are_read_only_views():
    ring = Ring(8, {"timestamp_s": np.float64, "v": np.float64})
    for i in range(4):
        ring.append_values((float(i), float(i)))
    got = ring.since(1.0, ("v",))["v"]
    with pytest.raises(ValueError):
        got[0] = 99.0
    assert ring.column("v").tolist() == [0.0, 1.0, 2.0, 3.0]


def test_append_pair_is_append_values_for_two_columns():
    paired = Ring(16, {"timestamp_s": np.float64, "used_bytes": np.float64}, initial=2)
    general = Ring(16, {"timestamp_s": np.float64, "used_bytes": np.float64}, initial=2)
    for i in range(40):                                  # grows, then wraps around
        used = None if i % 7 == 3 else float(i * 10)
        paired.append_pair(float(i), used)
        general.append_values((float(i), used))
        for name in ("timestamp_s", "used_bytes"):
            np.testing.assert_array_equal(paired.column(name), general.column(name))
    kept = paired.column("timestamp_s").astype(int)
    assert len(paired) == 16
    assert np.isnan(paired.column("used_bytes")).tolist() == [t % 7 == 3 for t in kept]


def test_peak_since_ignores_unknown_values():
    ring = Ring(8, {"timestamp_s": np.float64, "used_bytes": np.float64})
    assert ring.peak_since("used_bytes", 0.0) is None              # no rows
    for i, used in enumerate([5.0, None, 9.0, None, 3.0]):
        ring.append_pair(float(i), used)
    assert ring.peak_since("used_bytes", 0.0) == 9.0
    assert ring.peak_since("used_bytes", 3.0) == 3.0
    assert ring.peak_since("used_bytes", 2.5) == 3.0
    assert ring.peak_since("used_bytes", 5.0) is None              # no rows that late
    ring.append_pair(5.0, None)
    assert ring.peak_since("used_bytes", 4.5) is None              # only unknown


def test_first_and_last_follow_the_oldest_and_newest_rows_as_the_ring_wraps():
    r = Ring(3, {"timestamp_s": np.float64, "v": np.float64}, initial=1)
    assert r.first("v") is None and r.last("v") is None
    for t in range(5):
        r.append_pair(float(t), None if t == 3 else 10.0 * t)
        assert r.first("timestamp_s") == float(max(0, t - 2))
        assert r.last("timestamp_s") == float(t)
    assert r.first("v") == 20.0 and r.last("v") == 40.0
    r.append_pair(5.0, 50.0)
    assert r.first("v") is None        # the oldest kept row (t = 3) is unknown


def test_rows_since_include_equal_times_on_both_sides_of_the_wrap():
    """Rows of one time (a process listed twice in a snapshot) that straddle the end of
    the buffer are all read."""
    ring = Ring(3, {"timestamp_s": np.float64, "v": np.float64})
    for t, v in [(4.0, 1.0), (5.0, 2.0), (5.0, 3.0), (5.0, 4.0), (7.0, 5.0)]:
        ring.append_values((t, v))
    assert ring.column("timestamp_s").tolist() == [5.0, 5.0, 7.0]
    assert ring.since(5.0, ("v",))["v"].tolist() == [3.0, 4.0, 5.0]
    assert ring.since(6.0, ("v",))["v"].tolist() == [5.0]
    assert ring.since(8.0, ("v",))["v"].tolist() == []
