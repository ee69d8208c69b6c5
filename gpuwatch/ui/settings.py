"""The user's preferences and window state, persisted with QSettings.

Everything goes through :class:`Settings` so tests (and screenshot runs) can point it
at a throwaway ini file and never touch the user's configuration.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from PySide6.QtCore import QByteArray, QSettings

from gpuwatch.ui import autostart

ORGANIZATION = "gpuwatch"
APPLICATION = "gpuwatch"

PLOT_WINDOWS_S = (60, 600, 3600, 86400)


@dataclass
class Thresholds:
    """When a card turns amber or red."""

    memory_warning_percent: float = 85.0
    memory_critical_percent: float = 95.0
    temperature_warning_c: float = 83.0


@dataclass
class Preferences:
    interval_s: float = 1.0
    units: str = "iec"              # "iec" or "si"
    theme: str = "system"           # "system", "light" or "dark"
    plot_window_s: int = 600
    thresholds: Thresholds = field(default_factory=Thresholds)
    notifications: bool = True      # warning/critical hints as desktop notifications
    close_to_tray: bool = True      # closing the window keeps gpuwatch in the tray (if any)
    redraw_every_sample: bool = False   # else calm: redrawn every 5 s while nothing moves
    record_sessions: bool = True    # record what the window samples to a session file
    retention_days: float = 30.0    # sessions older than this are deleted at start
    retention_max_gib: float = 5.0  # then the oldest, until the folder fits this
    # start at login in the tray: the autostart entry's existence, not a stored value
    start_at_login: bool = False


class Settings:
    """A typed view over one QSettings store (the user's, or an explicit ini file)."""

    def __init__(self, path: str | None = None):
        if path is None:
            self._q = QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope,
                                ORGANIZATION, APPLICATION)
        else:
            self._q = QSettings(path, QSettings.Format.IniFormat)

    @property
    def path(self) -> str:
        return self._q.fileName()

    def sync(self) -> None:
        self._q.sync()

    # preferences ------------------------------------------------------------------
    def preferences(self) -> Preferences:
        raw = self._json("preferences", {})
        prefs = Preferences()
        try:
            prefs.interval_s = max(0.1, float(raw.get("interval_s", prefs.interval_s)))
            if raw.get("units") in ("iec", "si"):
                prefs.units = raw["units"]
            if raw.get("theme") in ("system", "light", "dark"):
                prefs.theme = raw["theme"]
            if int(raw.get("plot_window_s", 0)) in PLOT_WINDOWS_S:
                prefs.plot_window_s = int(raw["plot_window_s"])
            if isinstance(raw.get("record_sessions"), bool):
                prefs.record_sessions = raw["record_sessions"]
            prefs.retention_days = max(1.0, float(raw.get("retention_days",
                                                          prefs.retention_days)))
            prefs.retention_max_gib = max(0.1, float(raw.get("retention_max_gib",
                                                             prefs.retention_max_gib)))
            for name in ("notifications", "close_to_tray", "redraw_every_sample"):
                if isinstance(raw.get(name), bool):
                    setattr(prefs, name, raw[name])
            t = raw.get("thresholds", {})
            prefs.thresholds = Thresholds(**{k: float(v) for k, v in t.items()
                                             if k in Thresholds.__dataclass_fields__})
        except (TypeError, ValueError):
            prefs = Preferences()
        prefs.start_at_login = autostart.is_enabled()
        return prefs

    def set_preferences(self, prefs: Preferences) -> None:
        stored = asdict(prefs)
        stored.pop("start_at_login")          # the autostart entry holds it
        self._q.setValue("preferences", json.dumps(stored))

    # window state -------------------------------------------------------------------
    def state(self, key: str) -> QByteArray | None:
        value = self._q.value(f"window/{key}")
        return value if isinstance(value, QByteArray) and not value.isEmpty() else None

    def set_state(self, key: str, value: QByteArray) -> None:
        self._q.setValue(f"window/{key}", value)

    # free-form JSON values (budget links, presets, the budget form) --------------------
    def get_json(self, key: str, default: Any) -> Any:
        return self._json(key, default)

    def set_json(self, key: str, value: Any) -> None:
        self._q.setValue(key, json.dumps(value))

    def _json(self, key: str, default: Any) -> Any:
        text = self._q.value(key)
        if not isinstance(text, str):
            return default
        try:
            return json.loads(text)
        except ValueError:
            return default
