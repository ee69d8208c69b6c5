"""A stand-in desktop for the tray test: a StatusNotifierWatcher and a notification server.

Run it on a private session bus (``DBUS_SESSION_BUS_ADDRESS``). It owns
``org.kde.StatusNotifierWatcher`` (so Qt believes a system tray exists) and
``org.freedesktop.Notifications`` (so ``QSystemTrayIcon.showMessage`` arrives as a
``Notify`` call). Every call it receives is printed to stdout as one JSON line; a line
``click ID`` on stdin emits ``ActionInvoked(ID, "default")``, which Qt turns into
``QSystemTrayIcon.messageClicked``. ``ready`` is printed once both names are owned.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from PySide6.QtCore import (
    ClassInfo,
    Property,
    QCoreApplication,
    QObject,
    QSocketNotifier,
    Signal,
    Slot,
)
from PySide6.QtDBus import QDBusConnection, QDBusMessage

WATCHER = "org.kde.StatusNotifierWatcher"
NOTIFICATIONS = "org.freedesktop.Notifications"
NOTIFICATIONS_PATH = "/org/freedesktop/Notifications"


def report(**fields: Any) -> None:
    print(json.dumps(fields, default=str), flush=True)


@ClassInfo({"D-Bus Interface": WATCHER})
class Watcher(QObject):
    StatusNotifierItemRegistered = Signal(str)
    StatusNotifierHostRegistered = Signal()

    def __init__(self) -> None:
        super().__init__()
        self._items: list[str] = []

    @Slot(str)
    def RegisterStatusNotifierItem(self, service: str) -> None:
        self._items.append(service)
        report(call="RegisterStatusNotifierItem", service=service)
        self.StatusNotifierItemRegistered.emit(service)

    @Slot(str)
    def RegisterStatusNotifierHost(self, service: str) -> None:
        report(call="RegisterStatusNotifierHost", service=service)

    def _registered(self) -> bool:
        return True

    def _protocol(self) -> int:
        return 0

    def _items_list(self) -> list[str]:
        return list(self._items)

    IsStatusNotifierHostRegistered = Property(bool, _registered)
    ProtocolVersion = Property(int, _protocol)
    RegisteredStatusNotifierItems = Property("QStringList", _items_list)


@ClassInfo({"D-Bus Interface": NOTIFICATIONS})
class Notifications(QObject):
    ActionInvoked = Signal("uint", str)
    NotificationClosed = Signal("uint", "uint")

    def __init__(self) -> None:
        super().__init__()
        self._next = 0

    @Slot(str, "uint", str, str, str, "QStringList", "QVariantMap", int, result="uint")
    def Notify(self, app_name: str, replaces_id: int, icon: str, summary: str,
               body: str, actions: list[str], hints: dict[str, Any], timeout_ms: int) -> int:
        self._next += 1
        report(call="Notify", id=self._next, app_name=app_name, summary=summary, body=body,
               actions=list(actions), urgency=hints.get("urgency"), timeout_ms=timeout_ms)
        return self._next

    @Slot(result="QStringList")
    def GetCapabilities(self) -> list[str]:
        return ["body", "actions"]

    @Slot(QDBusMessage)
    def GetServerInformation(self, message: QDBusMessage) -> None:
        # four out-arguments (name, vendor, version, spec version): replied by hand
        message.setDelayedReply(True)
        reply = message.createReply()
        reply.setArguments(["gpuwatch-test-desktop", "gpuwatch", "1", "1.2"])
        QDBusConnection.sessionBus().send(reply)

    @Slot("uint")
    def CloseNotification(self, notification_id: int) -> None:
        report(call="CloseNotification", id=notification_id)
        self.NotificationClosed.emit(notification_id, 3)

    def click(self, notification_id: int) -> None:
        """Emit ``ActionInvoked(id, "default")``, as a desktop does when a bubble is clicked.

        The object is exported with its signals, so emitting the Qt signal sends the
        D-Bus signal with the right ``(us)`` signature.
        """
        self.ActionInvoked.emit(notification_id, "default")
        report(event="clicked", id=notification_id)


def main() -> int:
    app = QCoreApplication(sys.argv[:1])
    bus = QDBusConnection.sessionBus()
    if not bus.isConnected():
        report(error="no session bus")
        return 1
    watcher, notifications = Watcher(), Notifications()
    flags = (QDBusConnection.RegisterOption.ExportAllSlots
             | QDBusConnection.RegisterOption.ExportAllSignals
             | QDBusConnection.RegisterOption.ExportAllProperties)
    ok = (bus.registerObject("/StatusNotifierWatcher", watcher, flags)
          and bus.registerObject(NOTIFICATIONS_PATH, notifications, flags)
          and bus.registerService(WATCHER) and bus.registerService(NOTIFICATIONS))
    if not ok:
        report(error=f"could not register: {bus.lastError().message()}")
        return 1

    def command() -> None:
        line = sys.stdin.readline()
        if not line:                      # the test closed our stdin: stop
            app.quit()
            return
        parts = line.split()
        if len(parts) == 2 and parts[0] == "click":
            notifications.click(int(parts[1]))
        elif parts == ["quit"]:
            app.quit()

    notifier = QSocketNotifier(sys.stdin.fileno(), QSocketNotifier.Type.Read)
    notifier.activated.connect(command)
    report(event="ready")
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
