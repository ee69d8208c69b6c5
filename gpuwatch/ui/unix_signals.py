"""SIGTERM, SIGHUP and SIGINT end the window the way closing it does.

Logout, ``systemctl stop``, ``timeout`` and Ctrl-C in the launching terminal send these.
Python runs its signal handlers only when the interpreter gets control, which Qt's event
loop may not give it for a long time. So the handler only notes the signal; the C-level
handler also writes the signal's number to a socket (``signal.set_wakeup_fd``), and a
``QSocketNotifier`` on the other end wakes the event loop, which quits. The usual
shutdown then runs: the sampler stops and the recording is finished (end time written,
the WAL folded into the session file). No timer polls for signals, so this costs nothing
while nothing arrives.
"""

from __future__ import annotations

import contextlib
import signal
import socket
from collections.abc import Callable, Iterable

from PySide6.QtCore import QObject, QSocketNotifier

QUIT_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


class SignalQuit(QObject):
    """While alive, the given signals call ``on_signal(signum)`` on the GUI thread."""

    def __init__(self, on_signal: Callable[[int], None],
                 signals: Iterable[signal.Signals] = QUIT_SIGNALS,
                 parent: QObject | None = None):
        super().__init__(parent)
        self._on_signal = on_signal
        self._read, self._write = socket.socketpair()
        for end in (self._read, self._write):
            end.setblocking(False)
        self._previous_fd = signal.set_wakeup_fd(self._write.fileno(),
                                                 warn_on_full_buffer=False)
        self._previous = {sig: signal.signal(sig, _note) for sig in signals}
        self._notifier = QSocketNotifier(self._read.fileno(), QSocketNotifier.Type.Read, self)
        self._notifier.activated.connect(self._drain)

    def _drain(self) -> None:
        try:
            data = self._read.recv(64)
        except (BlockingIOError, InterruptedError):
            return
        for signum in data:
            if signum in self._previous:
                self._on_signal(signum)

    def restore(self) -> None:
        """Put back the handlers and wake-up fd that were there before."""
        self._notifier.setEnabled(False)
        for sig, handler in self._previous.items():
            with contextlib.suppress(TypeError, ValueError):
                signal.signal(sig, handler)
        self._previous = {}
        with contextlib.suppress(ValueError):
            signal.set_wakeup_fd(self._previous_fd)
        self._read.close()
        self._write.close()


def _note(signum: int, frame: object) -> None:
    """Installed so the default action (terminate) does not run; the wake-up fd does the
    work."""
