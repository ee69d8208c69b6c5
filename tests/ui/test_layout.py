"""What the shown window lays out: axes that keep their labels, plots that start at zero,
text inside the widget that draws it, and a window that fits a small screen."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QFontMetricsF, QImage, QStandardItemModel
from PySide6.QtWidgets import QApplication, QTableView

from gpuwatch.ui.live import window_layout
from gpuwatch.ui.live.advisor_panel import HintView
from gpuwatch.ui.live.budget_adapter import BudgetRequest, predict
from gpuwatch.ui.live.process_model import MEMORY
from gpuwatch.ui.live.process_table import SortHeader
from gpuwatch.ui.live.process_texts import COLUMNS, COMMAND, CONTAINER
from gpuwatch.ui.widgets.plot_ranges import StickyRange
from tests.ui.conftest import feed

ROOT = Path(__file__).resolve().parents[2]
SIZES = [(1280, 800), (1024, 640), (1500, 950), (1024, 600), (1280, 800)]


def settle(qtbot, window) -> None:
    """Let the window lay itself out and paint (as the event loop would)."""
    qtbot.wait(30)
    QApplication.processEvents()


def time_axes(window):
    plots = (window.plots.memory, window.plots.bandwidth, window.processes.detail_plot)
    return [p.getPlotItem().getAxis("bottom") for p in plots]


def test_time_axes_keep_their_labels_in_a_shown_resized_window(make_window, scenario,
                                                               qtbot) -> None:
    """The window is shown (and painted) before its first sample arrives, as the app does;
    no label fits a view with no data then, and the axis must not shrink to nothing."""
    window = make_window()
    window.resize(*SIZES[0])
    with qtbot.waitExposed(window):
        window.show()
    settle(qtbot, window)
    backend = scenario("workstation")
    t = 300
    for size in SIZES:
        window.resize(*size)
        feed(window, backend, range(t, t + 3))
        t += 3
        settle(qtbot, window)
        for axis in time_axes(window):
            font_px = QFontMetricsF(axis.style["tickFont"] or axis.font()).height()
            assert axis.height() >= 0.75 * font_px, (size, axis.height())
            labels = axis.label_texts()
            assert len(labels) >= 2, (size, labels)
            assert all(":" in text for text in labels), labels


def test_plots_start_at_zero_up_to_peak_and_capacity(make_window, scenario, qtbot) -> None:
    window = make_window()
    window.show()
    settle(qtbot, window)
    for plot in (window.plots.memory, window.plots.bandwidth):    # before any sample
        low, high = plot.getViewBox().viewRange()[1]
        assert low <= 0 < high <= 2
    snap = feed(window, scenario("workstation"), [0])     # GPU 1 is idle: 0 B/s
    settle(qtbot, window)
    peak = max(g.peak_bandwidth_bytes_per_s for g in snap.gpus) / 1e9
    low, high = window.plots.bandwidth.getViewBox().viewRange()[1]
    assert -0.1 * peak < low <= 0 and peak <= high <= 1.3 * peak
    capacity = max(g.memory.total_bytes for g in snap.gpus) / 2**30
    low, high = window.plots.memory.getViewBox().viewRange()[1]
    assert -0.1 * capacity < low <= 0 and capacity < high <= 1.4 * capacity
    for plot in (window.plots.memory, window.plots.bandwidth):
        label = plot.getPlotItem().getAxis("left").labelString()
        assert "x1e" not in label and "(" not in label, label     # no SI prefix


def test_all_zero_data_without_a_peak_shows_zero_to_one() -> None:
    sticky = StickyRange(floor=0.0, min_top=1.0)
    assert sticky.fit(0.0, 0.0) == pytest.approx((0.0, 1.0))
    low, high = sticky.fit(0.0, 40.0) or (None, None)
    assert low == 0.0 and high > 40.0


def inside(item, view, slack: float = 1.0) -> bool:
    outer = view.sceneBoundingRect().adjusted(-slack, -slack, slack, slack)
    return outer.contains(item.sceneBoundingRect())


@pytest.mark.parametrize("size", [(1024, 600), (1500, 950)])
def test_line_labels_stay_inside_their_plots(make_window, scenario, qtbot, size) -> None:
    window = make_window()
    window.resize(*size)
    window.show()
    feed(window, scenario("fragmentation"), [890, 900])
    settle(qtbot, window)
    memory = window.plots.memory
    lines = list(window.plots._capacity_lines.values())
    assert lines and "capacity" in lines[0].label.toPlainText()
    assert inside(lines[0].label, memory.getViewBox())
    # a budget above everything measured: its line is the top of the process plot
    request = BudgetRequest(model="gpt2-medium", batch=32, seq=1024, precision="amp-bf16")
    assert predict(request) is not None
    window.link_process((0, 66120), request)
    window.processes.select((0, 66120))
    feed(window, scenario("fragmentation"), [901])
    settle(qtbot, window)
    label = window.processes.peak_line.label
    assert label.toPlainText() == "predicted peak" and window.processes.peak_line.isVisible()
    assert inside(label, window.processes.detail_plot.getViewBox())


def test_advisor_rows_fit_the_list_at_1024(make_window, qtbot) -> None:
    window = make_window()
    window.resize(1024, 640)
    window.show()
    window.tabs.setCurrentWidget(window.advisor)
    long = ("peak memory climbing 1.8 GiB/min, steadily for the last 4 min 51 s; pid 71310 "
            "(python) grew 12.0 GiB in that time, and the allocator retried twice")
    hints = [HintView("critical" if i % 2 else "warning",
                      f"GPU {i % 2} memory full in ~1 min at this rate (hint {i})",
                      evidence=long + "\n" + long, gpu=i % 2, pid=71310 + i, code=f"c{i}",
                      actions=("Lower the micro-batch (raise gradient accumulation to keep the "
                               "effective batch), or enable activation checkpointing",
                               "Save a checkpoint now, before the run fails"))
             for i in range(6)]
    window.set_hints(hints)
    for size in ((1024, 640), (1280, 800), (1024, 640)):
        window.resize(*size)
        settle(qtbot, window)
        view = window.advisor.list
        viewport = view.viewport()
        assert view.verticalScrollBar().isVisible()          # the case that went wrong
        for row in range(view.count()):
            label = view.itemWidget(view.item(row))
            rect = label.geometry()
            assert rect.left() >= 0 and rect.right() < viewport.width(), (size, row, rect)
            need = label.heightForWidth(label.width())
            assert need <= label.height(), (size, row, need, label.height())


def header_image(header: SortHeader, width: int) -> QImage:
    header.resizeSection(0, width)
    QApplication.processEvents()
    return header.grab(QRect(0, 0, width, header.height())).toImage()


def changed_columns(a: QImage, b: QImage) -> set[int]:
    return {x for x in range(min(a.width(), b.width())) for y in range(a.height())
            if a.pixel(x, y) != b.pixel(x, y)}


@pytest.mark.parametrize("align", [Qt.AlignmentFlag.AlignRight, Qt.AlignmentFlag.AlignLeft])
def test_the_sort_arrow_never_covers_the_header_text(make_window, qtbot, align) -> None:
    """Rendered with the window's stylesheet: the arrow's pixels (sorted, no text, against
    unsorted, no text) and the text's (sorted, with text, against sorted, without) share
    no column, whether the section is wide enough for both or not."""
    make_window()                       # the app's style and stylesheet
    view = QTableView()
    qtbot.addWidget(view)
    header = SortHeader(Qt.Orientation.Horizontal, view)
    view.setHorizontalHeader(header)
    model = QStandardItemModel(1, 2)
    view.setModel(model)
    view.resize(600, 200)
    with qtbot.waitExposed(view):
        view.show()

    def label(text: str) -> None:
        model.setHeaderData(0, Qt.Orientation.Horizontal, text)
        model.setHeaderData(0, Qt.Orientation.Horizontal,
                            int(align | Qt.AlignmentFlag.AlignVCenter),
                            Qt.ItemDataRole.TextAlignmentRole)

    for width in (140, 70):            # room for both; too narrow for both
        label("")
        header.setSortIndicatorShown(False)
        blank = header_image(header, width)
        header.setSortIndicatorShown(True)
        header.setSortIndicator(0, Qt.SortOrder.DescendingOrder)
        arrow = header_image(header, width)
        label("GPU memory")
        both = header_image(header, width)
        arrow_x, text_x = changed_columns(blank, arrow), changed_columns(arrow, both)
        assert arrow_x and text_x, width
        assert not arrow_x & text_x, (width, sorted(arrow_x), sorted(text_x))


def test_default_columns_show_their_header_and_the_command(make_window, qtbot) -> None:
    window = make_window()
    window.resize(1500, 950)             # the default size where the screen allows it
    window.show()
    settle(qtbot, window)
    table = window.processes.table
    header = table.horizontalHeader()
    assert isinstance(header, SortHeader) and header.sortIndicatorSection() == MEMORY
    for col in range(len(COLUMNS)):
        assert header.sectionSize(col) >= header.width_for(col, arrow=col == MEMORY), col
    width = table.viewport().width()
    for col in (CONTAINER, COMMAND):
        assert header.sectionViewportPosition(col) + header.sectionSize(col) <= width, col
    assert header.sectionSize(COMMAND) >= 100
    table.sortByColumn(CONTAINER, Qt.SortOrder.AscendingOrder)   # its arrow gets room too
    assert header.sectionSize(CONTAINER) >= header.width_for(CONTAINER)


def test_the_window_fits_a_1024x640_screen(make_window, scenario, qtbot) -> None:
    """Eight GPUs, both banners: still smaller than a 1024×600 desktop less a title bar."""
    window = make_window(banner="<b>Simulated GPUs</b> — scenario 'multi-gpu-ddp'")
    window.hint_banner.show()
    feed(window, scenario("multi-gpu-ddp"), range(0, 400, 20))
    window.show()
    settle(qtbot, window)
    assert len(window.cards.cards) == 8
    need = window.minimumSizeHint().expandedTo(window.minimumSize())
    assert need.width() <= 1024 and need.height() <= 600 - 40, need
    window.resize(1024, 560)
    window.fit_cards()
    settle(qtbot, window)
    assert window.height() <= 560
    assert window.cards.height() >= window.cards.minimumHeight() > 100   # a row of cards
    assert window.plots.memory.height() >= 90 and window.plots.bandwidth.height() >= 90


def test_a_first_start_fits_the_screen(monkeypatch) -> None:
    class Screen:
        def availableGeometry(self) -> QRect:
            return QRect(0, 0, 1024, 600)

    class Gui:
        @staticmethod
        def primaryScreen() -> Screen:
            return Screen()

        @staticmethod
        def platformName() -> str:
            return "xcb"

    monkeypatch.setattr(window_layout, "QGuiApplication", Gui)
    size = window_layout.default_size()
    assert size.width() <= 1024 and size.height() <= 600 - window_layout.TITLE_BAR


def test_a_screenshot_run_prints_no_offscreen_plugin_noise(tmp_path: Path) -> None:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(ROOT))
    env.pop("DISPLAY", None)
    out = tmp_path / "shot.png"
    run = subprocess.run([sys.executable, "-m", "gpuwatch", "gui", "--demo", "workstation",
                          "--screenshot", str(out), "--screenshot-after", "60"],
                         env=env, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    assert QImage(str(out)).width() > 0
    assert "propagateSizeHints" not in run.stderr + run.stdout, run.stderr


def test_offscreen_noise_filter_passes_other_messages(qtlog) -> None:
    from PySide6.QtCore import qWarning

    from gpuwatch.ui.screenshot import OFFSCREEN_NOISE, quiet_offscreen_noise

    with quiet_offscreen_noise():
        qWarning(OFFSCREEN_NOISE)
        qWarning("something else went wrong")
    messages = [r.message for r in qtlog.records]
    assert "something else went wrong" in messages and OFFSCREEN_NOISE not in messages


def test_the_budget_tab_at_1280x800_shows_link_and_plain_savings(make_window, scenario,
                                                                 qtbot) -> None:
    """The Link button is in view without scrolling, the ZeRO row reads as a sentence
    and "Saves" figures carry no minus sign (no double negative)."""
    from PySide6.QtCore import QPoint
    from PySide6.QtWidgets import QLabel

    window = make_window()
    window.resize(1280, 800)
    with qtbot.waitExposed(window):
        window.show()
    feed(window, scenario("workstation"), [600])
    window.tabs.setCurrentIndex(1)                              # Budget
    QApplication.processEvents()
    panel = window.budget
    button = panel.link_button
    assert button.isVisible()
    bottom = button.mapTo(window, QPoint(0, button.height())).y()
    assert bottom <= window.height()
    words = [label.text() for label in panel.findChildren(QLabel)]
    assert "sharded across" in words and not any("LoRA rank" in w and "GPUs" in w
                                                 for w in words)
    panel.recompute()
    saves = [panel.levers.topLevelItem(i).text(2)
             for i in range(panel.levers.topLevelItemCount())]
    assert saves and not any(s.startswith(("−", "-")) for s in saves)


def test_a_wide_window_gives_the_plots_the_larger_part(make_window, scenario, qtbot) -> None:
    """At 1920 px the plots take more than 60 % of the width, the card's sparkline is
    tall enough to read and the card whole, the table keeps its columns
    up to the budget whole (the name carries the script; the rest scrolls), and the
    table with one process is not stretched over empty space: the selected process's
    plot takes the height. At 1280 px the table keeps every column up to Running whole."""
    from gpuwatch.ui.live.process_texts import BUDGET, CONTAINER

    window = make_window()
    window.resize(1920, 1050)
    with qtbot.waitExposed(window):
        window.show()
    feed(window, scenario("oom-ramp"), [300])
    settle(qtbot, window)
    tabs = window.bottom.sizes()[1]
    assert window.plots.width() > 0.6 * window.width()
    widths = window.processes.default_widths()
    assert tabs >= sum(widths[:BUDGET + 1])
    table, detail = window.processes.splitter.sizes()
    assert detail > table                        # one row: the plot below has the room
    feed(window, scenario("oom-ramp"), [301])    # (the card has its width by now)
    settle(qtbot, window)
    card = window.cards.cards[0]
    assert card.spark.height() >= 36 and card.spark.width() > 400      # legible, not a hair
    assert window.cards.verticalScrollBar().maximum() == 0              # the card whole
    assert window.processes.table.height() >= 4 * window.processes.table.rowHeight(0)
    window.resize(1280, 800)
    settle(qtbot, window)
    tabs = window.bottom.sizes()[1]
    assert tabs >= sum(widths[:CONTAINER])


def test_the_link_message_fits_the_status_bar_at_1024(make_window, scenario, qtbot) -> None:
    """After linking a budget, the status bar's message is drawn whole up to the first
    permanent text (source, pace, sampling), not cut there: shortened with "…" where it
    is longer, its start (the pid) and end kept, the whole message in the bar's tooltip; and
    fitted again when the window narrows while it shows."""
    from PySide6.QtWidgets import QStatusBar

    window = make_window()
    window.resize(1280, 760)
    with qtbot.waitExposed(window):
        window.show()
    feed(window, scenario("fragmentation"), [890, 900])
    settle(qtbot, window)
    request = BudgetRequest(model="gpt2-medium", batch=32, seq=1024, precision="amp-bf16",
                            checkpointing="full", zero=2, dp=8)
    assert predict(request) is not None
    bar = window.statusBar()
    permanent = (window.status_backend, window.status_interval, window.status_state)

    def room() -> int:      # where QStatusBar draws a message: 6 px in, to 2 px before
        return min(w.x() for w in permanent if w.isVisible()) - 2 - 6

    full = f"Linked pid 66120 to {request.label}"
    for size in ((1024, 600), (1280, 760), (1024, 600)):
        window.resize(*size)
        settle(qtbot, window)
        if size == (1024, 600) and bar.currentMessage() == "":
            window.link_process((0, 66120), request)
        settle(qtbot, window)
        message = bar.currentMessage()
        assert message.startswith("Linked pid 66120 "), message
        assert bar.fontMetrics().horizontalAdvance(message) <= room(), (size, message)
        if message != full:
            assert "…" in message and message.endswith(full[-4:]), message   # start and end
            assert bar.toolTip() == full, bar.toolTip()
    window.resize(1024, 600)
    settle(qtbot, window)
    assert bar.currentMessage() != full                      # the case that went wrong
    QStatusBar.clearMessage(bar)
    assert bar.toolTip() == ""                               # gone with its message


@pytest.mark.parametrize("size", [(1024, 600), (1280, 760), (1920, 1050)])
def test_the_cards_are_whole_once_a_sparkline_grows(make_window, scenario, qtbot, tmp_path,
                                                    size) -> None:
    """Shown first, then sampled, as the app runs: a card wide enough for the 40 px
    sparkline grows after it is laid out, and the cards' row grows with it rather than
    scrolling the card's top border away (one GPU; eight on a window with room for their
    two rows)."""
    for name, whole in (("oom-ramp", True), ("multi-gpu-ddp", size[1] >= 760)):
        window = make_window(str(tmp_path / f"{name}.ini"))     # no splitter kept
        with qtbot.waitExposed(window):
            window.show()
        window.resize(*size)          # offscreen has no screen to open at this size
        backend = scenario(name)
        for t in range(300, 304):
            feed(window, backend, [t])
            settle(qtbot, window)
        bar = window.cards.verticalScrollBar()
        if whole:
            assert bar.maximum() == 0, (name, size, window.main.sizes())
        window.close()
