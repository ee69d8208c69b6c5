"""A desktop of our own for a benchmark: Xvfb, a private D-Bus session bus and a tray.

The offscreen platform has no system tray, so there ``gui --tray`` starts minimised. To
measure the window as it lives in a tray (hidden, its icon registered over D-Bus), the
app runs on an X server of its own with the xcb platform, on a session bus where the
stand-in desktop of the tray test (``tests/ui/dbus_standin.py``) owns the
StatusNotifierWatcher and the notification server. Every call the stand-in receives is
counted, so a run can say how much D-Bus traffic the tray made.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
STANDIN = TESTS / "ui" / "dbus_standin.py"
sys.path.insert(0, str(TESTS))
from desktop_support import start_display_and_bus, stop_children  # noqa: E402

READY_S = 15.0


class Desktop:
    """The environment that reaches the X server and the bus; the stand-in's calls."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.calls: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()

    def count(self, line: str) -> None:
        try:
            call = json.loads(line).get("call", "?")
        except (ValueError, AttributeError):
            return
        with self._lock:
            self.calls[str(call)] += 1

    def calls_now(self) -> collections.Counter[str]:
        with self._lock:
            return collections.Counter(self.calls)


def missing_tools() -> list[str]:
    return [tool for tool in ("Xvfb", "dbus-daemon") if shutil.which(tool) is None]


@contextmanager
def desktop_session(tmp: str) -> Iterator[Desktop]:
    """Start Xvfb, a session bus and the stand-in tray; stop them on leaving."""
    missing = missing_tools()
    if missing:
        raise SystemExit(f"a tray run needs {' and '.join(missing)} "
                         "(apt install xvfb dbus)")
    children: list[subprocess.Popen] = []
    try:
        started = start_display_and_bus(children)
        if started is None:
            raise SystemExit("Xvfb or dbus-daemon did not start")
        display, address = started
        runtime = Path(tmp) / "runtime"
        runtime.mkdir(mode=0o700, exist_ok=True)
        env = {"DISPLAY": f":{display}", "DBUS_SESSION_BUS_ADDRESS": address,
               "XDG_RUNTIME_DIR": str(runtime), "QT_QPA_PLATFORM": "xcb"}
        desktop = Desktop(env)
        standin_env = {k: v for k, v in os.environ.items()
                       if not k.startswith(("QT_", "DBUS_"))}
        standin_env.update(env, QT_QPA_PLATFORM="offscreen", PYTHONUNBUFFERED="1")
        standin = subprocess.Popen([sys.executable, str(STANDIN)], env=standin_env,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True, bufsize=1)
        children.append(standin)
        ready = threading.Event()

        def read() -> None:
            assert standin.stdout is not None
            for line in standin.stdout:
                if '"ready"' in line:
                    ready.set()
                desktop.count(line)

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(READY_S):
            raise SystemExit("the stand-in tray did not start")
        yield desktop
    finally:
        stop_children(children)

