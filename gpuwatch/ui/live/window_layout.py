"""How a first start shares the window out (until the user moves a splitter): the
plots and the tabs side by side by what the table needs and how wide the window is,
and the table and the selected process's plot by how many rows there are, so a wide
window with one GPU and one process is not a strip of plots beside a table of one row
over empty space."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QFrame, QScrollArea, QSplitter, QStyle, QTabWidget, QWidget

from gpuwatch.ui.live.budget_panel import BudgetPanel
from gpuwatch.ui.live.process_panel import ProcessPanel
from gpuwatch.ui.live.process_texts import COMMAND, RUNNING

DEFAULT_SIZE = QSize(1500, 950)
TITLE_BAR = 40        # px a window manager's frame may add above the window
COMMAND_PX = 320      # the Command column's share when the window has room for it
WIDE_PX = 1600        # from this width the plots take the larger part
WIDE_TABS = 3 / 8     # the tabs' share of a wide window, unless Running needs more
WIDE_TABS_MAX = 0.4   # and with it, at most
TAB_PANE_PX = 6       # the tab pane's border and margins beside the table
MIN_ROWS = 4          # rows the table keeps room for, however few processes run
SPARE_ROWS = 1        # and room for a process more than there are
TABLE_SHARE = 3 / 4   # the table's share of the panel, at most


def default_size() -> QSize:
    """The size a first start opens at: 1500×950, or the screen's free area where that is
    smaller (a 1280×800 or 1024×640 laptop). Offscreen there is no screen to fit."""
    screen = QGuiApplication.primaryScreen()
    if screen is None or QGuiApplication.platformName() == "offscreen":
        return QSize(DEFAULT_SIZE)
    free = screen.availableGeometry()
    return QSize(min(DEFAULT_SIZE.width(), free.width()),
                 min(DEFAULT_SIZE.height(), free.height() - TITLE_BAR))


def build_tabs(pages: Iterable[tuple[QWidget, str]]) -> QTabWidget:
    """The tabs below the cards; the budget form scrolls (it is taller than a small
    window's tab)."""
    tabs = QTabWidget()
    for widget, name in pages:
        if isinstance(widget, BudgetPanel):
            page = QScrollArea()
            page.setWidget(widget)
            page.setWidgetResizable(True)
            page.setFrameShape(QFrame.Shape.NoFrame)
            widget = page
        tabs.addTab(widget, name)
    return tabs


def build_splitters(cards: QWidget, plots: QWidget, tabs: QWidget
                    ) -> tuple[QSplitter, QSplitter]:
    """(main, bottom): the cards above the plots beside the tabs."""
    bottom = QSplitter(Qt.Orientation.Horizontal)
    bottom.setObjectName("bottomSplitter")
    bottom.addWidget(plots)
    bottom.addWidget(tabs)
    bottom.setStretchFactor(0, 1)      # the table's eleven columns want the room
    bottom.setStretchFactor(1, 2)
    bottom.setChildrenCollapsible(False)
    main = QSplitter(Qt.Orientation.Vertical)
    main.setObjectName("mainSplitter")
    main.addWidget(cards)
    main.addWidget(bottom)
    main.setStretchFactor(0, 2)
    main.setStretchFactor(1, 5)
    main.setChildrenCollapsible(False)
    return main, bottom


def tabs_width(total: int, need: int, keep: int = 0) -> int:
    """The tabs' width in a bottom row ``total`` px wide, for a table that needs
    ``need`` px: what it needs, at most two thirds of a narrow window (the plots keep a
    third) and WIDE_TABS of a wide one, where the Name column carries the script and
    the plots are what a wide screen is for; but on a wide one at least ``keep`` (the
    columns through Running whole) where that is at most WIDE_TABS_MAX of it."""
    if total < WIDE_PX:
        share = total * 2 // 3
    else:
        share = int(total * WIDE_TABS)
        if keep <= total * WIDE_TABS_MAX:
            share = max(share, keep)
    return max(0, min(need, share))


def fit_bottom(bottom: QSplitter, processes: ProcessPanel) -> None:
    """Split plots and tabs (see :func:`tabs_width`) by the table's columns as they are
    now (a longer text widens its column: see column_fit)."""
    total = bottom.width()
    if total <= 0:
        return
    widths = processes.shown_widths()
    need = sum(widths[:COMMAND]) + COMMAND_PX + 40
    keep = sum(widths[:RUNNING + 1]) + table_chrome(processes)
    tabs = tabs_width(total, need, keep)
    bottom.setSizes([total - tabs, tabs])


def table_chrome(processes: ProcessPanel) -> int:
    """The px the tab page takes beside the table's columns: the table's frame, a
    vertical scroll bar (room kept for one, rows may come), the tab pane's border."""
    table = processes.table
    bar = table.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent, None, table)
    return 2 * table.frameWidth() + bar + TAB_PANE_PX


def table_height(processes: ProcessPanel, rows: int) -> int:
    """The height of the filter line and a table showing ``rows`` rows whole."""
    table = processes.table
    header = table.horizontalHeader().sizeHint().height()
    row = table.verticalHeader().defaultSectionSize()
    bar = table.horizontalScrollBar().sizeHint().height()
    head = processes.filter.sizeHint().height() + 6
    return head + header + rows * row + bar + 2 * table.frameWidth() + 2


def fit_table(processes: ProcessPanel, rows: int) -> None:
    """Give the table room for its rows (at least MIN_ROWS, one spare) and the selected
    process's plot the rest, the table at most TABLE_SHARE of the panel."""
    splitter = processes.splitter
    total = sum(splitter.sizes())
    if total <= 0:
        return
    want = table_height(processes, max(MIN_ROWS, rows + SPARE_ROWS))
    table = min(want, int(total * TABLE_SHARE))
    table = max(table, splitter.widget(0).minimumSizeHint().height())
    splitter.setSizes([table, max(0, total - table)])
