"""Process rows only where something changes (schema 2) read exactly as the old layout
of a row per process and sample (schema 1): the reader, the replay window's data, the
report model and every export, for the same snapshots written both ways."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st
from layout_support import (
    GIB,
    gpu,
    proc,
    reading,
    replayed,
    reports,
    simulated,
    snapshot,
    write,
    write_both,
)

from gpuwatch.core.snapshot import GpuState
from gpuwatch.sessions import schema
from gpuwatch.sessions.errors import SessionFileError
from gpuwatch.sessions.reader import SessionReader


def hand_made() -> list:
    """Churn the scenarios do not have: a process missing from one listing, a pid reused
    (with a new start time, and without any), a GPU lost and a GPU missing from a
    snapshot altogether, unknown and oversized values, the clock stepping back, two
    samples at one time, a pause."""
    a, b = proc(100, 0, 2 * GIB), proc(200, 0, None)
    ops = [("snapshot", snapshot(0, gpu(0, [a, b]), gpu(1, [proc(300, 1, GIB)])))]
    ops += [("snapshot", snapshot(1, gpu(0, [a, b]), gpu(1, [proc(300, 1, GIB)])))]
    ops += [("snapshot", snapshot(2, gpu(0, [b]), gpu(1, [proc(300, 1, 2**64)]))),  # a missing
            ("commit", None)]
    ops += [("snapshot", snapshot(3, gpu(0, [a, b]), gpu(1, state=GpuState.LOST)))]
    ops += [("snapshot", snapshot(4, gpu(0, [proc(100, 0, 3 * GIB, started=9.0), b])))]
    ops += [("snapshot", snapshot(5, gpu(0, [proc(100, 0, 3 * GIB, started=None), b]),
                                  gpu(1, [proc(300, 1, GIB)])))]
    ops += [("event", ("recording-paused", 1_700_000_005.5)),
            ("event", ("recording-resumed", 1_700_000_009.0))]
    ops += [("snapshot", snapshot(9, gpu(0, [b, a]), gpu(1, [proc(300, 1, GIB)]))),
            ("commit", None)]
    ops += [("snapshot", snapshot(7, gpu(0, [a]), gpu(1, [proc(300, 1, 5 * GIB)])))]  # back
    ops += [("snapshot", snapshot(7.0001, gpu(0, [a, b]), gpu(1, [proc(300, 1, GIB)])))]
    ops += [("snapshot", snapshot(10, gpu(0, [a, b]), gpu(1, [proc(300, 1, GIB)])))]
    ops += [("link", (0, 100, "llama", {"total_bytes": 4 * GIB}, 1_700_000_010.0))]
    ops += [("snapshot", snapshot(11 + k, gpu(0, [a, b]), gpu(1))) for k in range(3)]
    return ops


CASES = {
    "churn": lambda: simulated("churn", 180, step_s=3),
    "faults": lambda: simulated("faults", 240, step_s=2),
    "oom-ramp with hints": lambda: simulated("oom-ramp", 420, step_s=6, advisor=True),
    "checkpoint-restart": lambda: simulated("checkpoint-restart", 5 * 3600, step_s=300),
    "multi-gpu-ddp": lambda: simulated("multi-gpu-ddp", 200, step_s=5),
    "hand-made": hand_made,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_both_layouts_read_alike_everywhere(case, tmp_path):
    dense, sparse = write_both(tmp_path, CASES[case]())
    assert reading(sparse) == reading(dense)
    assert replayed(sparse) == replayed(dense)
    assert reports(sparse) == reports(dense)
    with sqlite3.connect(sparse) as conn:
        stored = conn.execute("SELECT COUNT(*) FROM process_change").fetchone()[0]
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
    conn.close()
    with sqlite3.connect(dense) as conn:
        dense_rows = conn.execute("SELECT COUNT(*) FROM process_sample").fetchone()[0]
    conn.close()
    assert stored <= dense_rows + len(reading(sparse)["events"])


def test_the_pdf_reads_alike(tmp_path):
    """The PDF is drawn from the report model compared above; its text, as a reader
    extracts it, is the same too."""
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) is not installed")
    from gpuwatch.sessions.export import export

    dense, sparse = write_both(tmp_path, CASES["oom-ramp with hints"]())
    texts = []
    for path in (dense, sparse):
        out = export(path, "pdf", path.with_suffix(".pdf"))
        texts.append(subprocess.run(["pdftotext", "-layout", str(out), "-"], check=True,
                                    capture_output=True, text=True).stdout)
    assert texts[0] == texts[1] and "oom-risk" in texts[1]


def test_a_steady_process_costs_no_rows(tmp_path):
    """A process whose memory holds still is stored once, however long it runs."""
    ops = [("snapshot", snapshot(t, gpu(0, [proc(7, 0, 3 * GIB)]))) for t in range(500)]
    path = tmp_path / "s.gpuwatch.sqlite"
    write(path, ops, dense=False)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM process_change").fetchone()[0] == 1
        assert conn.execute("SELECT last_seen_s FROM process").fetchone()[0] == 499
    conn.close()
    with SessionReader(path) as r:
        (row,) = r.processes()
        t, used = r.process_series(row.id)
    assert t.tolist() == list(range(500)) and set(used.tolist()) == {3 * GIB}


def test_a_steady_writer_holds_nothing_more_after_each_commit(tmp_path):
    """What the writer keeps between commits: the processes listed now, nothing else
    that grows with the number of samples."""
    from gpuwatch.sessions.writer import SessionWriter

    w = SessionWriter(tmp_path / "s.gpuwatch.sqlite")
    procs = [proc(pid, 0, (pid % 3 + 1) * GIB) for pid in range(64)]
    for t in range(300):
        w.add_snapshot(snapshot(t, gpu(0, procs)))
        if t % 10 == 9:
            w.commit()
            assert (len(w._processes), w._dirty, w._left, w._new_processes) == (64, [], [],
                                                                                [])
    w.close(None)


def test_a_file_cut_short_reads_up_to_its_last_commit(tmp_path):
    """Killed mid-session: a process unchanged since long before the last commit still
    reads at every committed sample, and its end is the last committed sample."""
    ops = [("snapshot", snapshot(t, gpu(0, [proc(7, 0, GIB), proc(8, 0, t * GIB)])))
           for t in range(10)]
    ops.append(("commit", None))
    ops += [("snapshot", snapshot(t, gpu(0, [proc(7, 0, GIB)]))) for t in range(10, 14)]
    writers = []
    for layout in ("dense", "sparse"):
        (tmp_path / layout).mkdir()
        writers.append(write(tmp_path / layout / "s.sqlite", ops, dense=layout == "dense",
                             close=False))
    try:      # the writers hold rows not yet committed, as a killed recorder would
        dense, sparse = (reading(tmp_path / layout / "s.sqlite")
                         for layout in ("dense", "sparse"))
        dense["info"]["uuid"] = sparse["info"]["uuid"]
        assert sparse == dense
        steady = next(p for p in sparse["processes"] if p["pid"] == 7)
        assert steady["last_seen_s"] == 9 and sparse["info"]["ended_at_s"] is None
        assert sparse[f"process {steady['id']}"][0][1] == [float(t) for t in range(10)]
    finally:
        for w in writers:
            w.close(None)
    with SessionReader(tmp_path / "sparse" / "s.sqlite") as r:
        assert [p.last_seen_s for p in r.processes()] == [13, 9]


def test_a_value_too_big_to_store_reads_as_unknown_and_repeats_nothing(tmp_path):
    """SQLite holds signed 64-bit integers: a bigger byte count reads as unknown, and the
    rows of that sample before it are not written twice."""
    big = gpu(1, [proc(9, 1, 2**64)], used=2**64)
    ops = [("snapshot", snapshot(t, gpu(0, [proc(8, 0, GIB)]), big)) for t in range(3)]
    path = tmp_path / "s.gpuwatch.sqlite"
    write(path, ops, dense=False)
    with SessionReader(path) as r:
        assert r.gpu_series(0)["t_s"].tolist() == [0, 1, 2]
        assert r.gpu_series(1)["used_bytes"].tolist() == [pytest.approx(float("nan"),
                                                                         nan_ok=True)] * 3
        eight, nine = r.processes()
        assert r.process_series(eight.id)[0].tolist() == [0, 1, 2]
        assert nine.peak_used_bytes is None
        assert len(r.process_series(nine.id)[1]) == 3


def test_an_older_gpuwatch_refuses_a_sparse_file_rather_than_misread_it(tmp_path,
                                                                        monkeypatch):
    path = tmp_path / "s.gpuwatch.sqlite"
    write(path, hand_made(), dense=False)
    monkeypatch.setattr(schema, "SCHEMA_VERSION", 1)     # what a version-1 reader checks
    with pytest.raises(SessionFileError, match=r"newer gpuwatch \(session schema 2; this "
                                               r"version reads up to 1\)"):
        SessionReader(path)


def test_a_damaged_sample_number_is_named(tmp_path):
    path = tmp_path / "s.gpuwatch.sqlite"
    write(path, hand_made(), dense=False)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE process_change SET sample = 1.5 WHERE rowid = 2")
    conn.close()
    with SessionReader(path) as r:
        broken = r._conn.execute("SELECT process_id FROM process_change WHERE rowid = 2"
                                 ).fetchone()[0]
        with pytest.raises(SessionFileError, match=r"process_change.sample in row 2"):
            r.process_series(broken)


# -- any sequence of samples ---------------------------------------------------------------

VALUES = st.sampled_from([None, 0, 1, GIB, GIB, 2 * GIB, 2**53 + 1, 2**63 - 1, 2**64])
KEYS = st.sampled_from([(11, 1.0), (11, 2.0), (11, None), (12, 1.0), (13, 5.0)])
STEPS = st.sampled_from([1.0, 1.0, 1.0, 0.5, 0.0001, 0.0, -3.0])


@st.composite
def samples(draw) -> list:
    ops, t = [], 0.0
    for _ in range(draw(st.integers(1, 14))):
        t += draw(STEPS)
        gpus = []
        for index in (0, 1):
            here = draw(st.sampled_from(["ok", "ok", "ok", "lost", "absent"]))
            if here == "absent":
                continue
            if here == "lost":
                gpus.append(gpu(index, state=GpuState.LOST))
                continue
            keys = draw(st.lists(KEYS, unique_by=lambda k: k, max_size=4))
            gpus.append(gpu(index, [proc(pid, index, draw(VALUES), started=started)
                                    for pid, started in keys]))
        ops.append(("snapshot", snapshot(t, *gpus)))
        if draw(st.booleans()):
            ops.append(("commit", None))
    return ops


@given(ops=samples())
def test_any_samples_read_as_they_were_written(ops):
    """Values changing, repeating, unknown or too big to store, processes leaving and
    coming back, GPUs lost or missing, time standing still or stepping back: the sparse
    file reads exactly as the dense one, and as the samples themselves say."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        dense, sparse = write_both(Path(tmp), ops)
        got = reading(sparse)
        assert got == reading(dense)
        assert reading(without_read_indexes(sparse, Path(tmp) / "bare.sqlite")) == got
    expected = listed_series(ops)
    processes = got["processes"]
    assert len(processes) == len(expected)
    for row, (key, series) in zip(processes, expected.items(), strict=True):
        assert (row["gpu"], row["pid"]) == key[:2]
        t, used = got[f"process {row['id']}"]
        assert list(zip(t[1], used[1], strict=True)) == series


def without_read_indexes(path, copy):
    """A copy of a closed session as one cut short would be: without the indexes built
    at close."""
    shutil.copyfile(path, copy)
    with sqlite3.connect(copy) as conn:
        for name in ("process_change_by_process", "gpu_sample_by_gpu"):
            conn.execute(f"DROP INDEX {name}")
    conn.close()
    return copy


def test_the_read_indexes_are_built_at_close_not_on_every_commit(tmp_path):
    """Kept up to date on each commit, the process index put every process's new row on
    a page of its own: the commit of a second wrote ~25 times the pages."""
    path = tmp_path / "s.gpuwatch.sqlite"
    ops = [("snapshot", snapshot(t, gpu(0, [proc(pid, 0, (t + pid) * GIB)
                                           for pid in range(8)]))) for t in range(5)]
    writer = write(path, [*ops, ("commit", None)], dense=False, close=False)

    def indexes() -> set[str]:
        with sqlite3.connect(path) as conn:
            names = {n for (n,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index'")}
        conn.close()
        return names

    try:
        assert indexes() == set()
        with SessionReader(path) as r:           # read while being recorded
            while_written = [r.process_series(p.id)[1].tolist() for p in r.processes()]
    finally:
        writer.close(None)
    assert indexes() == {"process_change_by_process", "gpu_sample_by_gpu"}
    with SessionReader(path) as r:
        assert [r.process_series(p.id)[1].tolist() for p in r.processes()] == while_written
    assert while_written[3] == [float((t + 3) * GIB) for t in range(5)]


def listed_series(ops: list) -> dict:
    """Per process (GPU, pid, start), in the order first seen: (t, bytes) at each
    snapshot that listed it, in time order as a reader gives them."""
    start = None
    out: dict = {}
    for kind, snap in ops:
        if kind != "snapshot":
            continue
        start = snap.timestamp_s if start is None else start
        t = round(snap.timestamp_s - start, 3)
        for g in snap.gpus:
            for p in g.processes:
                used = p.used_bytes
                stored = "nan" if used is None or used >= 2**63 else float(used)
                out.setdefault((g.index, p.pid, p.started_at_s), []).append((t, stored))
    return {key: sorted(series, key=lambda pair: pair[0]) for key, series in out.items()}

