"""A card repaints only the parts whose content changed, and what it has painted bit by
bit, sample after sample, is exactly what a fresh paint of the same cards gives: the
window's pixels (read back from the platform's backing store) against a grab of the
view, after every sample, through lost GPUs, hints, selection and focus, at a wide and
at a compact width."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QImage, QRegion
from PySide6.QtWidgets import QApplication

from gpuwatch.core.hints import Severity
from gpuwatch.core.history import History
from gpuwatch.ui.live.cards_view import CardsView
from gpuwatch.ui.settings import Thresholds
from gpuwatch.ui.widgets import theme
from tests.ui.conftest import sample_at


@pytest.fixture(params=["plain", "light", "dark"])
def styled(request, qapp):
    """No style sheet, or the app's in either theme (the card then draws its rounded
    background itself)."""
    before = (theme.colors(), qapp.palette(), qapp.styleSheet())
    if request.param != "plain":
        qapp.setStyleSheet(theme.stylesheet(theme.apply(qapp, request.param)))
    yield request.param
    theme._current, palette, sheet = before
    qapp.setPalette(palette)
    qapp.setStyleSheet(sheet)


class _PaintRegions(QObject):
    """The regions of the card's paint events."""

    def __init__(self) -> None:
        super().__init__()
        self.regions: list[QRegion] = []

    def eventFilter(self, obj, event) -> bool:
        if event.type() == QEvent.Type.Paint:
            self.regions.append(QRegion(event.region()))
        return False


def _shown(view: CardsView) -> QImage:
    """What the window shows now: the pixels painted so far, not a new paint."""
    image = view.screen().grabWindow(view.winId()).toImage()
    return image.convertToFormat(QImage.Format.Format_RGB32)


def _fresh(view: CardsView) -> QImage:
    return view.grab().toImage().convertToFormat(QImage.Format.Format_RGB32)


def _settle(qtbot) -> None:
    qtbot.wait(5)
    QApplication.processEvents()


@pytest.mark.parametrize("width", [900, 640], ids=["wide", "compact"])
def test_cards_painted_bit_by_bit_equal_a_fresh_paint(qtbot, scenario, styled, width) -> None:
    history = History()
    view = CardsView(history=history)
    qtbot.addWidget(view)
    view.resize(width, 360)
    backend = scenario("faults")         # GPU 1 falls off the bus at 30 s, back at 90 s
    snap = sample_at(backend, 20)
    history.append(snap)
    view.update_snapshot(snap, "iec", Thresholds(), {})
    with qtbot.waitExposed(view):
        view.show()
    _settle(qtbot)
    spy = _PaintRegions()
    for card in view.cards.values():
        card.installEventFilter(spy)
    compact = [card.width() < card.COMPACT_BELOW for card in view.cards.values()]
    assert all(compact) == (width == 640) and any(compact) == (width == 640)
    mismatched = []
    for t in range(21, 100, 2):
        snap = sample_at(backend, t)
        history.append(snap)
        view.update_snapshot(snap, "iec", Thresholds(), {})
        if t == 41:
            view.set_hint_levels({0: Severity.WARNING}, {0: ("Warning: something",)})
        if t == 61:
            view.set_hint_levels({0: Severity.CRITICAL})
            view.set_focused_gpu(1)
        if t == 71:
            view.cards[0].setFocus()
        if t == 81 and styled != "plain":          # the other theme, while it runs
            app = QApplication.instance()
            other = "dark" if styled == "light" else "light"
            app.setStyleSheet(theme.stylesheet(theme.apply(app, other)))
            view.restyle()
        _settle(qtbot)
        if _shown(view) != _fresh(view):
            mismatched.append(t)
    assert mismatched == []
    assert view.cards[1].state.name == "OK" and view.cards[0].level is Severity.CRITICAL
    # the samples painted parts of the cards, not whole cards
    whole = [QRegion(card.rect()) for card in view.cards.values()]
    assert spy.regions and any(r not in whole and r.rectCount() > 1 for r in spy.regions)


def test_eight_cards_with_nvlink_painted_bit_by_bit_equal_a_fresh_paint(qtbot, scenario,
                                                                        styled) -> None:
    history = History()
    view = CardsView(history=history)
    qtbot.addWidget(view)
    view.resize(1024, 420)
    backend = scenario("multi-gpu-ddp")
    for t in range(300, 331, 3):
        snap = sample_at(backend, t)
        history.append(snap)
        view.update_snapshot(snap, "iec", Thresholds(), {})
        if t == 300:
            with qtbot.waitExposed(view):
                view.show()
        _settle(qtbot)
        assert _shown(view) == _fresh(view), t
    assert all(not card.nvlink.isHidden() for card in view.cards.values())


def test_each_painted_part_has_its_tooltip_over_its_rectangle(make_window, scenario,
                                                              qtbot) -> None:
    from PySide6.QtCore import QPoint, Qt
    from PySide6.QtGui import QHelpEvent
    from PySide6.QtWidgets import QToolTip

    from gpuwatch.ui.live import card_texts
    from tests.ui.conftest import feed

    window = make_window()
    window.resize(1280, 800)
    with qtbot.waitExposed(window):
        window.show()
    feed(window, scenario("workstation"), [300])
    _settle(qtbot)
    card = window.cards.cards[0]

    def tip_at(point: QPoint) -> str:
        QToolTip.hideText()
        event = QHelpEvent(QEvent.Type.ToolTip, point, card.mapToGlobal(point))
        QApplication.sendEvent(card, event)
        return QToolTip.text() if QToolTip.isVisible() else ""

    assert not card.busy.isHidden() and not card.pcie.isHidden()
    assert tip_at(card.busy.rect.center()).startswith(card_texts.BUSY_TIP)
    assert tip_at(card.pcie.rect.center()) == card_texts.PCIE_TIP
    assert tip_at(card.util.rect.center()) == card_texts.UTIL_TIP
    between = QPoint(card.width() // 2, 3)                 # the card's edge: no part there
    assert card.part_at(between.x(), between.y()) is None
    event = QHelpEvent(QEvent.Type.ToolTip, between, card.mapToGlobal(between))
    QApplication.sendEvent(card, event)
    assert not event.isAccepted()                         # no tooltip of its own
    qtbot.mouseMove(card, card.pcie.rect.center())
    assert card.accessibleName().startswith("GPU 0 ")
    assert card.focusPolicy() & Qt.FocusPolicy.TabFocus
