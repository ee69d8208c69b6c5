"""The window's chrome: Tab never stuck in the table, a name for every control, one
meaning of paused, the sampling interval in the toolbar, a process selected from the
start, and empty states that say what is happening."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QColor, QKeySequence
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QWidget,
)

from gpuwatch.ui.live.window_chrome import (
    INTERVALS_S,
    focus_ring_color,
    focus_ring_css,
    state_text,
)
from gpuwatch.ui.widgets import theme
from tests.ui.conftest import feed


def shown(qtbot, window, size=(1280, 800)) -> None:
    window.resize(*size)
    with qtbot.waitExposed(window):
        window.show()
    QApplication.processEvents()


def test_tab_leaves_the_process_table(make_window, scenario, qtbot) -> None:
    window = make_window()
    shown(qtbot, window)
    feed(window, scenario("multi-gpu-ddp"), range(300, 303))
    table = window.processes.table
    assert not table.tabKeyNavigation()
    table.setFocus()
    qtbot.waitUntil(table.hasFocus)
    row = table.currentIndex().row()
    qtbot.keyClick(table, Qt.Key.Key_Down)
    assert table.currentIndex().row() == row + 1            # arrows move between rows
    qtbot.keyClick(table, Qt.Key.Key_Tab)
    assert not table.hasFocus()                              # Tab goes on
    table.setFocus()
    qtbot.keyClick(table, Qt.Key.Key_Backtab)
    assert not table.hasFocus()


def _unnamed(root: QWidget) -> list[str]:
    out = []
    for w in root.findChildren(QWidget):
        if not w.isVisibleTo(root) or not (w.focusPolicy() & Qt.FocusPolicy.TabFocus):
            continue
        if isinstance(w.parentWidget(), (QAbstractSpinBox, QComboBox)):
            continue         # the editor inside a spin or combo box: named by its box
        name = w.accessibleName() or (w.text() if isinstance(w, QAbstractButton) else "")
        if not name:
            out.append(f"{type(w).__name__} {w.objectName()!r}")
    return out


def test_every_control_has_an_accessible_name(make_window, scenario, qtbot) -> None:
    window = make_window()
    shown(qtbot, window)
    feed(window, scenario("workstation"), range(300, 303))
    window.focus_gpu(1)
    for root in (window.plots, window.processes, window.budget, window.advisor,
                 window.gpu_focus.bar, window.interval_box.parentWidget()):
        assert _unnamed(root) == [], type(root).__name__
    assert window.tabs.accessibleName()
    for plot in (window.plots.memory, window.plots.bandwidth, window.processes.detail_plot):
        assert plot.accessibleName() and plot.accessibleDescription()
        assert plot.focusPolicy() == Qt.FocusPolicy.NoFocus   # nothing to do with keys


def test_the_focused_widget_gets_a_ring() -> None:
    for colors in (theme.LIGHT, theme.DARK):
        css = focus_ring_css(colors)
        for selector in ("QPushButton:focus", "QListWidget:focus", "QCheckBox:focus"):
            assert selector in css
        assert "2px solid" in css


def test_the_process_table_paints_its_focus_ring(make_window, scenario, qtbot) -> None:
    window = make_window()
    shown(qtbot, window)
    feed(window, scenario("workstation"), range(300, 302))
    table = window.processes.table
    ring = QColor(focus_ring_color(theme.colors()))

    def corner() -> QColor:
        return table.viewport().grab().toImage().pixelColor(1, table.viewport().height() - 2)

    window.processes.filter.setFocus()
    qtbot.waitUntil(lambda: not table.hasFocus())
    assert corner() != ring
    table.setFocus()
    qtbot.waitUntil(table.hasFocus)
    assert corner() == ring


def test_paused_means_the_plots_and_both_say_so(make_window, scenario, qtbot) -> None:
    window = make_window()
    shown(qtbot, window)
    window.set_sampling_state("● Sampling")
    backend = scenario("workstation")
    feed(window, backend, range(300, 305))
    status = window.status_state.text
    assert "paused" not in status().lower() and window.plots.state_label.text() == ""
    window.plots.pause_button.click()                     # Space does the same
    assert not window.plots.live
    assert "plots paused" in status() and "Sampling" in status()
    assert "Paused (still sampling)" in window.plots.state_label.text()
    feed(window, backend, [306])                          # samples go on, still paused
    assert "plots paused" in status() and "6 samples" in status()
    window.plots.toggle_pause()
    assert "paused" not in status().lower() and window.plots.state_label.text() == ""
    assert state_text("● Sampling", 2, False) == "● Sampling · plots paused · 2 samples"


def test_the_toolbar_shows_and_changes_the_sampling_interval(make_window, qtbot) -> None:
    window = make_window()
    shown(qtbot, window)
    box = window.interval_box
    assert box.isVisible() and box.seconds() == window.prefs.interval_s == 1.0
    assert [box.itemData(i) for i in range(len(INTERVALS_S))] == list(INTERVALS_S)
    with qtbot.waitSignal(window.preferences_changed) as changed:
        box.setCurrentIndex(box.findData(5.0))
    assert changed.args[0].interval_s == 5.0 == window.prefs.interval_s
    assert window.status_interval.text() == "every 5 s"
    assert window.settings.preferences().interval_s == 5.0
    prefs = window.prefs
    prefs2 = type(prefs)(**{**prefs.__dict__, "interval_s": 3.0})   # e.g. from Settings
    window.apply_preferences(prefs2)
    assert box.seconds() == 3.0 and box.currentText() == "3 s"


def test_a_process_is_selected_from_the_start(make_window, scenario, qtbot) -> None:
    window = make_window()
    shown(qtbot, window)
    panel = window.processes
    assert panel.table.empty_text == "Waiting for the first sample…"
    assert window.plots.waiting.scene() is not None           # the plots say so too
    snap = feed(window, scenario("workstation"), range(300, 302))
    assert window.plots.waiting.scene() is None
    largest = max(snap.processes, key=lambda p: p.used_bytes)
    assert panel.selected_key() == (largest.gpu_index, largest.pid)
    assert f"pid {largest.pid}" in panel.detail_title.text()
    other = next(p for p in snap.processes if p.pid != largest.pid)
    panel.select((other.gpu_index, other.pid))                # the user's choice stays
    feed(window, scenario("workstation"), range(302, 305))
    assert panel.selected_key() == (other.gpu_index, other.pid)


def test_empty_states_say_what_is_happening(make_window, scenario, qtbot) -> None:
    window = make_window()
    shown(qtbot, window)
    panel = window.processes
    feed(window, scenario("workstation"), range(300, 302))
    panel.filter.setText("no-such-process")
    assert panel.model.rowCount() == 0
    assert panel.table.empty_text == "No process matches “no-such-process”"
    feed(window, scenario("workstation"), [302])
    assert panel.detail_title.text() == "No process matches “no-such-process”"
    window.focus_gpu(1)
    assert panel.table.empty_text == "No process on GPU 1 matches “no-such-process”"
    panel.filter.clear()
    assert panel.model.rowCount() > 0 and panel.selected_key() is not None


def test_the_table_scrolls_sideways_at_1024_rather_than_squeeze(make_window, scenario,
                                                               qtbot) -> None:
    window = make_window()
    shown(qtbot, window, (1024, 640))
    feed(window, scenario("multi-gpu-ddp"), range(300, 302))
    QApplication.processEvents()
    table = window.processes.table
    header = table.horizontalHeader()
    defaults = window.processes.default_widths()
    for col, width in enumerate(defaults):
        assert header.sectionSize(col) >= width - 1, col
    assert header.length() > table.viewport().width()
    assert table.horizontalScrollBar().maximum() > 0


def test_with_only_exited_rows_the_plot_says_so(make_window, scenario, qtbot) -> None:
    window = make_window()
    shown(qtbot, window)
    feed(window, scenario("oom-ramp"), range(0, 560, 2))     # the run dies at 492 s
    panel = window.processes
    assert panel.model.live_rows == 0 and panel.model.exited_rows == 1
    assert panel.selected_key() is None                      # not chosen for the user
    assert panel.detail_title.text().startswith("No process is using GPU memory now")


def test_every_tab_has_a_view_menu_entry_and_shortcut(make_window) -> None:
    window = make_window()
    names = [window.tabs.tabText(i).split(" (")[0] for i in range(window.tabs.count())]
    shortcuts = {a.text(): a.shortcut() for a in window.findChildren(QAction)}
    for i, name in enumerate(names):
        assert shortcuts.get(name) == QKeySequence(f"Ctrl+{i + 1}"), name
    assert "Plan" in names


def test_f1_lists_every_shortcut_the_window_has(make_window) -> None:
    """Each key an action of the window answers to is in the F1 list (Ctrl+O, Esc and
    Enter on a card included)."""
    from gpuwatch.ui.shortcuts import DESCRIPTIONS

    window = make_window()
    listed = " ".join(keys for keys, _ in DESCRIPTIONS)
    words = {w for keys, _ in DESCRIPTIONS for w in keys.replace("·", " ").split()}
    for action in window.findChildren(QAction):
        key = action.shortcut().toString(QKeySequence.SequenceFormat.PortableText)
        if not key:
            continue
        last = key.rsplit("+", 1)[-1]
        assert key in listed or (last in words and key.split("+")[0] in listed), \
            (action.text(), key)
    for key in ("Ctrl+O", "Esc", "Enter"):
        assert key in listed
