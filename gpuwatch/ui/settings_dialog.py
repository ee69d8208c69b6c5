"""Preferences: sampling interval, units, theme, the card thresholds, the redraw pace,
alerts, start at login and sessions."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QWidget,
)

from gpuwatch.ui.autostart import autostart_path, is_enabled
from gpuwatch.ui.settings import Preferences, Thresholds

UNITS = (("iec", "IEC — MiB, GiB (powers of 1024)"), ("si", "SI — MB, GB (powers of 1000)"))
THEMES = (("system", "Follow the system"), ("light", "Light"), ("dark", "Dark"))


def _double(low: float, high: float, value: float, suffix: str, step: float = 1.0,
            decimals: int = 0) -> QDoubleSpinBox:
    box = QDoubleSpinBox()
    box.setRange(low, high)
    box.setDecimals(decimals)
    box.setSingleStep(step)
    box.setValue(value)
    box.setSuffix(suffix)
    return box


class SettingsDialog(QDialog):
    def __init__(self, prefs: Preferences, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("gpuwatch settings")
        self._prefs = prefs
        self.interval = _double(0.1, 3600, prefs.interval_s, " s", 0.5, 1)
        self.units = QComboBox()
        for key, label in UNITS:
            self.units.addItem(label, key)
        self.units.setCurrentIndex([k for k, _ in UNITS].index(prefs.units))
        self.theme = QComboBox()
        for key, label in THEMES:
            self.theme.addItem(label, key)
        self.theme.setCurrentIndex([k for k, _ in THEMES].index(prefs.theme))
        t = prefs.thresholds
        self.mem_warning = _double(1, 100, t.memory_warning_percent, " %")
        self.mem_critical = _double(1, 100, t.memory_critical_percent, " %")
        self.temp_warning = _double(30, 120, t.temperature_warning_c, " °C")
        self.record = QCheckBox("Record what the window samples (Sessions menu, Ctrl+O)")
        self.record.setChecked(prefs.record_sessions)
        self.retention_days = _double(1, 3650, prefs.retention_days, " days")
        self.retention_gib = _double(0.1, 10000, prefs.retention_max_gib, " GiB", 1.0, 1)
        form = QFormLayout(self)
        form.addRow("Sample every", self.interval)
        form.addRow("Byte units", self.units)
        form.addRow("Theme", self.theme)
        form.addRow("Memory warning at", self.mem_warning)
        form.addRow("Memory critical at", self.mem_critical)
        form.addRow("Temperature warning at", self.temp_warning)
        self.notifications = QCheckBox("Desktop notifications for warnings and critical hints")
        self.notifications.setChecked(prefs.notifications)
        self.close_to_tray = QCheckBox("Closing the window keeps gpuwatch in the system tray")
        self.close_to_tray.setChecked(prefs.close_to_tray)
        self.close_to_tray.setToolTip("Only where the desktop has a system tray")
        self.redraw = QCheckBox("Redraw every sample, also while memory holds still")
        self.redraw.setChecked(prefs.redraw_every_sample)
        self.redraw.setToolTip(
            "Off: the window redraws every 5 s while nothing moves, and at once when used "
            "memory moves by 1 % of a GPU or crosses a threshold, a GPU goes busy or "
            "idle, a process starts or ends, or a GPU changes state. Sampling, hints and "
            "recording take every sample either way. On: about twice the CPU of the "
            "window.")
        form.addRow("Window", self.redraw)
        form.addRow("Alerts", self.notifications)
        form.addRow("", self.close_to_tray)
        self.start_at_login = QCheckBox("Start at login in the tray")
        # the entry is the setting: what the file says now, whatever was loaded at start
        self.start_at_login.setChecked(is_enabled())
        self.start_at_login.setToolTip(f"An autostart entry: {autostart_path()}")
        self.start_at_login.setAccessibleName("Start at login in the tray")
        form.addRow("Login", self.start_at_login)
        form.addRow("Sessions", self.record)
        form.addRow("Delete sessions older than", self.retention_days)
        form.addRow("Keep sessions within", self.retention_gib)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def preferences(self) -> Preferences:
        return replace(
            self._prefs, interval_s=round(self.interval.value(), 1),
            units=self.units.currentData(), theme=self.theme.currentData(),
            thresholds=Thresholds(self.mem_warning.value(), self.mem_critical.value(),
                                  self.temp_warning.value()),
            record_sessions=self.record.isChecked(),
            retention_days=self.retention_days.value(),
            retention_max_gib=round(self.retention_gib.value(), 1),
            notifications=self.notifications.isChecked(),
            close_to_tray=self.close_to_tray.isChecked(),
            redraw_every_sample=self.redraw.isChecked(),
            start_at_login=self.start_at_login.isChecked())
