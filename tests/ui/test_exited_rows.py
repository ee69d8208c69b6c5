"""Processes that left their GPU stay in the table, greyed, for ten minutes: after the
live rows, out of the cards, not killable, and the likely-oom hint selects them. A
zombie (listed by the driver, gone from the host) is not one of them: it holds memory.
A window without any GPU says what to check where the cards would be."""

from __future__ import annotations

import dataclasses
import time

import pytest
from PySide6.QtCore import Qt
from sim_support import make_scenario, sim_backend

from gpuwatch.core.snapshot import BackendKind, HostStatus, ProcessSample, Snapshot
from gpuwatch.telemetry.clock import SteppedClock
from gpuwatch.telemetry.nvml import NvmlBackend
from gpuwatch.telemetry.nvml.backend import NO_GPUS_WARNING
from gpuwatch.telemetry.sim.host import ScenarioHost
from gpuwatch.telemetry.sim.library import SimulatedNvml
from gpuwatch.ui.live.exited_rows import EXITED_ROW_KEEP_S
from gpuwatch.ui.live.process_model import (
    COLUMNS,
    CPU,
    EXITED,
    HOLDING,
    LIVE,
    MEMORY,
    NAME,
    PID,
    RUNNING,
    ProcessModel,
)
from tests.ui.conftest import feed, sample_at

OOM_PID = 71310
GiB = 1024**3


def _with(snap: Snapshot, procs: list[ProcessSample], dt: float = 0.0) -> Snapshot:
    gpus = tuple(dataclasses.replace(g, processes=tuple(p for p in procs
                                                        if p.gpu_index == g.index))
                 for g in snap.gpus)
    return dataclasses.replace(snap, gpus=gpus, timestamp_s=snap.timestamp_s + dt)


def _texts(model: ProcessModel, row: int) -> list[str]:
    return [model.data(model.index(row, c)) for c in range(len(COLUMNS))]


def _states(model: ProcessModel) -> list[str]:
    return [model.row_state(r) for r in range(model.rowCount())]


def test_an_oom_death_stays_greyed_and_the_hint_selects_it(make_window, scenario) -> None:
    window = make_window()
    backend = scenario("oom-ramp")
    feed(window, backend, range(0, 490, 2))
    model, panel = window.processes.model, window.processes
    assert model.keys == [(0, OOM_PID)] and _states(model) == [LIVE]
    held = model.sample((0, OOM_PID)).used_bytes
    snap = feed(window, backend, range(490, 560, 2))       # it died at 492 s
    assert not snap.processes
    assert model.keys == [(0, OOM_PID)] and _states(model) == [EXITED]
    texts = _texts(model, 0)
    died = snap.timestamp_s - (558 - 492)                   # the first sample without it
    assert texts[PID] == "71310" and texts[NAME] == "python · finetune.py"
    assert texts[MEMORY] == "39.5 GiB" and held > 39 * GiB   # its last known memory
    assert texts[RUNNING] == "exited " + time.strftime("%H:%M:%S", time.localtime(died))
    assert texts[CPU] == "—"
    assert model.data(model.index(0, MEMORY), Qt.ItemDataRole.FontRole).italic()
    assert "holds nothing now" in model.data(model.index(0, MEMORY),
                                             Qt.ItemDataRole.ToolTipRole)
    assert panel.count.text() == "0 processes · 1 exited"
    # it holds nothing: the card shows no process and no segment for it
    card = window.cards.cards[0]
    assert "No processes" in card.legend.text()
    assert not any("71310" in t for t in card.bar.segment_tooltips())
    # the likely-oom hint names it; activating the hint selects the greyed row
    (hint,) = window.advisor.hints
    assert hint.code == "likely-oom" and (hint.gpu, hint.pid) == (0, OOM_PID)
    assert panel.selected_key() is None
    window.advisor.hint_activated.emit(hint)
    assert panel.selected_key() == (0, OOM_PID)
    assert "exited" in panel.detail_title.text()
    # nothing to terminate: the action is off and the check says why
    assert not panel.terminate_action.isEnabled()
    ok, why = panel.can_terminate(model.sample((0, OOM_PID)))
    assert not ok and "exited" in why


def test_terminate_comes_back_for_a_running_row(make_window, scenario) -> None:
    window = make_window()
    backend = scenario("churn")
    feed(window, backend, range(0, 200))
    model, panel = window.processes.model, window.processes
    assert model.exited_rows and model.live_rows
    assert panel.select(model.keys[-1])
    assert not panel.terminate_action.isEnabled()
    assert panel.select(model.keys[0])
    assert panel.terminate_action.isEnabled()


def test_exited_rows_follow_the_live_ones_in_any_order(scenario) -> None:
    snap = sample_at(scenario("workstation"), 600)
    procs = sorted(snap.processes, key=lambda p: p.pid)
    model = ProcessModel()
    model.update_snapshot(snap)
    gone = [procs[0], procs[3]]
    model.update_snapshot(_with(snap, [p for p in procs if p not in gone], dt=1.0))
    exited = {(p.gpu_index, p.pid) for p in gone}
    for col in (PID, MEMORY, NAME, RUNNING):
        for order in (Qt.SortOrder.AscendingOrder, Qt.SortOrder.DescendingOrder):
            model.sort(col, order)
            assert set(model.keys[-2:]) == exited, (col, order)
            assert _states(model) == [LIVE] * 3 + [EXITED] * 2
    model.sort(PID, Qt.SortOrder.AscendingOrder)
    assert [k[1] for k in model.keys[-2:]] == sorted(p.pid for p in gone)
    model.sort(PID, Qt.SortOrder.DescendingOrder)
    assert [k[1] for k in model.keys[-2:]] == sorted((p.pid for p in gone), reverse=True)
    model.set_filter(str(gone[1].pid))              # the filter sees exited rows too
    assert model.keys == [(gone[1].gpu_index, gone[1].pid)] and _states(model) == [EXITED]
    model.set_filter("")
    assert model.rowCount() == 5 and model.exited_rows == 2


def test_a_death_inside_a_burst_is_not_missed(make_window, scenario) -> None:
    window = make_window()
    backend = scenario("oom-ramp")
    feed(window, backend, range(0, 480, 4))
    burst = [sample_at(backend, t) for t in range(480, 501)]       # one wake-up, 21 samples
    window.on_snapshots(burst)
    model = window.processes.model
    assert model.keys == [(0, OOM_PID)] and model.is_exited((0, OOM_PID))
    died = next(s for s in burst if not s.processes).timestamp_s
    assert model.exited.rows[(0, OOM_PID)].exited_at_s == died
    last = next(s for s in reversed(burst) if s.processes)
    assert model.sample((0, OOM_PID)) == last.processes[0]           # its last sample


def test_exited_rows_go_after_ten_minutes_or_when_the_pid_returns(scenario) -> None:
    snap = sample_at(scenario("workstation"), 600)
    procs = list(snap.processes)
    first, second = procs[0], procs[1]
    model = ProcessModel()
    model.update_snapshot(snap)
    model.update_snapshot(_with(snap, procs[1:], dt=1.0))            # first leaves
    model.update_snapshot(_with(snap, procs[2:], dt=60.0))           # second leaves
    assert model.exited_rows == 2
    model.update_snapshot(_with(snap, procs[2:], dt=EXITED_ROW_KEEP_S))   # 9 min 59 s
    assert model.exited_rows == 2
    model.update_snapshot(_with(snap, procs[2:], dt=1.0 + EXITED_ROW_KEEP_S))
    assert model.exited_rows == 1 and model.keys[-1] == (second.gpu_index, second.pid)
    model.update_snapshot(_with(snap, [second, *procs[2:]], dt=2.0 + EXITED_ROW_KEEP_S))
    assert model.exited_rows == 0                                     # back: it had not gone
    assert set(model.keys) == {(p.gpu_index, p.pid) for p in procs[1:]}
    assert model.sample((first.gpu_index, first.pid)) is None


def test_the_same_processes_cost_no_bookkeeping(scenario, monkeypatch) -> None:
    snap = sample_at(scenario("workstation"), 600)
    procs = sorted(snap.processes, key=lambda p: p.pid)
    model = ProcessModel()
    model.sort(PID, Qt.SortOrder.AscendingOrder)
    model.update_snapshot(snap)
    model.update_snapshot(_with(snap, procs[1:], dt=1.0))
    calls: list[str] = []
    real_observe, real_sorted = model.exited.observe, model._sorted_exited
    monkeypatch.setattr(model.exited, "observe",
                        lambda *a: calls.append("observe") or real_observe(*a))
    monkeypatch.setattr(model, "_sorted_exited",
                        lambda *a: calls.append("sort") or real_sorted(*a))
    seen: list[tuple[int, int]] = []
    model.dataChanged.connect(lambda a, b, *_: seen.append((a.row(), a.column())))
    model.layoutChanged.connect(lambda *_: seen.append((-1, -1)))
    exited_before = _texts(model, 4)
    bigger = procs[2]._replace(used_bytes=(procs[2].used_bytes or 0) + GiB)
    model.update_snapshot(_with(snap, [procs[1], bigger, *procs[3:]], dt=1.0))
    assert calls == []                         # the same processes: no exit bookkeeping
    assert seen == [(1, MEMORY)]               # only the cell that changed; no layout pass
    assert _texts(model, 4) == exited_before
    model.update_snapshot(_with(snap, [bigger, *procs[3:]], dt=1.0))
    assert calls == ["observe", "sort"]        # a process left: bookkeeping, once


def test_a_lost_gpu_or_an_unread_list_exits_nobody(scenario) -> None:
    """Their processes stay, greyed, "unknown — GPU lost" (the driver's reason in the
    tooltip); when the list is read again, the process is running again or has
    exited."""
    lost = make_scenario(faults=[{"start_s": 100, "gpu": 1, "call": "*",
                                  "error": "GPU_IS_LOST"}])
    unread = make_scenario(faults=[
        {"start_s": 100, "gpu": 0, "call": c, "error": "TIMEOUT"}
        for c in ("nvmlDeviceGetComputeRunningProcesses",
                  "nvmlDeviceGetGraphicsRunningProcesses")])
    for s in (lost, unread):
        backend = sim_backend(s, at_s=50).open()
        try:
            model = ProcessModel()
            model.update_snapshot(backend.sample())
            assert model.rowCount() == 2
            backend.clock.set_elapsed(150)
            snap = backend.sample()
            model.update_snapshot(snap)
            assert len(snap.processes) == 1
            assert model.exited_rows == 1 and model.rowCount() == 2
            assert _states(model) == [LIVE, EXITED]
            texts = _texts(model, 1)
            why = "GPU lost" if s is lost else "process list unreadable"
            assert texts[RUNNING] == f"unknown — {why}"
            key = model.keys[1]
            tip = model.data(model.index(1, RUNNING), Qt.ItemDataRole.ToolTipRole)
            assert "still runs is unknown" in tip and "driver says" in tip
            assert model.exited.rows[key].unseen == why
        finally:
            backend.close()


def test_a_zombie_holding_memory_is_live_and_marked(make_window) -> None:
    window = make_window()
    s = make_scenario(processes=[
        {"pid": 4100, "gpu": 0, "name": "python", "memory": "22GiB"},
        {"pid": 4101, "gpu": 0, "name": "python", "memory": "3GiB"},
    ])

    class Host(ScenarioHost):
        def lookup(self, pids):
            return super().lookup(set(pids) - {4100})

    clock = SteppedClock(50)
    lib = SimulatedNvml(s, clock)
    backend = NvmlBackend(lib, Host(lib, clock), clock, kind=BackendKind.SIMULATED,
                          scenario="test", pcie_thread=False).open()
    try:
        window.on_snapshot(backend.sample())
    finally:
        backend.close()
    model = window.processes.model
    row = model.row_of((0, 4100))
    assert model.sample((0, 4100)).host_status is HostStatus.EXITED
    assert model.row_state(row) == HOLDING and model.live_rows == 2
    assert model.exited_rows == 0 and not model.is_exited((0, 4100))
    assert model.data(model.index(row, NAME)) == "(exited, still holding memory)"
    assert model.data(model.index(row, MEMORY), Qt.ItemDataRole.FontRole) is None
    assert window.processes.count.text() == "2 processes"


def test_the_table_paints_exited_and_holding_rows(make_window, scenario, qtbot) -> None:
    window = make_window()
    with qtbot.waitExposed(window):
        window.show()
    feed(window, scenario("churn"), range(0, 120))
    model = window.processes.model
    assert LIVE in _states(model) and EXITED in _states(model)
    table = window.processes.table
    table.viewport().repaint()        # the painting path runs with both kinds of rows
    assert model.row_state(model.rowCount() - 1) == EXITED


@pytest.fixture
def no_gpus_backend():
    clock = SteppedClock(50)
    lib = SimulatedNvml(make_scenario(), clock)
    lib.nvmlDeviceGetCount = lambda: 0
    backend = NvmlBackend(lib, ScenarioHost(lib, clock), clock, kind=BackendKind.SIMULATED,
                          scenario="test", pcie_thread=False).open()
    yield backend
    backend.close()


def test_no_gpus_says_what_to_check_where_the_cards_would_be(make_window,
                                                             no_gpus_backend) -> None:
    window = make_window()
    assert window.cards.notice.isHidden()
    window.on_snapshot(no_gpus_backend.sample())
    notice = window.cards.notice
    assert not notice.isHidden() and notice.text() == NO_GPUS_WARNING
    assert not window.cards.cards
    room = notice.heightForWidth(max(400, window.cards.width() - 16))
    assert window.cards.minimumHeight() >= room > 0                # the sentence fits
    window.on_snapshot(no_gpus_backend.sample())              # unchanged: left alone
    assert notice.text() == NO_GPUS_WARNING


def test_gpus_present_show_no_notice(make_window, scenario) -> None:
    window = make_window()
    feed(window, scenario("workstation"), [600])
    assert window.cards.notice.isHidden() and window.cards.cards


def test_exited_rows_are_bounded_in_number(scenario) -> None:
    """A box that runs a short job a second keeps the latest exits, not ten minutes'
    worth of every one."""
    from gpuwatch.ui.live.exited_rows import ExitedProcesses

    snap = sample_at(scenario("workstation"), 600)
    exited = ExitedProcesses(limit=50)
    before: dict = {}
    for k in range(120):
        p = ProcessSample(pid=30000 + k, gpu_index=0, used_bytes=GiB, name="pytest")
        now = {(0, p.pid): p}
        exited.observe(before, now, _with(snap, [p], dt=k))
        before = now
    assert len(exited.rows) == 50
    assert min(pid for _, pid in exited.rows) == 30000 + 119 - 50   # the latest exits
