"""An X server and a D-Bus session bus of our own, for the window's and the tray's real
path, and the app run on them as a child whose output lines are read as they come.

Used by the end-to-end tests under ``tests/ui`` and by ``benchmarks/desktop_session.py``.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the real `gpuwatch` command, logging what it does (INFO, "name: message") to stderr
_LOGGED_APP = ("import logging, sys\n"
               "logging.basicConfig(level=logging.INFO, stream=sys.stderr,\n"
               "                    format='%(name)s: %(message)s')\n"
               "from gpuwatch.cli import main\n"
               "sys.exit(main(sys.argv[1:]))\n")


def logged_gpuwatch(*args: str) -> list[str]:
    """The command line of ``gpuwatch ARGS`` with its log on stderr, for :class:`Child`."""
    return [sys.executable, "-c", _LOGGED_APP, *args]


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
        stop_children([self.proc])
