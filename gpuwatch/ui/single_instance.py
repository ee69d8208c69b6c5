"""One window per user: a second launch hands over to the running one and exits.

The first window listens on a local socket; a second ``gpuwatch`` (``gui``) connects,
says what it was asked for (``show`` brings the window forward; ``tray``, from a login
autostart, asks nothing) and exits, so there is never a second sampler or a second
recorded session. ``snapshot``, ``record`` and ``gui --screenshot`` never take part.

On Wayland a window may come forward only with an activation token from the launcher
(xdg-activation): the second launch passes its ``XDG_ACTIVATION_TOKEN`` along, and the
running window activates with it (Qt >= 6.5 reads that variable when it activates).

The socket lives in ``$XDG_RUNTIME_DIR`` (private to the user), or in the temporary
folder with the user id in its name. A socket left behind by a crash answers nobody, so
it is removed and taken over; a lock file around the check keeps two launches started
at the same moment from both taking over.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path

from PySide6.QtCore import QLockFile, QObject, Signal, Slot
from PySide6.QtNetwork import QLocalServer, QLocalSocket

log = logging.getLogger(__name__)

MESSAGES = ("show", "tray")
MAX_TOKEN = 512          # an activation token is an opaque short string
CONNECT_MS = 500         # a live instance accepts at once; a stale socket refuses at once
ANSWER_MS = 5000         # how long a second launch waits for the running one to answer
LOCK_MS = 10000


def valid_token(token: str) -> bool:
    """An activation token as compositors issue them: short, printable, no spaces."""
    return len(token) <= MAX_TOKEN and all(ch.isprintable() and not ch.isspace()
                                           for ch in token)


def parse_request(line: str) -> tuple[str, str] | None:
    """``"show"``, ``"tray"`` or either with `` TOKEN``: (message, token), else None."""
    message, _, token = line.strip().partition(" ")
    if message not in MESSAGES or not valid_token(token):
        return None
    return message, token


def server_name(settings_path: str) -> str:
    """The socket's path for this user and settings file: one window per settings
    store (a window on a scratch configuration never hands over to the user's)."""
    digest = hashlib.sha256(os.path.abspath(settings_path).encode()).hexdigest()[:12]
    key = f"gpuwatch-{digest}"
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        return str(Path(runtime) / f"{key}.sock")
    return str(Path(tempfile.gettempdir()) / f"{key}-{os.getuid()}.sock")


class SingleInstance(QObject):
    """Claims the instance, or hands the launch to the one that holds it."""

    activated = Signal(str, str)     # a second launch's message ("show" or "tray") and
                                     # its activation token ("" if none)

    def __init__(self, name: str, parent: QObject | None = None):
        super().__init__(parent)
        self.name = name
        self.server: QLocalServer | None = None
        self.answer = ""             # what the running instance said (a second launch)

    def claim(self, message: str = "show", token: str = "") -> bool:
        """True: this process is now the instance. False: another one runs and was told
        ``message`` (with ``token``, the launcher's activation token, if any). Where the
        socket cannot be made, the window runs anyway (True)."""
        if message not in MESSAGES:
            raise ValueError(f"unknown single-instance message {message!r}")
        if not valid_token(token):
            token = ""                   # not a token a compositor issued
        lock = QLockFile(self.name + ".lock")
        lock.setStaleLockTime(LOCK_MS * 3)
        locked = lock.tryLock(LOCK_MS)
        try:
            if self._hand_over(f"{message} {token}".strip()):
                return False
            QLocalServer.removeServer(self.name)      # a crashed instance's socket
            server = QLocalServer(self)
            server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
            if not server.listen(self.name):
                log.warning("single instance: cannot listen on %s (%s); a second launch "
                            "will open a second window", self.name, server.errorString())
                return True
            server.newConnection.connect(self._accept)
            self.server = server
            log.info("single instance: listening on %s (pid %d)", self.name, os.getpid())
            return True
        finally:
            if locked:
                lock.unlock()

    def _hand_over(self, message: str) -> bool:
        socket = QLocalSocket()
        socket.connectToServer(self.name)
        if not socket.waitForConnected(CONNECT_MS):
            return False
        socket.write(f"{message}\n".encode())
        socket.flush()
        socket.waitForBytesWritten(ANSWER_MS)
        if socket.waitForReadyRead(ANSWER_MS):
            self.answer = bytes(socket.readAll().data()).decode("utf-8", "replace").strip()
        socket.disconnectFromServer()
        log.info("single instance: handed over to the running window (%s)",
                 self.answer or "no answer")
        return True

    def _accept(self) -> None:
        assert self.server is not None
        while (socket := self.server.nextPendingConnection()) is not None:
            # bound slots, not lambdas: Qt drops them when this object goes
            socket.readyRead.connect(self._read)
            socket.disconnected.connect(socket.deleteLater)

    @Slot()
    def _read(self) -> None:
        socket = self.sender()
        if not isinstance(socket, QLocalSocket):
            return
        if not socket.canReadLine():
            if socket.bytesAvailable() > 64:        # not one of ours: no line ever comes
                socket.abort()
            return
        line = bytes(socket.readLine().data()).decode("utf-8", "replace")
        request = parse_request(line)
        if request is None:
            log.warning("single instance: ignored an unknown request %r", line[:40])
            socket.abort()
            return
        message, token = request
        log.info("single instance: a second launch asked for %r%s", message,
                 " with an activation token" if token else "")
        socket.write(b"ok\n")
        socket.flush()
        self.activated.emit(message, token)

    def close(self) -> None:
        if self.server is not None:
            self.server.close()          # removes the socket file
            self.server.deleteLater()
            self.server = None
