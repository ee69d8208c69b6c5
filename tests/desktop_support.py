"""An X server and a D-Bus session bus of our own, for the tray's real path.

Used by the tray's end-to-end test and by ``benchmarks/desktop_session.py``.
"""

from __future__ import annotations

import os
import subprocess


def start_display_and_bus(children: list[subprocess.Popen]) -> tuple[str, str] | None:
    """Start Xvfb and a session bus (appended to ``children``, which the caller stops
    with :func:`stop_children`); (display number, bus address), None if one failed."""
    read_fd, write_fd = os.pipe()
    children.append(subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_fd), "-nolisten", "tcp", "-screen", "0",
         "1600x1000x24"], pass_fds=(write_fd,), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL))
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        display = pipe.readline().strip()
    if not display:
        return None
    bus = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    children.append(bus)
    assert bus.stdout is not None
    address = bus.stdout.readline().strip()
    return (display, address) if address else None


def stop_children(children: list[subprocess.Popen], wait_s: float = 5.0) -> None:
    """Terminate ``children``, the last started first; kill any that lingers past
    ``wait_s``."""
    for child in reversed(children):
        if child.poll() is None:
            child.terminate()
            try:
                child.wait(wait_s)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
