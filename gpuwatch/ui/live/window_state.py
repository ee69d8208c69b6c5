"""What the window keeps between runs: geometry, splitters, table columns, tab and the
budget form (QSettings, through :class:`~gpuwatch.ui.settings.Settings`)."""

from __future__ import annotations

from PySide6.QtWidgets import QHeaderView, QMainWindow, QSplitter, QTabWidget

from gpuwatch.ui.live import budget_adapter
from gpuwatch.ui.live.budget_links import FORM_KEY
from gpuwatch.ui.live.budget_panel import BudgetPanel
from gpuwatch.ui.settings import Settings


class WindowState:
    """The parts of the window whose state persists."""

    def __init__(self, settings: Settings, window: QMainWindow,
                 splitters: dict[str, QSplitter], header: QHeaderView, tabs: QTabWidget,
                 budget: BudgetPanel) -> None:
        self.settings = settings
        self.window = window
        self.splitters = splitters       # "main", "bottom", "process"
        self.header = header
        self.tabs = tabs
        self.budget = budget
        self._moved = {name for name in splitters
                       if settings.state(f"splitter_{name}") is not None}
        for name, splitter in splitters.items():
            splitter.splitterMoved.connect(lambda *_, name=name: self._moved.add(name))

    def user_split(self, name: str) -> bool:
        """The user has set splitter ``name`` (this run or an earlier one): the window
        leaves it as it is."""
        return name in self._moved

    def restore(self) -> None:
        s = self.settings
        if (geometry := s.state("geometry")) is not None:
            self.window.restoreGeometry(geometry)
        for name, splitter in self.splitters.items():
            if (state := s.state(f"splitter_{name}")) is not None:
                splitter.restoreState(state)
        if (state := s.state("process_header")) is not None:
            self.header.restoreState(state)
        tab = s.get_json("window/tab", 0)
        if isinstance(tab, int) and 0 <= tab < self.tabs.count():
            self.tabs.setCurrentIndex(tab)
        form = budget_adapter.BudgetRequest.from_json(s.get_json(FORM_KEY, None))
        if form is not None:
            self.budget.set_request(form)

    def save(self) -> None:
        s = self.settings
        s.set_state("geometry", self.window.saveGeometry())
        for name, splitter in self.splitters.items():
            s.set_state(f"splitter_{name}", splitter.saveState())
        s.set_state("process_header", self.header.saveState())
        s.set_json("window/tab", self.tabs.currentIndex())
        s.set_json(FORM_KEY, self.budget.request().to_json())
