"""The session browser: listing, bad files, delete, export off the GUI thread, replay."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from conftest import sample_at
from PySide6.QtWidgets import QMessageBox

from gpuwatch.advisor import Advisor
from gpuwatch.core.history import History
from gpuwatch.sessions import export as export_module
from gpuwatch.sessions import paths
from gpuwatch.sessions.recorder import Recorder
from gpuwatch.ui.sessions.export_dialog import ExportDialog, ExportRunner
from gpuwatch.ui.sessions.session_browser import SessionBrowser, delete_session, read_entry
from gpuwatch.ui.sessions.session_replay import ReplayWindow, load_replay, pick_window


def record(backend, seconds: int, name: str | None = None, advise: bool = False) -> Path:
    """A session of ``seconds`` samples; ``advise``: with the advisor's hint events."""
    path = paths.sessions_dir() / name if name else paths.new_session_path()
    rec = Recorder(path, 1.0)
    history, advisor = History(), Advisor()
    for t in range(seconds):
        snap = sample_at(backend, float(t))
        rec.add_snapshot(snap)
        if advise:
            history.append(snap)
            for event in advisor.update(history):
                rec.add_hint_event(event)
    rec.close(backend.clock.now_s())
    return path


@pytest.fixture
def browser(qtbot):
    b = SessionBrowser()
    qtbot.addWidget(b)
    return b


def loaded(browser: SessionBrowser, qtbot) -> SessionBrowser:
    browser.reload()
    qtbot.waitUntil(lambda: not browser.lister.loading, timeout=10000)
    return browser


def test_lists_sessions_with_their_figures(browser, qtbot, scenario):
    ddp = record(scenario("multi-gpu-ddp"), 120, f"a-ddp{paths.SUFFIX}")
    ws = record(scenario("workstation"), 30, f"b-ws{paths.SUFFIX}")
    loaded(browser, qtbot)
    entries = {e.path: e for e in browser.model.entries}
    assert set(entries) == {ddp, ws}
    e = entries[ddp]
    assert (e.gpus, e.duration_s, e.error) == (8, pytest.approx(119), None)
    assert e.peak_bytes and e.peak_bytes > 1 << 30 and e.size_bytes > 0
    row = browser.model.entries.index(e)
    texts = [browser.model.text(e, c) for c in range(7)]
    assert texts[0] == ddp.name and texts[2] == "1 min 59 s" and texts[3] == "8"
    assert texts[4].endswith("GiB") and texts[5] == str(e.hints)
    assert browser.model.index(row, 3).data() == "8"
    assert "2 sessions" in browser.summary.text()


def test_a_corrupted_session_gets_an_error_row(browser, qtbot, scenario):
    folder = paths.sessions_dir()
    folder.mkdir(parents=True)
    bad = folder / f"broken{paths.SUFFIX}"
    bad.write_bytes(b"this is not a database" * 100)
    good = record(scenario("workstation"), 5)
    loaded(browser, qtbot)
    entries = {e.path: e for e in browser.model.entries}
    assert entries[good].error is None
    assert "not a gpuwatch session" in entries[bad].error
    assert browser.model.text(entries[bad], 1).startswith("unreadable:")
    browser.select_path(bad)
    assert not browser.open_button.isEnabled() and not browser.export_button.isEnabled()
    assert browser.delete_button.isEnabled()
    with pytest.raises(Exception):     # noqa: B017 - the replay loader says why, no crash
        load_replay(bad)


def test_delete_removes_the_files(browser, qtbot, scenario, monkeypatch):
    path = record(scenario("workstation"), 5)
    Path(f"{path}-wal").write_bytes(b"")
    Path(f"{path}-shm").write_bytes(b"")
    loaded(browser, qtbot)
    browser.select_path(path)
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.No)
    assert not browser.delete_selected()
    assert path.exists()
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    assert browser.delete_selected()
    assert not any(Path(f"{path}{s}").exists() for s in ("", "-wal", "-shm"))
    assert browser.model.entries == []


def test_the_session_being_recorded_cannot_be_deleted(qtbot, scenario, monkeypatch):
    path = record(scenario("workstation"), 3)
    b = SessionBrowser(current=lambda: path)
    qtbot.addWidget(b)
    loaded(b, qtbot)
    b.select_path(path)
    assert not b.delete_button.isEnabled()
    assert "(recording)" in b.model.text(b.model.entries[0], 0)
    monkeypatch.setattr(QMessageBox, "information", lambda *a, **k: None)
    assert not b.delete_selected(confirm=False) and path.exists()


@pytest.mark.parametrize("fmt", ["html", "pdf"])
def test_export_runs_off_the_gui_thread(browser, qtbot, scenario, tmp_path, monkeypatch, fmt):
    path = record(scenario("oom-ramp"), 120)
    threads: list[threading.Thread] = []
    original = export_module.export

    def spy(*args, **kwargs):
        threads.append(threading.current_thread())
        return original(*args, **kwargs)

    monkeypatch.setattr("gpuwatch.ui.sessions.export_dialog.export", spy)
    out = tmp_path / f"report.{fmt}"
    fractions: list[float] = []
    shown = ExportRunner._progress       # connected before the job starts: sees every step

    def progress(self, fraction: float, text: str) -> None:
        fractions.append(fraction)
        shown(self, fraction, text)

    monkeypatch.setattr(ExportRunner, "_progress", progress)
    runner = ExportRunner(browser)
    job = runner.start(path, fmt, out)
    qtbot.waitUntil(lambda: job.done, timeout=60000)
    assert job.error is None and job.result == out and out.stat().st_size > 1000
    assert threads and threads[0] is not threading.main_thread()
    assert fractions and fractions[-1] == 1.0
    assert runner.dialog is None and runner.message is not None
    assert "Wrote" in runner.message.text()
    runner.message.close()


def test_export_failure_is_a_message_not_a_traceback(browser, qtbot, scenario, tmp_path):
    path = record(scenario("workstation"), 5)
    runner = ExportRunner(browser)
    job = runner.start(path, "html", tmp_path / "missing-folder" / "r.html")
    qtbot.waitUntil(lambda: job.done, timeout=20000)
    assert job.result is None and "does not exist" in job.error
    assert runner.message is not None and runner.message.windowTitle() == "Export failed"
    assert "Traceback" not in runner.message.text()
    runner.message.close()


def test_export_dialog_follows_the_format(qtbot, tmp_path):
    d = ExportDialog(Path("/x/session-1.gpuwatch.sqlite"), folder=tmp_path)
    qtbot.addWidget(d)
    assert d.chosen() == ("html", tmp_path / "session-1-report.html")
    d.format.setCurrentIndex(d.format.findData("csv"))
    assert d.chosen() == ("csv", tmp_path / "session-1-report.zip")


def test_replay_loads_into_the_plots_and_the_slider_moves_the_cursor(qtbot, scenario):
    path = record(scenario("multi-gpu-ddp"), 900)
    window = ReplayWindow(path)
    qtbot.addWidget(window)
    window.show()
    with qtbot.waitSignal(window.loaded, timeout=20000):
        window.start()
    data = window.data
    assert data is not None and len(data.history.gpus) == 8
    assert len(data.history.gpu(0)) == 900 and data.history.processes
    assert "Replaying" in window.banner_label.text() and path.name in window.banner_label.text()
    assert window.plots.window_s == pick_window(899) == 3600
    assert window.plots.strips_shown                        # eight GPUs: memory as rows
    x, y = window.plots._bw_curves[0].getData()
    assert x is not None and len(x) > 10 and y.max() > 1     # GB/s drawn
    assert window.cursor_s == pytest.approx(data.end_s)
    window.slider.setValue(300)
    assert window.cursor_s == pytest.approx(data.start_s + 300)
    assert window.cursor_lines[0].value() == pytest.approx(data.start_s + 300)
    assert "GPU 0" in window.values_label.text()
    window.plots.set_window(60)                    # a short window follows the cursor
    (x0, x1), _ = window.plots.memory.getViewBox().viewRange()
    assert x1 == pytest.approx(data.start_s + 300, abs=1) and x1 - x0 == pytest.approx(60, abs=1)
    (b0, b1), _ = window.plots.bandwidth.getViewBox().viewRange()   # the shown plot follows
    assert (b0, b1) == pytest.approx((x0, x1), abs=1e-6)
    assert window.plots.strips.x_range == pytest.approx((x0, x1), abs=1e-6)


def test_replay_of_a_bad_file_says_why(qtbot, tmp_path):
    bad = tmp_path / f"bad{paths.SUFFIX}"
    bad.write_bytes(b"\0" * 4096)
    window = ReplayWindow(bad)
    qtbot.addWidget(window)
    with qtbot.waitSignal(window.failed, timeout=10000) as blocker:
        window.start()
    assert "not a gpuwatch session" in blocker.args[0] or "cannot" in blocker.args[0]
    assert window.data is None


def test_open_from_the_browser(browser, qtbot, scenario):
    path = record(scenario("workstation"), 20)
    loaded(browser, qtbot)
    browser.select_path(path)
    window = browser.open_selected()
    assert isinstance(window, ReplayWindow)
    qtbot.waitUntil(lambda: window.data is not None, timeout=10000)
    window.close()


def test_read_entry_and_delete_helpers(scenario):
    path = record(scenario("workstation"), 3)
    assert read_entry(path).gpus == 2
    delete_session(path)
    assert not path.exists()


def test_a_long_session_is_painted_from_an_overview_first(qtbot, scenario, monkeypatch):
    monkeypatch.setattr("gpuwatch.sessions.replay.OVERVIEW_ABOVE", 100)
    path = record(scenario("oom-ramp"), 600)
    window = ReplayWindow(path)
    qtbot.addWidget(window)
    shown: list[bool] = []
    window.first_shown.connect(lambda: shown.append(window.data.overview))
    with qtbot.waitSignal(window.loaded, timeout=20000):
        window.start()
    assert shown == [True] and not window.data.overview
    assert len(window.data.history.gpu(0)) == 600
    assert "still loading" not in window.banner_label.text()
    full_peak = window.data.history.gpu(0).column("used_bytes").max()
    from gpuwatch.ui.sessions.session_replay import load_overview
    overview = load_overview(path, buckets=50)
    assert len(overview.history.gpu(0)) <= 102
    assert overview.history.gpu(0).column("used_bytes").max() == full_peak   # peaks survive


def test_replay_fits_the_screen_uses_its_width_keys_and_marks_the_crash(qtbot, scenario):
    """At most the screen's free area; a short session across the whole plot; keys 1–4
    pick the window as in the live window; an out-of-memory death is a marked line."""
    from PySide6.QtCore import Qt

    path = record(scenario("oom-ramp"), 540, advise=True)   # the process dies at 502 s
    window = ReplayWindow(path)
    qtbot.addWidget(window)
    free = window.screen().availableGeometry()
    assert window.width() <= free.width() and window.height() <= free.height()
    window.show()
    with qtbot.waitSignal(window.loaded, timeout=20000):
        window.start()
    data = window.data
    assert data is not None
    (x0, x1), _ = window.plots.memory.getViewBox().viewRange()
    assert x0 == pytest.approx(data.start_s, abs=1) and x1 == pytest.approx(data.end_s, abs=1)
    marks = [m for m in window.death_marks if getattr(m, "label", None) is not None]
    assert marks and "OOM · pid 71310" in marks[0].label.toPlainText()
    assert data.start_s + 490 <= marks[0].value() <= data.start_s + 520
    assert "not closed" not in window.banner_label.text()     # it was closed
    window.activateWindow()
    qtbot.keyClick(window, Qt.Key.Key_1)
    assert window.plots.window_s == 60


def test_a_session_still_recording_is_not_called_a_crash(qtbot, scenario):
    import dataclasses

    path = record(scenario("workstation"), 5)
    banners = []
    for recording in (True, False):
        window = ReplayWindow(path, recording=recording)
        qtbot.addWidget(window)
        with qtbot.waitSignal(window.loaded, timeout=20000):
            window.start()
        data = window.data
        assert data is not None
        window.data = None                    # shown again, as a session with no end yet
        window.show_data(dataclasses.replace(
            data, info=dataclasses.replace(data.info, ended_at_s=None)))
        banners.append(window.banner_label.text())
    assert "still being recorded" in banners[0] and "crash" not in banners[0]
    assert "not closed (a crash or kill)" in banners[1]
