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
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from desktop_support import start_display_and_bus, stop_children

pytestmark = [
    pytest.mark.xvfb, pytest.mark.dbus,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="needs Xvfb (apt install xvfb)"),
    pytest.mark.skipif(shutil.which("dbus-daemon") is None,
                       reason="needs dbus-daemon (apt install dbus)"),
]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
STANDIN = HERE / "dbus_standin.py"
# the app logs what the tray does; the command is the real `gpuwatch gui`
APP = ("import logging, sys\n"
       "logging.basicConfig(level=logging.INFO, stream=sys.stderr,\n"
       "                    format='%(name)s: %(message)s')\n"
       "from gpuwatch.cli import main\n"
       "sys.exit(main(sys.argv[1:]))\n")
APP_ARGS = ["gui", "--tray", "--demo", "oom-ramp", "--time-scale", "40", "--interval", "2"]
# 40x: the hint turns critical ~7 s in and closes ~13 s in (the run dies at 492 s), which
# leaves the click several seconds to find it open
TIMEOUT_S = 30.0


class Child:
    """A child process whose output lines are collected by a thread."""

    def __init__(self, args: list[str], env: dict[str, str], stdin: bool = False,
                 merge: bool = False):
        self.proc = subprocess.Popen(
            args, env=env, text=True, bufsize=1, cwd=ROOT,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merge else subprocess.PIPE)
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        streams = [self.proc.stdout] + ([] if merge else [self.proc.stderr])
        for stream in streams:
            threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream) -> None:
        for line in stream:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, match: Callable[[str], bool], timeout_s: float, what: str) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                if self.proc.poll() is not None and self.lines.empty():
                    break
                continue
            self.seen.append(line)
            if match(line):
                return line
        tail = "\n".join(self.seen[-40:])
        raise AssertionError(f"no {what} within {timeout_s:g} s (exit {self.proc.poll()}); "
                             f"last lines:\n{tail}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


@pytest.fixture
def desktop(tmp_path: Path) -> Iterator[dict[str, str]]:
    """An X server and a session bus of our own; yields the environment that reaches them."""
    children: list[subprocess.Popen] = []
    try:
        started = start_display_and_bus(children)
        if started is None:
            pytest.skip("Xvfb or dbus-daemon did not start")
        display, address = started
        runtime = tmp_path / "runtime"
        runtime.mkdir(mode=0o700)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("QT_", "DBUS_", "WAYLAND_", "XDG_"))}
        env.update(DISPLAY=f":{display}", DBUS_SESSION_BUS_ADDRESS=address,
                   XDG_RUNTIME_DIR=str(runtime), XDG_CONFIG_HOME=str(tmp_path / "config"),
                   XDG_STATE_HOME=str(tmp_path / "state"),
                   GPUWATCH_DATA_DIR=str(tmp_path / "data"), PYTHONUNBUFFERED="1")
        yield env
    finally:
        stop_children(children)


def test_a_critical_hint_is_a_desktop_notification_and_a_click_opens_it(desktop) -> None:
    standin = Child([sys.executable, str(STANDIN)], {**desktop, "QT_QPA_PLATFORM": "offscreen"},
                    stdin=True)
    app = None
    try:
        standin.wait_for(lambda line: '"ready"' in line, 10, "stand-in ready")
        app = Child([sys.executable, "-c", APP, *APP_ARGS],
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
        assert [c["summary"].split(":")[0] for c in warnings] == ["Warning"]
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
