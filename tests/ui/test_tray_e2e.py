"""The tray's real path: Xvfb, a private D-Bus session bus, and a stand-in desktop.

``gpuwatch gui --tray --demo oom-ramp`` runs as a child process on the X server with
the xcb platform. Qt finds a StatusNotifierWatcher on the bus (``dbus_standin.py``), so
it has a system tray; the advisor's critical ``oom-risk`` hint must arrive at the
stand-in as a ``Notify`` call with its summary and urgency 2, and the stand-in's
``ActionInvoked(id, "default")`` must come back as ``messageClicked``: the window
shows itself at that hint (the app logs it). Skips where Xvfb or dbus-daemon is missing.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from desktop_support import Child, logged_gpuwatch

pytestmark = [
    pytest.mark.xvfb, pytest.mark.dbus,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="needs Xvfb (apt install xvfb)"),
    pytest.mark.skipif(shutil.which("dbus-daemon") is None,
                       reason="needs dbus-daemon (apt install dbus)"),
]

HERE = Path(__file__).resolve().parent
STANDIN = HERE / "dbus_standin.py"
APP_ARGS = ["gui", "--tray", "--demo", "oom-ramp", "--time-scale", "40", "--interval", "2"]
# 40x: the hint turns critical ~7 s in and closes ~13 s in (the run dies at 492 s), which
# leaves the click several seconds to find it open
TIMEOUT_S = 30.0


def test_a_critical_hint_is_a_desktop_notification_and_a_click_opens_it(desktop) -> None:
    standin = Child([sys.executable, str(STANDIN)], {**desktop, "QT_QPA_PLATFORM": "offscreen"},
                    stdin=True)
    app = None
    try:
        standin.wait_for(lambda line: '"ready"' in line, 10, "stand-in ready")
        app = Child(logged_gpuwatch(*APP_ARGS),
                    {**desktop, "QT_QPA_PLATFORM": "xcb"}, merge=True)
        calls: list[dict] = []

        def critical_notify(line: str) -> bool:
            call = json.loads(line)
            calls.append(call)
            return call.get("call") == "Notify" and call.get("urgency") == 2

        notify = json.loads(standin.wait_for(critical_notify, TIMEOUT_S, "critical Notify"))
        assert any(c.get("call") == "RegisterStatusNotifierItem" for c in calls), calls
        assert notify["summary"].startswith("Critical: GPU 0 memory full in"), notify
        assert notify["body"].startswith("GPU 0\nfree "), notify
        assert "default" in notify["actions"]
        warnings = [c for c in calls if c.get("call") == "Notify" and c.get("urgency") == 1]
        # the warning before it, once (a sampler starved of CPU at 40x can first see the
        # climb when it is already critical: then there is none to send)
        assert [c["summary"].split(":")[0] for c in warnings] in (["Warning"], [])
        # the app says it sent exactly that
        sent = app.wait_for(lambda line: line.startswith("gpuwatch.ui.tray: notify critical"),
                            10, "the app's notify log line")
        assert sent.endswith(notify["summary"]), (sent, notify)

        assert standin.proc.stdin is not None
        standin.proc.stdin.write(f"click {notify['id']}\n")
        standin.proc.stdin.flush()
        standin.wait_for(lambda line: '"clicked"' in line, 5, "the click")
        clicked = app.wait_for(
            lambda line: line.startswith("gpuwatch.ui.tray: notification clicked"), 10,
            "messageClicked in the app")
        assert "at oom-risk/0/None" in clicked and "visible=True" in clicked, clicked
        assert "tab=Advisor" in clicked and "hint selected" in clicked, clicked
        assert "process (0, 71310)" in clicked, clicked
    finally:
        if app is not None:
            app.stop()
        standin.stop()
