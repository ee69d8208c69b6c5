"""What a card lays out: at eight cards in a 1024×640 window, in both themes, every text
stays inside its card and % used and free are its largest figures, never cut; a single
GPU's card takes the width; before the first sample the cards say they are waiting."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRect
from PySide6.QtGui import QFontMetricsF
from PySide6.QtWidgets import QApplication, QLabel, QWidget

from gpuwatch.core.hints import Severity
from gpuwatch.core.history import History
from gpuwatch.ui.live.card_badge import SeverityBadge
from gpuwatch.ui.live.card_parts import TextPart
from gpuwatch.ui.live.cards_view import WAITING, CardsView
from gpuwatch.ui.settings import Thresholds
from gpuwatch.ui.widgets import theme
from tests.ui.conftest import feed, sample_at

TEXT_TYPES = (SeverityBadge, QLabel)       # the text widgets; the rest are painted parts


def _settle(qtbot, root: QWidget | None = None) -> None:
    """Let posted layout requests run. With ``root``: until the geometry of every widget
    under it holds for two passes in a row (a fixed wait left a card mid-relayout, 262
    px wide of 256, on a loaded machine)."""
    qtbot.wait(30)
    QApplication.processEvents()
    if root is None:
        return
    last: list[QRect] = []

    def held() -> bool:
        nonlocal last
        QApplication.processEvents()
        now = [w.geometry() for w in root.findChildren(QWidget)]
        same, last = now == last, now
        return same

    qtbot.waitUntil(held, timeout=5000)


def _in_card(card: QWidget, child: QWidget) -> QRect:
    return QRect(child.mapTo(card, child.rect().topLeft()), child.size())


@pytest.fixture
def themed(qtbot):
    """Switch the application's theme for a bare cards view; put it back afterwards."""
    app = QApplication.instance()
    before = (theme.colors(), app.palette(), app.styleSheet())

    def switch(name: str) -> None:
        app.setStyleSheet(theme.stylesheet(theme.apply(app, name)))

    yield switch
    theme._current, palette, sheet = before
    app.setPalette(palette)
    app.setStyleSheet(sheet)


@pytest.mark.parametrize("theme_name", ["light", "dark"])
def test_eight_cards_at_1024_wide_keep_every_text_inside(themed, scenario, qtbot,
                                                         theme_name) -> None:
    """The cards span a 1024×640 window's width (the plots and tabs are under them)."""
    themed(theme_name)
    history = History()
    view = CardsView(history=history)
    qtbot.addWidget(view)
    view.resize(1024, 400)
    with qtbot.waitExposed(view):
        view.show()
    backend = scenario("multi-gpu-ddp")
    for t in range(300, 420, 3):      # 2 min: columns of the 10 min sparkline fill
        snap = sample_at(backend, t)
        history.append(snap)
        view.update_snapshot(snap, "iec", Thresholds(), {})
    view.set_hint_levels({3: Severity.CRITICAL, 5: Severity.WARNING},   # badges take room
                         reasons={3: "OOM in ~2 min", 5: "OOM 07:02 · pid 71310"})
    _settle(qtbot, view)
    cards = view.cards
    assert len(cards) == 8
    assert view.horizontalScrollBar().maximum() == 0          # nothing runs off the side
    for card in cards.values():
        assert card.width() <= 1024 // 4
        inside = card.rect()
        for child in card.findChildren(QWidget):
            if not isinstance(child, TEXT_TYPES) or not child.isVisibleTo(card):
                continue
            rect = _in_card(card, child)
            assert inside.contains(rect), (card.index, type(child).__name__, rect, inside)
        shown = [part for part in card.parts if not part.isHidden()]
        assert len(shown) >= 10
        for part in shown:
            assert inside.contains(part.rect), (card.index, part.text(), part.rect, inside)
        for figure in (card.percent, card.free):
            assert figure.text() and figure.text_width() <= figure.width() + 0.5, \
                (card.index, figure.text(), figure.text_width(), figure.width())
        texts = [part for part in shown if isinstance(part, TextPart)]
        biggest = max(part.runs.step for part in texts)
        assert biggest >= QFontMetricsF(card.font()).height()
        assert card.percent.font_pixel_size() > biggest
        assert card.free.font_pixel_size() > biggest
        assert not card.nvlink.isHidden() and "NVLink" in card.nvlink.text()
        assert card.title.width() >= card.title.minimumWidth() > 0   # "GPU 3" stays whole
        columns = card.spark.columns()                 # laid out after the samples came
        known = [i for i, y in enumerate(columns.tolist()) if y >= 0]
        assert columns.size == card.spark.width() - 2
        assert len(known) >= 5 and known[-1] >= columns.size - 3     # the newest at the right
    assert cards[3].badge.text() == "OOM in ~2 min"
    assert cards[3].badge.width() >= cards[3].badge.sizeHint().width()   # the reason whole
    assert cards[5].badge.text() == "OOM 07:02 · pid 71310"


def test_a_single_gpu_card_takes_the_whole_width(make_window, scenario, qtbot) -> None:
    window = make_window()
    window.resize(1280, 800)
    window.show()
    feed(window, scenario("oom-ramp"), [60])
    _settle(qtbot, window.cards)
    card = window.cards.cards[0]
    assert card.width() >= window.cards.viewport().width() - 24


def test_waiting_for_the_first_sample(make_window, scenario, qtbot) -> None:
    window = make_window()
    window.show()
    _settle(qtbot)
    assert window.cards.waiting.isVisible() and window.cards.waiting.text() == WAITING
    feed(window, scenario("workstation"), [10])
    assert window.cards.waiting.isHidden()
