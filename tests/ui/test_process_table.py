"""The process table: sorting, filtering, following churn, and what may be terminated."""

from __future__ import annotations

from PySide6.QtCore import Qt

from gpuwatch.core.snapshot import ProcessSample
from gpuwatch.ui.live.process_model import COMMAND, MEMORY, NAME, PID
from tests.ui.conftest import feed, sample_at


def _column(model, col: int) -> list[str]:
    return [model.data(model.index(r, col)) for r in range(model.rowCount())]


def test_sorts_by_any_column(make_window, scenario) -> None:
    window = make_window()
    feed(window, scenario("workstation"), [600])
    model = window.processes.model
    table = window.processes.table
    table.sortByColumn(PID, Qt.SortOrder.AscendingOrder)
    pids = [int(p) for p in _column(model, PID)]
    assert pids == sorted(pids) and len(pids) == 5
    table.sortByColumn(MEMORY, Qt.SortOrder.DescendingOrder)
    used = [model.sample(k).used_bytes for k in model.keys]
    assert used == sorted(used, reverse=True)
    table.sortByColumn(NAME, Qt.SortOrder.AscendingOrder)
    names = _column(model, NAME)
    assert names == sorted(names, key=str.lower)


def test_filters_by_text(make_window, scenario) -> None:
    window = make_window()
    feed(window, scenario("workstation"), [600])
    model = window.processes.model
    window.processes.filter.setText("firefox")
    assert _column(model, NAME) == ["firefox"]
    window.processes.filter.setText("alice python3")         # every word must match
    names = sorted(_column(model, NAME))          # a launcher's row names its script too
    assert len(names) == 2 and all(n.startswith("python3 · ") for n in names)
    assert len(set(names)) == 2
    window.processes.filter.setText("gpt2-medium")             # the command line counts
    assert len(_column(model, COMMAND)) == 1
    window.processes.filter.setText("")
    assert model.rowCount() == 5
    assert "5 processes" in window.processes.count.text()


def test_follows_churn_without_stale_rows(make_window, scenario) -> None:
    window = make_window()
    backend = scenario("churn")
    duration = backend.scenario_duration_s
    model = window.processes.model
    seen_sizes = set()
    for i in range(0, 120):
        t = i * duration / 120
        snap = sample_at(backend, t)
        window.on_snapshot(snap)
        expected = {(p.gpu_index, p.pid) for p in snap.processes}
        assert set(model.live_keys) == expected
        assert len(model.live_keys) == len(expected) == model.live_rows
        exited = model.keys[model.live_rows:]             # the ones that left, greyed
        assert model.rowCount() == len(expected) + len(exited)
        assert not expected & set(exited)
        assert all(model.is_exited(k) for k in exited)
        seen_sizes.add(len(expected))
    assert len(seen_sizes) > 2          # processes really came and went
    assert model.exited_rows > 0


def test_selection_follows_its_process_through_resorting(make_window, scenario) -> None:
    window = make_window()
    backend = scenario("workstation")
    feed(window, backend, [600])
    assert window.processes.select((1, 2391))
    feed(window, backend, range(601, 640))
    assert window.processes.selected_key() == (1, 2391)
    assert "pid 2391" in window.processes.detail_title.text()


def test_terminate_only_own_real_processes(make_window) -> None:
    panel = make_window().processes
    mine = ProcessSample(pid=10, gpu_index=0, used_bytes=1, user=panel.user)
    theirs = ProcessSample(pid=11, gpu_index=0, used_bytes=1, user="someone-else")
    assert panel.can_terminate(mine)[0]
    ok, why = panel.can_terminate(theirs)
    assert not ok and "your own" in why
    panel.simulated = True
    ok, why = panel.can_terminate(mine)
    assert not ok and "Simulated" in why


def test_copy_command_line(make_window, scenario) -> None:
    from PySide6.QtGui import QGuiApplication

    window = make_window()
    feed(window, scenario("workstation"), [600])
    window.processes.select((0, 48211))
    window.processes.copy_command_line()
    assert QGuiApplication.clipboard().text().startswith("python3 train.py --model gpt2-medium")
