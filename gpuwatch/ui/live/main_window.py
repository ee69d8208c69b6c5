"""The main window: banner, GPU cards, time plots, and the process/budget/advisor tabs.

It is fed snapshots through :meth:`MainWindow.on_snapshots` (queued from the sampler
thread by :class:`~gpuwatch.ui.live.bridge.SnapshotBridge`); it never talks to NVML.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QEvent, QTimer, Signal, Slot
from PySide6.QtGui import QCloseEvent, QColor, QResizeEvent
from PySide6.QtWidgets import (
    QApplication,
    QLabel,
    QMainWindow,
    QVBoxLayout,
    QWidget,
)

from gpuwatch.core.history import History
from gpuwatch.core.probe_format import ProbeReport
from gpuwatch.core.snapshot import BackendInfo, BackendKind, Snapshot
from gpuwatch.core.units import UnitSystem
from gpuwatch.ui.live import budget_adapter, probe_view, window_layout
from gpuwatch.ui.live.advisor_bridge import WindowAdvisor
from gpuwatch.ui.live.advisor_panel import AdvisorPanel, HintView
from gpuwatch.ui.live.budget_links import BudgetLinks
from gpuwatch.ui.live.budget_panel import BudgetPanel
from gpuwatch.ui.live.cards_view import CardsView, columns_for
from gpuwatch.ui.live.gpu_focus import GpuFocus
from gpuwatch.ui.live.hint_banner import HintBanner
from gpuwatch.ui.live.overlay import Overlay
from gpuwatch.ui.live.plan_panel import PlanPanel, plan_context
from gpuwatch.ui.live.process_model import Key
from gpuwatch.ui.live.process_panel import ProcessPanel
from gpuwatch.ui.live.redraw_pace import RedrawPace
from gpuwatch.ui.live.status_bar import FittingStatusBar
from gpuwatch.ui.live.text_lines import TextLines
from gpuwatch.ui.live.window_chrome import (
    build_banner,
    build_toolbar,
    focus_ring_css,
    name_widgets,
    pace_text,
    source_text,
    state_text,
)
from gpuwatch.ui.live.window_layout import default_size
from gpuwatch.ui.live.window_menus import build_menus
from gpuwatch.ui.live.window_overlays import card_overlays, link_budget, linked_overlays
from gpuwatch.ui.live.window_sight import WindowSight
from gpuwatch.ui.live.window_state import WindowState
from gpuwatch.ui.settings import Preferences, Settings
from gpuwatch.ui.settings_dialog import SettingsDialog
from gpuwatch.ui.widgets import theme
from gpuwatch.ui.widgets.one_pass import PlotsJoinThePass
from gpuwatch.ui.widgets.plots import TimePlots

TABS = ("Processes", "Budget", "Advisor")


class MainWindow(QMainWindow):
    preferences_changed = Signal(object)   # Preferences
    closing = Signal()
    quit_requested = Signal()              # File > Quit: leave even when a tray could stay
    # True when the window's figures are seen, False when it rests out of sight: the
    # sampler reads fewer host details meanwhile
    sight_changed = Signal(bool)

    def __init__(self, settings: Settings, banner: str | None = None, fallback: bool = False,
                 history: History | None = None):
        super().__init__()
        self.setStatusBar(FittingStatusBar())   # a long message shortened, whole in its tooltip
        self.settings = settings
        self.prefs: Preferences = settings.preferences()
        self.history = history or History()
        self.links = BudgetLinks(settings)
        self.overlays: dict[Key, Overlay] = {}         # linked budgets
        self.probe_overlays: dict[Key, Overlay] = {}   # probed processes without one
        self.samples = 0
        self.rest_when_hidden = False    # see on_snapshots; off for grabbed-only windows
        self._stale = False
        self._capacity_tens = -1           # samples // 10 when the budget's capacity was read
        self._seen: bool | None = None     # last told through sight_changed
        self.sight = WindowSight(self)     # e.g. on another workspace: not exposed
        self.sight.exposed_again.connect(self.catch_up)
        self.pace = RedrawPace(self)       # calm: see redraw_pace; off until turned on
        self.pace.due.connect(self.catch_up)
        self.pace.changed.connect(self._update_status)
        self._refit = QTimer(self, singleShot=True, interval=0)   # after a resize is laid out
        self._refit.timeout.connect(self._fit_splits)
        self.backend: BackendInfo | None = None
        self.sampling_state = "Starting…"
        self.setWindowTitle("gpuwatch")
        self.resize(default_size())

        self.banner, self.banner_label = build_banner(banner, fallback)

        self.cards = CardsView(history=self.history)
        self.plots = TimePlots(self.history)
        self.processes = ProcessPanel(self.history)
        self.budget = BudgetPanel(self.links)
        self.advisor = AdvisorPanel()
        self.plan = PlanPanel()  # computed off the GUI thread when first shown
        self.plan.context = self._plan_context
        self.tabs = window_layout.build_tabs(
            zip((self.processes, self.budget, self.advisor, self.plan), (*TABS, "Plan"),
                strict=True))
        self.main, self.bottom = window_layout.build_splitters(self.cards, self.plots,
                                                               self.tabs)
        central = QWidget()
        v = QVBoxLayout(central)
        v.setContentsMargins(0, 0, 0, 0)
        v.setSpacing(0)
        v.addWidget(self.banner)
        self.hint_banner = HintBanner()
        v.addWidget(self.hint_banner)
        self.gpu_focus = GpuFocus(self)        # one GPU alone: plots, table, this bar
        v.addWidget(self.gpu_focus.bar)
        v.addWidget(self.main, 1)
        self.setCentralWidget(central)

        self.status_backend = QLabel("No backend yet")
        self.status_interval = QLabel()
        self.status_state = TextLines(fit_text=True, inset=6)   # changes every sample
        for w in (self.status_backend, self.status_interval, self.status_state):
            self.statusBar().addPermanentWidget(w)
        self.interval_box = build_toolbar(self)
        name_widgets(self)
        self._one_pass = PlotsJoinThePass(self, (self.plots.memory, self.plots.bandwidth,
                                                 self.processes.detail.detail_plot))

        self.processes.link_requested.connect(self.link_process)
        self.processes.unlink_requested.connect(self.unlink_process)
        self.processes.selection_changed.connect(lambda _: self._update_capacity())
        self.processes.columns_widened.connect(self._columns_widened)
        self.budget.link_clicked.connect(self._link_selected)
        self.plots.window_changed.connect(self._window_changed)
        self.plots.live_changed.connect(lambda _: self.set_sampling_state(self.sampling_state))
        self.hint_source = WindowAdvisor(self)
        self.hint_banner.open_requested.connect(self.hint_source.open_hint)
        self.cards.focus_requested.connect(self.hint_source.seen)   # a card clicked: seen
        build_menus(self, (*TABS, "Plan"))
        self.state = WindowState(settings, self, {"main": self.main, "bottom": self.bottom,
                                                  "process": self.processes.splitter},
                                 self.processes.table.horizontalHeader(), self.tabs,
                                 self.budget)
        self.state.restore()
        self._table_rows = -1               # the rows the table was last fitted to
        self._sparks: tuple[int, ...] = ()  # the cards' sparkline heights when last fitted
        self.apply_preferences(self.prefs, initial=True)
        self.processes.fit_columns(keep_widths=settings.state("process_header") is not None)

    # feeding --------------------------------------------------------------------------
    @Slot(object)
    def on_snapshots(self, snaps: Sequence[Snapshot]) -> None:
        """Append every snapshot to the history, then redraw once for the newest. Out of
        sight (tray, minimised, another workspace) with ``rest_when_hidden``, the history,
        the table's bookkeeping and the advisor still run; nothing is drawn until seen.
        A calm :attr:`pace` holds back a sample in sight in which nothing moved much."""
        if not snaps:
            return
        for i, snap in enumerate(snaps, 1 - len(snaps)):
            self.history.append(snap)
            self.processes.probe_history.observe(snap)
            self.hint_source.observe()
            if i:     # not the newest: the table notes only who left in it
                self.processes.model.pass_snapshot(snap)
        self.samples += len(snaps)
        resting = self.rest_when_hidden and self.sight.out_of_sight()
        self._note_sight(not resting)
        if resting or self.pace.hold(snaps[-1], self.prefs.thresholds):   # drawn later
            self.processes.model.pass_snapshot(snaps[-1])
            self._stale = True
        else:
            self.refresh()
        self.hint_source.flush()

    def _note_sight(self, seen: bool) -> None:
        if seen != self._seen:
            self._seen = seen
            self.sight_changed.emit(seen)

    def catch_up(self, just_shown: bool = False) -> None:
        """Seen again: draw the newest sample if the window rested (see WindowSight)."""
        if self.sight.out_of_sight(just_shown):
            return
        self._note_sight(True)
        if self._stale:
            self._stale = False
            self.refresh()

    def on_snapshot(self, snap: Snapshot) -> None:
        self.on_snapshots([snap])

    def refresh(self) -> None:
        snap = self.history.latest
        if snap is None:
            return
        self.pace.drawn(snap)
        self._stale = False
        if self.backend != snap.backend:
            self.backend = snap.backend
            self.processes.simulated = snap.backend.kind is BackendKind.SIMULATED
            self._update_status()
        probes = probe_view.probes_by_key(snap)
        self.overlays = linked_overlays(snap, self.links)
        self.probe_overlays = probe_view.probe_overlays(snap, probes, self.overlays)
        relaid = self._update_cards(snap, probes)
        relaid = self.cards.set_warnings(snap.warnings) or relaid   # e.g. no GPUs at all
        sparks = tuple(card.spark.height() for card in self.cards.cards.values())
        if (relaid or sparks != self._sparks) and not self.state.user_split("main"):
            self.fit_cards()
        self.processes.model.set_budgets({  # the source's (a gpuwatch exporter's links)
            **{(b.gpu_index, b.pid): b.peak_bytes for b in snap.budget_peaks},
            **{k: o.prediction.total_bytes for k, o in self.overlays.items()}})
        self.processes.model.set_probes(probes)
        self.processes.refresh()
        self._fit_table()
        selected = self.processes.selected_key()
        self.budget.show_linked(self.overlays.get(selected) if selected else None)
        self.plots.refresh()
        if self.samples // 10 != self._capacity_tens:    # about every tenth sample, drawn or not
            self._capacity_tens = self.samples // 10
            self._update_capacity()
        self.set_sampling_state(self.sampling_state)

    def _cards_need(self) -> int:
        """The cards' height for up to two rows as they are now (a wide card's sparkline
        is taller once the card has its width: the cards are fitted again when it grows,
        not on every sample, whose texts move a card's size hint by a pixel or two)."""
        n = len(self.cards.cards)
        rows = min(2, -(-n // columns_for(n))) if n else 0
        return max(self.cards.preferred_height(), self.cards.height_for_rows(rows) if n else 0)

    def fit_cards(self) -> None:
        """Give the cards the height they need, up to two rows (until the user moves the
        splitter), leaving the plots and tabs at least their minimum."""
        total = sum(self.main.sizes())
        below = self.bottom.minimumSizeHint().height()
        self._sparks = tuple(card.spark.height() for card in self.cards.cards.values())
        need = self._cards_need()
        want = max(self.cards.minimumHeight(), min(need, total - below))
        self.main.setSizes([want, max(below, total - want)])

    def _plan_context(self) -> tuple[tuple[str, ...], str | None]:
        return plan_context(self.history.latest, self.links.get)

    def fit_bottom(self) -> None:
        """Split plots and tabs by what the table needs and the window's width (see
        window_layout): a wide window gives the plots the larger part."""
        window_layout.fit_bottom(self.bottom, self.processes)

    def _columns_widened(self) -> None:
        """A longer text widened a column: the tabs keep the columns through Running."""
        if self.isVisible() and not self.state.user_split("bottom"):
            self.fit_bottom()

    def _fit_table(self, again: bool = False) -> None:
        """Room for the table's rows, the selected process's plot the rest, until the
        user moves that splitter; ``again``: the panel changed size."""
        rows = self.processes.model.rowCount()
        if (rows != self._table_rows or again) and self.isVisible() and \
                not self.state.user_split("process"):
            self._table_rows = rows
            window_layout.fit_table(self.processes, rows)

    def _fit_splits(self) -> None:
        """Share the window out again (shown, resized) where the user has not."""
        if not self.state.user_split("main"):
            self.fit_cards()
        if not self.state.user_split("bottom"):
            self.fit_bottom()
        self._fit_table(again=True)

    def set_sampling_state(self, text: str) -> None:
        self.sampling_state = text
        self.status_state.set(state_text(text, self.samples, self.plots.live))

    def focus_gpu(self, index: int | None) -> None:
        """Show GPU ``index`` alone in the plots and the table (None or -1: every GPU)."""
        self.gpu_focus.set(index)

    @property
    def units(self) -> UnitSystem:
        return "si" if self.prefs.units == "si" else "iec"

    # budget overlay ---------------------------------------------------------------------
    def _update_cards(self, snap: Snapshot, probes: dict[Key, ProbeReport]) -> bool:
        by_gpu = probe_view.by_gpu(probes)
        cards = self.cards.cards
        for index, card in cards.items():
            card.probes = by_gpu.get(index, {})
        known = len(cards)
        overlays = self._card_overlays()
        relaid = self.cards.update_snapshot(snap, self.units, self.prefs.thresholds, overlays)
        if len(cards) != known and by_gpu:   # cards made just now: once more with the probes
            for index, card in cards.items():
                card.probes = by_gpu.get(index, {})
            relaid = self.cards.update_snapshot(snap, self.units, self.prefs.thresholds,
                                                overlays) or relaid
        return relaid

    def _card_overlays(self) -> dict[int, Overlay]:
        return card_overlays(self.overlays, self.probe_overlays, self.processes.selected_key())

    def link_process(self, key: Key, request: budget_adapter.BudgetRequest | None = None) -> None:
        """Remember ``request`` (the form's, by default) for the process's command line."""
        if link_budget(self.processes.model.sample(key), request or self.budget.request(),
                       self.links, self.statusBar()):
            self.refresh()

    def unlink_process(self, key: Key) -> None:
        p = self.processes.model.sample(key)
        if p is not None:
            self.links.unlink(p.cmdline)
            self.refresh()

    def _link_selected(self) -> None:
        key = self.processes.selected_key()
        if key is None:
            self.statusBar().showMessage("Select a process in the Processes tab first", 4000)
            return
        self.link_process(key)

    def _update_capacity(self) -> None:
        self.budget.follow_gpu(self.history.latest, self.processes.selected_key())

    # advisor ------------------------------------------------------------------------------
    def set_hints(self, hints: list[HintView]) -> None:
        self.advisor.set_hints(hints)
        title = f"Advisor ({len(hints)})" if hints else "Advisor"
        if self.tabs.tabText(2) != title:
            self.tabs.setTabText(2, title)

    # preferences ------------------------------------------------------------------------
    def restyle(self) -> None:
        """Apply the theme of the preferences now (it may follow the system's) and
        redraw what holds colours of its own."""
        app = QApplication.instance()
        if not isinstance(app, QApplication):
            return
        colors = theme.apply(app, self.prefs.theme)
        css = theme.stylesheet(colors) + focus_ring_css(colors)
        # Setting a style sheet repolishes every widget of the application, windows
        # awaiting deletion included (a crash in Qt when one is half gone): only when
        # it changed, as a new window in the same theme does not change it.
        if app.styleSheet() != css:
            app.setStyleSheet(css)
        self.gpu_focus.bar.restyle()
        self.plots.restyle()
        self.processes.restyle()
        self.cards.restyle()
        # opaque: the status texts that change repaint alone, not the bar and window beneath
        for text in self.statusBar().findChildren(TextLines):
            text.set_colors(None, QColor(colors.window))

    def apply_preferences(self, prefs: Preferences, initial: bool = False) -> None:
        old = self.prefs
        self.prefs = prefs
        if initial or prefs.theme != old.theme:
            self.restyle()
        limits = prefs.thresholds
        self.plots.set_thresholds(limits.memory_warning_percent, limits.memory_critical_percent)
        if initial or prefs.units != old.units:
            self.plots.set_units(self.units)
            self.processes.set_units(self.units)
            self.budget.set_units(self.units)
        if initial:
            self.plots.set_window(prefs.plot_window_s)
        self._update_status()
        if not initial:
            self.settings.set_preferences(prefs)
            self.preferences_changed.emit(prefs)
            self.refresh()

    def open_settings(self) -> None:
        dialog = SettingsDialog(self.prefs, self)
        if dialog.exec():
            self.apply_preferences(dialog.preferences())

    def _window_changed(self, seconds: int) -> None:
        self.prefs.plot_window_s = seconds
        self.processes.window_s = seconds

    def _update_status(self) -> None:
        self.status_backend.setText(source_text(self.backend))
        pace = self.pace.calm_s if self.pace.calm else None
        self.status_interval.setText(pace_text(self.prefs.interval_s, pace))
        self.interval_box.set_seconds(self.prefs.interval_s)

    # menus and shortcuts (built by window_menus) --------------------------------------
    def quit(self) -> None:
        self.quit_requested.emit()
        self.close()

    # persistence ------------------------------------------------------------------------
    def save_state(self) -> None:
        self.state.save()
        self.settings.set_preferences(self.prefs)
        self.settings.sync()

    def showEvent(self, event: object) -> None:
        super().showEvent(event)  # type: ignore[arg-type]
        self._fit_splits()
        self.sight.follow()
        self.catch_up(just_shown=True)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if self.isVisible():      # once the new size is laid out (a card's sparkline too)
            self._refit.start()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.WindowStateChange:     # restored from minimised
            self.catch_up()

    def closeEvent(self, event: QCloseEvent) -> None:
        self.save_state()
        self.closing.emit()
        super().closeEvent(event)

