"""Cards by mouse and keyboard: a click focuses a GPU, a second click or Esc goes back to
all GPUs; Enter and Space click; screen readers get each card's figures; a card repaints
only when something it shows changed; the sparkline draws from the window's history."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QApplication, QWidget

from gpuwatch.ui.live.cards_view import ALL_GPUS
from tests.ui.conftest import feed, sample_at


def _shown(make_window, scenario, qtbot, name: str = "workstation", times=(300,)):
    window = make_window()
    window.resize(1280, 800)
    with qtbot.waitExposed(window):
        window.show()
    backend = scenario(name)
    feed(window, backend, times)
    qtbot.wait(30)
    QApplication.processEvents()
    return window, backend


def test_click_focuses_a_gpu_and_again_or_esc_returns_to_all(make_window, scenario,
                                                             qtbot) -> None:
    window, _ = _shown(make_window, scenario, qtbot)
    cards = window.cards
    got: list[int] = []
    cards.focus_requested.connect(got.append)
    card1 = cards.cards[1]
    qtbot.mouseClick(card1, Qt.MouseButton.LeftButton)
    assert got == [1] and card1.selected and cards.focused_gpu == 1
    assert "focused" in card1.accessibleName()
    qtbot.mouseClick(cards.cards[0].spark, Qt.MouseButton.LeftButton)  # on a child: the card
    assert got == [1, 0] and cards.cards[0].selected and not card1.selected
    qtbot.mouseClick(cards.cards[0], Qt.MouseButton.LeftButton,        # on a painted part
                     pos=cards.cards[0].used.rect.center())
    assert got == [1, 0, ALL_GPUS]
    qtbot.mouseClick(cards.cards[0], Qt.MouseButton.LeftButton)
    assert got[-1] == 0
    qtbot.mouseClick(cards.cards[0], Qt.MouseButton.LeftButton)        # again: all GPUs
    assert got[-1] == ALL_GPUS and cards.focused_gpu is None
    qtbot.mouseClick(card1, Qt.MouseButton.LeftButton)
    assert card1.selected
    card1.setFocus()
    qtbot.keyClick(card1, Qt.Key.Key_Escape)     # the window's Esc, or the view's own
    assert not card1.selected and cards.focused_gpu is None


def test_enter_and_space_click_the_focused_card(make_window, scenario, qtbot) -> None:
    window, _ = _shown(make_window, scenario, qtbot)
    card = window.cards.cards[0]
    got: list[int] = []
    window.cards.focus_requested.connect(got.append)
    assert card.focusPolicy() & Qt.FocusPolicy.TabFocus
    card.setFocus()
    qtbot.keyClick(card, Qt.Key.Key_Return)
    qtbot.keyClick(card, Qt.Key.Key_Space)
    assert got == [0, ALL_GPUS]


def test_cards_have_accessible_names_with_their_figures(make_window, scenario, qtbot,
                                                         assistive_tool) -> None:
    window, backend = _shown(make_window, scenario, qtbot)
    card = window.cards.cards[0]
    assert card.accessibleName().startswith("GPU 0 ")
    description = card.accessibleDescription()
    assert card.percent.text() in description and card.free.text() in description
    assert "GiB used" in description and "°C" in description
    before = description
    window.on_snapshot(sample_at(backend, 900))
    assert card.accessibleDescription() != before or card.percent.text() in before


def test_card_descriptions_are_worked_out_only_while_an_assistive_tool_listens(
        make_window, scenario, qtbot, monkeypatch) -> None:
    from gpuwatch.ui.live import gpu_card

    window, backend = _shown(make_window, scenario, qtbot)
    card = window.cards.cards[0]
    assert card.accessibleName().startswith("GPU 0 ")          # names always
    described: list[str] = []
    card.setAccessibleDescription = described.append
    window.on_snapshot(sample_at(backend, 900))
    assert described == []
    monkeypatch.setattr(gpu_card, "assistive_tool_listens", lambda: True)
    window.on_snapshot(sample_at(backend, 901))                 # the next sample has it
    assert described and card.percent.text() in described[-1]


class _Paints(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.widgets: list[str] = []

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint:
            self.widgets.append(type(obj).__name__)
        return False


def test_a_card_does_not_repaint_when_nothing_it_shows_changed(make_window, scenario,
                                                              qtbot) -> None:
    window, backend = _shown(make_window, scenario, qtbot, times=(300, 301))
    snap = sample_at(backend, 302)
    window.on_snapshot(snap)
    qtbot.wait(30)
    QApplication.processEvents()
    spy = _Paints()
    card = window.cards.cards[1]
    for w in [card, *card.findChildren(QWidget)]:
        w.installEventFilter(spy)
    window.cards.update_snapshot(snap, window.units, window.prefs.thresholds, {})
    qtbot.wait(30)
    QApplication.processEvents()
    assert spy.widgets == []
    window.cards.set_hint_levels(dict(window.cards._levels))     # the same levels again
    qtbot.wait(30)
    QApplication.processEvents()
    assert spy.widgets == []


def test_the_sparkline_draws_the_history_the_window_keeps(make_window, scenario,
                                                          qtbot) -> None:
    window, _ = _shown(make_window, scenario, qtbot, "oom-ramp", times=range(0, 300, 5))
    spark = window.cards.cards[0].spark
    columns = spark.columns()
    known = columns[columns >= 0]
    assert 0 < known.size <= spark.width()
    assert known[-1] < known[0]        # memory climbs: the newest point is higher (smaller y)
    assert spark.gpu_index == 0 and window.cards.history is window.history
