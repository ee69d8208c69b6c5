"""Preferences, window state and the budget form survive a restart."""

from __future__ import annotations

from PySide6.QtCore import Qt

from gpuwatch.ui.settings import Preferences, Settings, Thresholds
from gpuwatch.ui.settings_dialog import SettingsDialog
from gpuwatch.ui.widgets import theme
from tests.ui.conftest import feed


def test_preferences_round_trip(settings_path) -> None:
    s = Settings(settings_path)
    prefs = Preferences(interval_s=2.5, units="si", theme="dark", plot_window_s=3600,
                        thresholds=Thresholds(70, 90, 80), redraw_every_sample=True)
    s.set_preferences(prefs)
    s.sync()
    assert Settings(settings_path).preferences() == prefs


def test_the_redraw_pace_is_chosen_in_the_settings_dialog(qtbot) -> None:
    dialog = SettingsDialog(Preferences())
    qtbot.addWidget(dialog)
    assert not dialog.redraw.isChecked()            # calm by default
    dialog.redraw.setChecked(True)
    assert dialog.preferences().redraw_every_sample
    assert SettingsDialog(Preferences(redraw_every_sample=True)).redraw.isChecked()


def test_bad_values_fall_back_to_defaults(settings_path) -> None:
    s = Settings(settings_path)
    s.set_json("preferences", {"units": "furlongs", "theme": 3, "interval_s": "x"})
    assert Settings(settings_path).preferences() == Preferences()


def test_settings_persist_across_a_restart(make_window, scenario, settings_path) -> None:
    window = make_window()
    window.show()
    feed(window, scenario("workstation"), [600])
    prefs = Preferences(interval_s=2.0, units="si", theme="dark", plot_window_s=600)
    window.apply_preferences(prefs)
    assert theme.colors().dark
    window.plots.set_window(3600)
    window.tabs.setCurrentIndex(1)
    window.main.setSizes([300, 500])
    window.processes.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)
    window.budget.batch.setValue(12)
    window.budget.recompute()
    sizes = window.main.sizes()
    window.close()
    saved = Settings(settings_path).state("geometry")

    again = make_window(settings_path)
    again.show()
    assert again.prefs.units == "si" and again.prefs.theme == "dark"
    assert again.prefs.interval_s == 2.0 and again.prefs.plot_window_s == 3600
    assert again.plots.window_s == 3600
    assert again.tabs.currentIndex() == 1
    share = again.main.sizes()[0] / sum(again.main.sizes())
    assert abs(share - sizes[0] / sum(sizes)) < 0.02     # the splitter keeps its proportion
    assert again.budget.request().batch == 12
    assert again.processes.table.horizontalHeader().sortIndicatorSection() == 0
    # the offscreen screen is 800x600, so restoreGeometry clamps the size; check what is stored
    assert saved is not None and not saved.isEmpty()
    again.apply_preferences(Preferences(theme="light"))
    assert not theme.colors().dark
