"""Recording from the window: on by default, pause/resume, off, write failures, retention."""

from __future__ import annotations

import os
import sqlite3
import time

import pytest
from conftest import count_events, sample_at
from PySide6.QtCore import QEvent, QThreadPool
from PySide6.QtGui import QColor

from gpuwatch.core.units import format_bytes
from gpuwatch.sessions import paths
from gpuwatch.sessions.reader import SessionReader
from gpuwatch.ui.sessions import recording
from gpuwatch.ui.sessions.recording import RecordingController
from gpuwatch.ui.settings import Preferences, Settings
from gpuwatch.ui.widgets import theme


def feed_both(window, controller, backend, times) -> None:
    """What the app does: each batch goes to the window and to the recorder."""
    for t in times:
        batch = [sample_at(backend, t)]
        window.on_snapshots(batch)
        controller.on_snapshots(batch)


def test_records_by_default_and_the_reader_opens_it(make_window, scenario):
    assert Preferences().record_sessions is True
    window = make_window()
    rec = RecordingController(window, 1.0)
    assert rec.label.text() == "● Recording"
    feed_both(window, rec, scenario("workstation"), range(0, 30))
    assert rec.path is not None and rec.path.parent == paths.sessions_dir()
    rec._update_label()
    assert rec.label.text().startswith("● Recording · ")
    window.close()                         # the window's closing signal ends the session
    assert rec.state == "off" and rec.label.text() == "Not recording"
    with SessionReader(rec.path) as r:
        info = r.info()
        assert info.samples == 30
        assert info.ended_at_s is not None and info.duration_s == pytest.approx(29, abs=0.01)
        assert len(r.gpus()) == 2


@pytest.fixture
def sized_clock(monkeypatch):
    """([monotonic seconds], [the session file's size]) as the controller reads them."""
    clock, size = [100.0], [0]
    monkeypatch.setattr(recording.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(recording, "file_size", lambda path: size[0])
    return clock, size


def test_the_file_size_follows_the_samples_while_the_label_is_seen(
        make_window, scenario, qtbot, sized_clock):
    """The size is refreshed by the samples, every SIZE_REFRESH_MS at most, and not while
    the window is out of sight (no timer of its own wakes a window in the tray)."""
    clock, size = sized_clock
    size[0] = 5 * 1024 * 1024
    window = make_window()
    with qtbot.waitExposed(window):
        window.show()
    rec = RecordingController(window, 1.0)
    backend = scenario("workstation")

    def sample_later(seconds: float, t: float) -> str:
        clock[0] += seconds
        size[0] += 1024 * 1024
        feed_both(window, rec, backend, [t])
        return rec.label.text()

    first = sample_later(0, 0)
    assert first == f"● Recording · {format_bytes(size[0])}"
    assert sample_later(1.0, 1) == first                  # not yet due
    assert sample_later(1.0, 2) == f"● Recording · {format_bytes(size[0])}"
    window.hide()
    hidden = rec.label.text()
    assert sample_later(5.0, 3) == hidden                 # out of sight: left alone
    window.show()
    assert sample_later(1.0, 4) == f"● Recording · {format_bytes(size[0])}"
    window.showMinimized()
    minimised = rec.label.text()
    assert sample_later(5.0, 5) == minimised              # minimised: out of sight too
    rec.close()


def test_a_new_file_size_repaints_the_label_alone(make_window, scenario, qtbot,
                                                  sized_clock):
    """A size no wider than the room the label has asked for so far neither relays the
    status bar out nor repaints it at each refresh (a QLabel's setText did both: the bar
    and the window beneath it were painted again every refresh)."""
    clock, size = sized_clock
    size[0] = 900 * 1024
    window = make_window()
    with qtbot.waitExposed(window):
        window.show()
    rec = RecordingController(window, 1.0)
    backend = scenario("workstation")
    feed_both(window, rec, backend, [0])
    QThreadPool.globalInstance().waitForDone(5000)   # the retention sweep, and its message
    qtbot.wait(50)
    window.repaint()                       # whatever waited to be painted, painted now
    bar = window.statusBar()
    layout = count_events(QEvent.Type.LayoutRequest, bar)
    paints = count_events(QEvent.Type.Paint, bar, rec.label)
    for t, kib in enumerate((100, 512, 7), start=1):       # narrower than "900 KiB"
        clock[0] += 5.0
        size[0] = kib * 1024
        rec.on_snapshots([sample_at(backend, t)])
        assert rec.label.text() == f"● Recording · {format_bytes(size[0])}"
        qtbot.waitUntil(lambda n=t: paints.counts[rec.label] >= n, timeout=2000)
    qtbot.wait(50)
    # no layout pass of the bar, nor a paint of it per refresh (something else in the
    # window may still repaint it once meanwhile)
    assert layout.counts[bar] == 0 and paints.counts[bar] < 3
    rec.close()


def test_pause_and_resume(make_window, scenario, qtbot):
    window = make_window()
    rec = RecordingController(window, 1.0)
    backend = scenario("workstation")
    feed_both(window, rec, backend, range(0, 10))
    rec.pause_action.trigger()
    assert rec.paused and rec.label.text() == "Paused"
    feed_both(window, rec, backend, range(10, 20))
    assert window.samples == 20            # the window keeps sampling
    rec.toggle_pause()
    assert rec.label.text().startswith("● Recording")
    feed_both(window, rec, backend, range(20, 25))
    rec.close()
    with SessionReader(rec.path) as r:
        assert r.info().samples == 15
        kinds = [e.kind for e in r.events()]
    assert "recording-paused" in kinds and "recording-resumed" in kinds


def test_setting_off_records_nothing(make_window, scenario, settings_path):
    s = Settings(settings_path)
    prefs = s.preferences()
    prefs.record_sessions = False
    s.set_preferences(prefs)
    s.sync()
    window = make_window()
    assert window.prefs.record_sessions is False
    rec = RecordingController(window, 1.0)
    feed_both(window, rec, scenario("workstation"), range(0, 10))
    assert rec.label.text() == "Not recording"
    assert rec.path is None and paths.list_sessions() == []


def test_turning_the_setting_off_ends_the_session(make_window, scenario):
    window = make_window()
    rec = RecordingController(window, 1.0)
    backend = scenario("workstation")
    feed_both(window, rec, backend, range(0, 5))
    first = rec.path
    prefs = Preferences(**{**window.prefs.__dict__, "record_sessions": False})
    window.apply_preferences(prefs)
    assert rec.state == "off"
    with SessionReader(first) as r:
        assert r.info().ended_at_s is not None
    window.apply_preferences(Preferences(**{**prefs.__dict__, "record_sessions": True}))
    feed_both(window, rec, backend, range(5, 8))
    assert rec.path != first and rec.recording


def test_write_failure_is_shown_and_the_window_keeps_updating(make_window, scenario, qtbot):
    window = make_window()
    rec = RecordingController(window, 1.0)
    backend = scenario("workstation")
    feed_both(window, rec, backend, range(0, 3))
    assert rec.recorder is not None

    def broken(*_args):
        raise sqlite3.OperationalError("disk I/O error")

    rec.recorder._writer.add_snapshot = broken        # the disk goes away mid-session
    feed_both(window, rec, backend, range(3, 6))
    qtbot.waitUntil(lambda: rec.state == "failed", timeout=5000)
    assert "disk I/O error" in window.statusBar().full_message
    assert rec.label.text() == "Recording failed"
    feed_both(window, rec, backend, range(6, 10))
    assert window.samples == 10
    rec.close()


def test_unwritable_folder_is_shown_not_raised(make_window, scenario, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("GPUWATCH_DATA_DIR", str(blocker))
    window = make_window()
    rec = RecordingController(window, 1.0)
    feed_both(window, rec, scenario("workstation"), range(0, 3))
    assert rec.state == "failed" and "cannot be created" in window.statusBar().full_message
    assert window.samples == 3


def test_prune_on_start_keeps_the_current_session(make_window, scenario, qtbot):
    folder = paths.sessions_dir()
    folder.mkdir(parents=True)
    old = folder / f"session-old{paths.SUFFIX}"
    old.write_bytes(b"x" * 100)
    wal = folder / f"session-old{paths.SUFFIX}-wal"
    wal.write_bytes(b"x")
    ancient = time.time() - 90 * 86400
    os.utime(old, (ancient, ancient))
    os.utime(wal, (ancient, ancient))        # a fresh WAL would mean a live recording
    window = make_window()
    rec = RecordingController(window, 1.0)
    feed_both(window, rec, scenario("workstation"), range(0, 3))
    qtbot.waitUntil(lambda: not old.exists(), timeout=5000)
    assert not wal.exists()
    assert rec.path is not None and rec.path.exists()
    qtbot.waitUntil(lambda: "old session" in window.statusBar().full_message, timeout=5000)
    rec.close()


def test_ctrl_o_opens_the_browser_on_the_current_session(make_window, scenario, qtbot):
    window = make_window()
    rec = RecordingController(window, 1.0)
    feed_both(window, rec, scenario("workstation"), range(0, 3))
    assert rec.browse_action.shortcut().toString() == "Ctrl+O"
    menus = [a.text() for a in window.menuBar().actions()]
    assert menus.index("&Sessions") == menus.index("&Help") - 1
    rec.browse_action.trigger()
    browser = rec.browser
    assert browser is not None and browser.isVisible()
    qtbot.waitUntil(lambda: not browser.lister.loading, timeout=10000)
    assert [e.path for e in browser.model.entries] == [rec.path]
    assert browser.model.current == rec.path
    rec.close()


def test_the_window_advisor_hints_are_recorded(make_window, scenario):
    window = make_window()
    rec = RecordingController(window, 1.0)
    feed_both(window, rec, scenario("oom-ramp"), range(0, 240))
    rec.close()
    with SessionReader(rec.path) as r:
        hints = r.hints()
    assert hints and hints[0].gpu == 0


@pytest.mark.parametrize("first, then", [("dark", "light"), ("light", "dark")])
def test_the_recording_label_paints_the_themes_background(make_window, scenario, qtbot,
                                                           first, then) -> None:
    """It paints its own background (so it repaints alone): in the theme the window starts
    in, and in the one it switches to."""
    window = make_window()
    window.apply_preferences(Preferences(**{**vars(window.prefs), "theme": first}))
    rec = RecordingController(window, 1.0)       # as the app makes it: before the show
    with qtbot.waitExposed(window):
        window.show()
    feed_both(window, rec, scenario("workstation"), [0])
    for name in (first, then):
        window.apply_preferences(Preferences(**{**vars(window.prefs), "theme": name}))
        qtbot.wait(20)
        corner = rec.label.grab().toImage().pixelColor(1, 1)
        assert corner == QColor(theme.colors().window), name
    rec.close()
