"""The process table announces only the cells that changed while its rows keep their order
(and, when shown, only those of the rows in view); a row's texts are made again only
where its figures changed."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st
from PySide6.QtCore import Qt

from gpuwatch.core.snapshot import HostStatus, ProcessSample, Snapshot
from gpuwatch.core.units import format_bytes, format_duration
from gpuwatch.ui.live.process_model import (
    COLUMNS,
    MEMORY,
    PID,
    RUNNING,
    ProcessModel,
)
from gpuwatch.ui.live.process_texts import next_row_texts, row_texts, running_step
from tests.ui.conftest import sample_at


def _changes(model: ProcessModel, snap: Snapshot) -> list[tuple[int, int, int, int]]:
    seen: list[tuple[int, int, int, int]] = []
    model.dataChanged.connect(
        lambda a, b, *_: seen.append((a.row(), a.column(), b.row(), b.column())))
    model.layoutChanged.connect(lambda *_: seen.append((-1, -1, -1, -1)))
    model.update_snapshot(snap)
    return seen


def _with(snap: Snapshot, procs: list[ProcessSample], dt: float = 0.0) -> Snapshot:
    gpus = tuple(dataclasses.replace(g, processes=tuple(p for p in procs
                                                        if p.gpu_index == g.index))
                 for g in snap.gpus)
    return dataclasses.replace(snap, gpus=gpus, timestamp_s=snap.timestamp_s + dt)


def _texts(model: ProcessModel) -> list[list[str]]:
    return [[model.data(model.index(r, c)) for c in range(len(COLUMNS))]
            for r in range(model.rowCount())]


def test_only_changed_cells_are_announced(scenario) -> None:
    snap = sample_at(scenario("workstation"), 600)
    model = ProcessModel()
    model.sort(PID, Qt.SortOrder.AscendingOrder)
    model.update_snapshot(snap)
    assert _changes(model, snap) == []                        # nothing changed, nothing said
    procs = sorted(snap.processes, key=lambda p: p.pid)
    bigger = procs[2]._replace(used_bytes=(procs[2].used_bytes or 0) + 2**30)
    changed = _with(snap, [*procs[:2], bigger, *procs[3:]])
    assert _changes(model, changed) == [(2, MEMORY, 2, MEMORY)]
    fresh = ProcessModel()
    fresh.sort(PID, Qt.SortOrder.AscendingOrder)
    fresh.update_snapshot(changed)
    assert _texts(model) == _texts(fresh)                     # what is shown is up to date


def test_rows_that_move_repaint_everything(scenario) -> None:
    snap = sample_at(scenario("workstation"), 600)
    model = ProcessModel()                                    # sorted by memory, largest first
    model.update_snapshot(snap)
    last = model.sample(model.keys[-1])
    assert last is not None
    top = last._replace(used_bytes=2**45)
    others = [p for p in snap.processes if p.pid != last.pid or p.gpu_index != last.gpu_index]
    seen = _changes(model, _with(snap, [*others, top]))
    everything = (0, 0, model.rowCount() - 1, len(COLUMNS) - 1)
    assert everything in seen and model.keys[0] == (top.gpu_index, top.pid)
    assert (-1, -1, -1, -1) not in seen       # same rows: no layout pass for a re-sort


def test_a_resort_moves_the_selection_and_current_row(scenario) -> None:
    from PySide6.QtCore import QItemSelectionModel

    snap = sample_at(scenario("workstation"), 600)
    model = ProcessModel()
    model.update_snapshot(snap)
    selection = QItemSelectionModel(model)
    key = model.keys[-1]
    row = model.row_of(key)
    selection.setCurrentIndex(model.index(row, 2), QItemSelectionModel.SelectionFlag.NoUpdate)
    selection.select(model.index(row, 0), QItemSelectionModel.SelectionFlag.ClearAndSelect
                     | QItemSelectionModel.SelectionFlag.Rows)
    last = model.sample(key)
    assert last is not None
    others = [p for p in snap.processes if (p.gpu_index, p.pid) != key]
    model.update_snapshot(_with(snap, [*others, last._replace(used_bytes=2**45)]))
    assert model.row_of(key) == 0
    assert [i.row() for i in selection.selectedRows()] == [0]
    assert len(selection.selectedIndexes()) == len(COLUMNS)
    assert (selection.currentIndex().row(), selection.currentIndex().column()) == (0, 2)


def test_running_time_is_announced_when_its_text_changes(scenario) -> None:
    snap = sample_at(scenario("workstation"), 600)
    model = ProcessModel()
    model.sort(PID, Qt.SortOrder.AscendingOrder)
    model.update_snapshot(snap)
    seen = _changes(model, _with(snap, list(snap.processes), dt=1.0))
    running = {(a, b) for a, col, b, _ in seen if col == RUNNING}
    shown = [model.data(model.index(r, RUNNING)) for r in range(model.rowCount())]
    assert all(col == RUNNING for _, col, _, _ in seen)
    assert running or all(text == "n/a" for text in shown)


def test_running_step_matches_the_text() -> None:
    times = [0.4, 0.6, 59.4, 59.6, 3599.4, 3599.6, 3659.6, 86399.4, 86399.6, 90000.0, 200000.0]
    times += [t + d for t in (100.0, 4000.0, 100000.0) for d in (0.0, 0.5, 1.0, 59.0, 60.0)]
    for a in times:
        for b in times:
            same_text = format_duration(a) == format_duration(b)
            assert same_text == (running_step(0.0, a) == running_step(0.0, b)), (a, b)


def test_process_plot_waits_for_its_tab(make_window, scenario, qtbot) -> None:
    from tests.ui.conftest import feed

    window = make_window()
    backend = scenario("workstation")
    feed(window, backend, range(590, 600))
    with qtbot.waitExposed(window):
        window.show()
    window.processes.select(window.processes.model.keys[0])
    window.tabs.setCurrentIndex(1)
    feed(window, backend, range(600, 610))
    assert window.processes._detail_stale
    window.tabs.setCurrentIndex(0)
    assert not window.processes._detail_stale
    x, _ = window.processes.detail_curve.getData()
    assert x is not None and x[-1] == window.history.latest.timestamp_s


_maybe_bytes = st.none() | st.integers(0, 2**41)
_sample = st.builds(
    ProcessSample, pid=st.just(4242), gpu_index=st.just(1), used_bytes=_maybe_bytes,
    name=st.none() | st.sampled_from(["python3", "pytest"]),
    cmdline=st.sampled_from([(), ("python3", "train.py"), ("python3", "train.py", "--lr 3")]),
    user=st.none() | st.sampled_from(["alice", "bob"]),
    container=st.none() | st.just("docker:8c1f0e2d7a44"),
    cpu_percent=st.none() | st.floats(0, 800, allow_nan=False),
    rss_bytes=_maybe_bytes, started_at_s=st.none() | st.floats(1.7e9, 1.7e9 + 90000),
    host_status=st.sampled_from(list(HostStatus)))


@given(old=_sample, new=_sample, budget=st.none() | st.integers(0, 2**40),
       probed=st.booleans(), dt=st.floats(0, 7200), units=st.sampled_from(["iec", "si"]))
def test_texts_made_from_the_last_ones_are_the_texts(old, new, budget, probed, dt,
                                                     units) -> None:
    """Only the figures that changed are formatted again; the row reads as if all were."""
    now = 1.7e9 + 1000
    texts = row_texts(old, units, now, budget, probed)
    assert next_row_texts(old, texts, new, units, now + dt) == \
        row_texts(new, units, now + dt, budget, probed)


def test_rows_out_of_view_are_painted_fresh_not_announced(make_window, qtbot) -> None:
    """A shown table announces the changed cells of the rows in view only; a row
    scrolled into view shows its current figures all the same."""
    window = make_window()
    window.resize(1280, 800)
    with qtbot.waitExposed(window):
        window.show()
    model, table = window.processes.model, window.processes.table
    model.sort(PID, Qt.SortOrder.AscendingOrder)
    procs = [ProcessSample(pid=1000 + k, gpu_index=0, used_bytes=2**30, name=f"worker{k}")
             for k in range(200)]
    snap = sample_at(_workstation(), 600)
    model.update_snapshot(_with(snap, procs))
    first, last = model.rows_in_view()
    assert 0 == first < last < 150          # a screenful, not every row
    grown = [p._replace(used_bytes=2**31) for p in procs]
    seen = _changes(model, _with(snap, grown, dt=0.5))
    announced = {row for a, col, b, _ in seen for row in range(a, b + 1)}
    assert announced == set(range(first, last + 1))
    table.scrollToBottom()
    qtbot.waitUntil(lambda: model.rows_in_view()[1] == 199)
    assert model.data(model.index(199, MEMORY)) == format_bytes(2**31, model.units)


def test_sorted_by_running_time_the_clock_moves_no_row(scenario) -> None:
    snap = sample_at(scenario("workstation"), 600)
    model = ProcessModel()
    model.sort(RUNNING, Qt.SortOrder.DescendingOrder)
    model.update_snapshot(snap)
    order = model.keys
    seen = _changes(model, _with(snap, list(snap.processes), dt=30.0))
    everything = (0, 0, model.rowCount() - 1, len(COLUMNS) - 1)
    assert model.keys == order and everything not in seen
    assert all(col == RUNNING for _, col, _, _ in seen)


def _workstation():
    from gpuwatch.telemetry.source import SourceOptions, open_backend

    return open_backend(SourceOptions(demo="workstation", time_scale="max"))
