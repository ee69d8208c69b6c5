"""Tray and notifications, offscreen: the rate limits, the icon, the banner, close-to-tray.

Offscreen there is no system tray; ``TrayController(window, available=True)`` builds the
tray anyway so its logic can be checked. The real desktop path (D-Bus) is
``test_tray_e2e.py``.
"""

from __future__ import annotations

import pytest
from PySide6.QtGui import QColor

from gpuwatch.core.hints import Hint, HintEvent, HintEventKind, Severity
from gpuwatch.ui.notifications import Notifier, RateLimiter, RateLimits, notification_for
from gpuwatch.ui.tray import ICON_COLORS, TrayController, icon_level, tooltip_text, tray_icon
from tests.ui.conftest import feed

W, C, INFO = Severity.WARNING, Severity.CRITICAL, Severity.INFO
A, B = ("oom-risk", 0, None), ("memory-leak", 1, 42)


@pytest.fixture(autouse=True)
def _quit_on_last_window(qapp):
    """A tray clears the application's quit-on-last-window flag; give it back."""
    yield
    qapp.setQuitOnLastWindowClosed(True)


@pytest.mark.parametrize(("calls", "expected"), [
    # (key, severity, wall second) -> allowed?
    ([(A, INFO, 0)], [False]),                                   # info never notifies
    ([(A, W, 0), (A, W, 10)], [True, False]),                 # once per key…
    ([(A, W, 0), (A, W, 599), (A, W, 600)], [True, False, True]),   # …per 10 min
    ([(A, W, 0), (A, C, 5)], [True, True]),                   # got worse: at once
    ([(A, C, 0), (A, W, 5), (A, C, 6)], [True, False, False]),
    ([(A, W, 0), (B, W, 1), (("x", 2, None), W, 2), (("y", 3, None), C, 3)],
     [True, True, True, False]),                              # 3 per minute overall
    ([(A, W, 0), (B, W, 1), (("x", 2, None), W, 2), (("y", 3, None), C, 60)],
     [True, True, True, True]),                               # the minute has passed
    ([(A, W, 0), (A, W, 30), (B, W, 31)], [True, False, True]),   # refusals don't count
])
def test_rate_limits(calls, expected) -> None:
    limiter = RateLimiter(RateLimits(per_key_s=600, burst=3, burst_window_s=60))
    assert [limiter.allow(k, s, t) for k, s, t in calls] == expected


def test_pause_suppresses_for_an_hour() -> None:
    limiter = RateLimiter()
    limiter.pause(100.0)
    assert limiter.refusal(A, C, 100.0) == "paused"
    assert limiter.refusal(A, C, 3699.0) == "paused"
    assert limiter.refusal(A, C, 3700.0) is None
    limiter.pause(4000.0)
    limiter.resume()
    assert limiter.allow(A, W, 4001.0)


def _hint(severity: Severity, key=A, title="GPU 0 memory full in ~2 min") -> Hint:
    code, gpu, pid = key
    return Hint(code, severity, gpu, pid, title, ("free 7.2 GiB of 40.0 GiB",), (),
                process_name="python" if pid else None)


def _event(kind: HintEventKind, severity: Severity, key=A) -> HintEvent:
    return HintEvent(kind, _hint(severity, key), 0.0)


def test_notifier_shows_opened_and_worse_within_limits() -> None:
    now = [0.0]
    shown = []
    notifier = Notifier(shown.append, clock=lambda: now[0])
    notifier.handle([_event(HintEventKind.OPENED, W), _event(HintEventKind.OPENED, INFO, B)])
    now[0] = 30
    notifier.handle([_event(HintEventKind.UPDATED, W)])            # evidence only
    notifier.handle([_event(HintEventKind.UPDATED, C)])            # worse
    notifier.handle([_event(HintEventKind.CLOSED, C)])
    assert [(n.key, n.severity) for n in shown] == [(A, W), (A, C)]
    assert shown[-1].summary == "Critical: GPU 0 memory full in ~2 min"
    assert notifier.last == shown[-1]
    notifier.enabled = False
    now[0] = 10_000
    assert notifier.handle([_event(HintEventKind.OPENED, C, B)]) == []
    notifier.enabled = True
    notifier.pause()
    assert notifier.handle([_event(HintEventKind.OPENED, C, B)]) == []
    assert notifier.held[-1][1] == "paused"


def test_notification_text() -> None:
    n = notification_for(_hint(W, B, "pid 42 leaks"))
    assert n.summary == "Warning: pid 42 leaks"
    assert n.body.splitlines() == ["GPU 1 · pid 42 · python", "free 7.2 GiB of 40.0 GiB"]


@pytest.mark.parametrize(("severities", "level"), [
    ([], "ok"), ([INFO], "info"), ([INFO, W], "warning"), ([W, C, INFO], "critical")])
def test_icon_colour_follows_the_worst_severity(qapp, severities, level) -> None:
    hints = [_hint(s, (f"c{i}", 0, None)) for i, s in enumerate(severities)]
    assert icon_level(hints) == level
    image = tray_icon(level).pixmap(64, 64).toImage()
    assert not image.isNull()
    rim = image.pixelColor(12, 32)                 # the chip's coloured edge
    want = QColor(ICON_COLORS[level])
    assert abs(rim.red() - want.red()) + abs(rim.green() - want.green()) \
        + abs(rim.blue() - want.blue()) < 30


def test_the_tray_icon_follows_the_window_hints(make_window, scenario) -> None:
    window = make_window()
    tray = TrayController(window, available=True)
    backend = scenario("oom-ramp")
    feed(window, backend, range(0, 100, 2))
    assert tray.level == "ok"
    assert tray.tray.icon().cacheKey() == tray_icon("ok").cacheKey()
    feed(window, backend, range(100, 176, 2))      # the warning opens at 2 min 49 s
    assert tray.level == "warning"
    feed(window, backend, range(176, 320, 2))
    assert tray.level == "critical"
    assert tray.tray.icon().cacheKey() == tray_icon("critical").cacheKey()
    tip = tooltip_text(window, window.hint_source.active)
    assert tip.splitlines()[0] == "gpuwatch — 1 alert"
    assert tip.splitlines()[1].startswith("GPU 0 A100-SXM4-40GB: ")
    assert "critical: GPU 0 memory full" in tip


def test_without_a_tray_the_banner_carries_the_hints(make_window, scenario) -> None:
    window = make_window()
    tray = TrayController(window, available=False)
    assert tray.tray is None and not tray.delivers
    feed(window, scenario("oom-ramp"), range(0, 200, 2))
    assert window.hint_banner.enabled and not window.hint_banner.isHidden()
    assert "memory full" in window.hint_banner.label.text()


def test_with_a_tray_notifications_replace_the_banner(make_window, scenario, qtbot) -> None:
    window = make_window()
    tray = TrayController(window, available=True)
    sent = []
    tray.tray.showMessage = lambda *args: sent.append(args)
    backend = scenario("oom-ramp")
    feed(window, backend, range(0, 320, 2))
    assert window.hint_banner.isHidden()
    assert [a[0].split(":")[0] for a in sent] == ["Warning", "Critical"]
    summary, body, icon, _ = sent[-1]
    assert summary.startswith("Critical: GPU 0 memory full in")
    assert body.startswith("GPU 0\nfree ") and "→ Save a checkpoint now" in body
    assert icon == icon.Critical
    tray.pause_alerts()                            # paused: the banner stands in
    assert not window.hint_banner.isHidden() and tray.pause_action.isChecked()
    assert "paused until" in tray.pause_action.text()
    tray.resume_alerts()
    assert window.hint_banner.isHidden() and not tray.pause_action.isChecked()
    # a click on the bubble: the window comes forward at that hint
    window.tabs.setCurrentIndex(0)
    tray.message_clicked()
    assert window.isVisible() and window.tabs.currentWidget() is window.advisor
    assert window.advisor.selected_key() == ("oom-risk", 0, None)
    assert window.processes.selected_key() == (0, 71310)


def test_notifications_off_in_the_settings(make_window, scenario) -> None:
    window = make_window()
    tray = TrayController(window, available=True)
    sent = []
    tray.tray.showMessage = lambda *args: sent.append(args)
    prefs = window.prefs
    window.apply_preferences(type(prefs)(**{**prefs.__dict__, "notifications": False}))
    assert window.settings.preferences().notifications is False
    feed(window, scenario("oom-ramp"), range(0, 320, 2))
    assert sent == [] and not window.hint_banner.isHidden()


def test_closing_keeps_running_in_the_tray_and_quit_leaves(make_window, qtbot) -> None:
    window = make_window()
    tray = TrayController(window, available=True)
    closed = []
    window.closing.connect(lambda: closed.append(True))
    window.show()
    window.close()
    assert not window.isVisible() and closed == []
    tray.show_window()
    assert window.isVisible()
    window.prefs.close_to_tray = False
    window.close()
    assert closed == [True]
    window.prefs.close_to_tray = True
    window.show()
    window.quit()                                  # File > Quit or the tray's Quit
    assert closed == [True, True] and not window.isVisible()


def test_closing_without_a_tray_closes(make_window, qtbot) -> None:
    window = make_window()
    TrayController(window, available=False)
    closed = []
    window.closing.connect(lambda: closed.append(True))
    window.show()
    window.close()
    assert closed == [True]
