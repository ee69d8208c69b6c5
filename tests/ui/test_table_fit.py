"""The process table shows every column's text whole, on the screens people have: a cell
is never elided ("python · finet…"), and the columns a size promises in view (through
Running where the tabs have the room) are not cut by the table's edge."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetricsF
from PySide6.QtWidgets import QApplication

from gpuwatch.ui.live.process_model import EXITED, ProcessModel
from gpuwatch.ui.live.process_table import PADDING, SWATCH, SWATCH_GAP, ProcessTable
from gpuwatch.ui.live.process_texts import BUDGET, COLUMNS, COMMAND, NAME, RUNNING
from gpuwatch.ui.settings import Preferences, Settings
from tests.ui.conftest import feed

# the window's size on each screen: a first start (1500×950 at most, less a title bar)
# or, at 1920×1080, maximised under a window manager's title bar
SCREENS = {"1024x640": (1024, 600), "1280x800": (1280, 760), "1920x1080-max": (1920, 1050)}
WORKLOADS = {"1 GPU": ("oom-ramp", [300, 301]),
             "8 GPUs": ("multi-gpu-ddp", range(300, 306))}


def text_width(table: ProcessTable, text: str, bold: bool, italic: bool) -> int:
    """The pixels ``text`` takes in the table's font: its advance and the overhang of
    its last glyph (an italic "y")."""
    if not text:
        return 0
    font = QFont(table.font())
    font.setBold(bold)
    font.setItalic(italic)
    m = QFontMetricsF(font)
    return math.ceil(m.horizontalAdvance(text) + max(0.0, -m.rightBearing(text[-1])))


def cut_cells(table: ProcessTable) -> list[tuple[str, str, int, int]]:
    """(column, text, width, room) of every shown cell but Command's whose text is wider
    than its cell."""
    model = table.model()
    assert isinstance(model, ProcessModel)
    header = table.horizontalHeader()
    out = []
    for row in range(model.rowCount()):
        texts, _, bold_budget, state = model.row_paint(row)
        for col, text in enumerate(texts):
            if col == COMMAND or header.isSectionHidden(col):
                continue
            room = header.sectionSize(col) - 2 * PADDING
            if col == NAME:
                room -= SWATCH + SWATCH_GAP
            gone = state == EXITED
            width = text_width(table, text, bold_budget and col == BUDGET and not gone, gone)
            if width > room:
                out.append((COLUMNS[col], text, width, room))
    return out


def outside_view(table: ProcessTable, last: int) -> list[str]:
    """The columns up to ``last`` that the table's right edge cuts or hides (scrolled to
    its left end)."""
    header = table.horizontalHeader()
    width = table.viewport().width()
    return [COLUMNS[col] for col in range(last + 1) if not header.isSectionHidden(col)
            and header.sectionViewportPosition(col) + header.sectionSize(col) > width]


def open_window(make_window, tmp_path: Path, qtbot, theme: str, size: tuple[int, int]):
    """A first start on a screen: shown at its default size, then resized (as a window
    manager maximises it)."""
    path = str(tmp_path / f"{theme}.ini")
    Settings(path).set_preferences(Preferences(theme=theme))
    window = make_window(path)
    with qtbot.waitExposed(window):
        window.show()
    window.resize(*size)
    return window


def settle(qtbot) -> None:
    qtbot.wait(30)
    QApplication.processEvents()


@pytest.mark.parametrize("screen", SCREENS)
@pytest.mark.parametrize("workload", WORKLOADS)
def test_every_column_shows_its_text_whole(make_window, scenario, qtbot, tmp_path, screen,
                                           workload) -> None:
    name, times = WORKLOADS[workload]
    theme = "dark" if name == "oom-ramp" else "light"
    window = open_window(make_window, tmp_path, qtbot, theme, SCREENS[screen])
    backend = scenario(name)
    feed(window, backend, times[:1])
    settle(qtbot)
    feed(window, backend, times[1:])
    settle(qtbot)
    table = window.processes.table
    assert table.model().rowCount() >= (1 if name == "oom-ramp" else 8)
    assert cut_cells(table) == []
    header = table.horizontalHeader()
    for col in range(len(COLUMNS)):       # the headers too, the sorted one by its arrow
        arrow = header.sortIndicatorSection() == col
        assert header.sectionSize(col) >= header.width_for(col, arrow=arrow), COLUMNS[col]
    if screen != "1024x640":              # the plots keep a third: the rest scrolls there
        assert outside_view(table, RUNNING) == []
    else:                                 # each column can be scrolled into view whole
        for col in range(COMMAND):
            assert header.sectionSize(col) <= table.viewport().width(), COLUMNS[col]


def test_longer_texts_widen_their_columns_and_the_split_follows(make_window, scenario, qtbot,
                                                               tmp_path) -> None:
    """An exited row ("exited 13:04:05"), a process on a lost GPU ("unknown — GPU lost")
    and a probed, linked process widen their columns once they show; at 1920 px the
    tabs then still show every column through Running whole."""
    window = open_window(make_window, tmp_path, qtbot, "light", SCREENS["1920x1080-max"])
    backend = scenario("faults")
    feed(window, backend, [20, 21])
    settle(qtbot)
    table = window.processes.table
    before = table.horizontalHeader().sectionSize(RUNNING)
    feed(window, backend, [40, 41])                  # GPU 1 lost at 30 s
    settle(qtbot)
    texts = [table.model().row_paint(r)[0][RUNNING] for r in range(table.model().rowCount())]
    assert any(t.startswith("unknown — ") for t in texts), texts
    assert cut_cells(table) == []
    assert table.horizontalHeader().sectionSize(RUNNING) > before
    assert outside_view(table, RUNNING) == []


def test_a_column_the_user_narrowed_stays_narrow(make_window, scenario, qtbot,
                                                 tmp_path, monkeypatch) -> None:
    """Widths follow the texts until the user drags a column's edge: then that column
    keeps the width given (its texts elide, whole in the tooltip)."""
    window = open_window(make_window, tmp_path, qtbot, "light", SCREENS["1280x800"])
    backend = scenario("multi-gpu-ddp")
    feed(window, backend, [300])
    settle(qtbot)
    header = window.processes.table.horizontalHeader()
    monkeypatch.setattr(QApplication, "mouseButtons",
                        staticmethod(lambda: Qt.MouseButton.LeftButton))
    header.resizeSection(NAME, 60)                   # as a drag on the header does
    monkeypatch.undo()
    feed(window, backend, [301, 302])
    settle(qtbot)
    assert header.sectionSize(NAME) == 60
