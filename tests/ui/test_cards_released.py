"""A GPU the source stops listing (a cluster host gone for long) leaves no card and no
history behind, so a window over exporters that keep coming back under new names does
not grow for ever."""

from __future__ import annotations

from dataclasses import replace

from sim_support import make_scenario

from gpuwatch.core.history import History
from gpuwatch.ui.live.cards_view import CardsView
from gpuwatch.ui.settings import Thresholds


def test_cards_and_history_follow_the_listed_gpus(qtbot, open_sim) -> None:
    backend = open_sim(make_scenario(gpus=[{"name": "A", "memory_total": "80GiB"}] * 3))
    history = History(capacity=8)
    view = CardsView(history=history)
    qtbot.addWidget(view)
    snap = backend.sample()
    for listed in ((0, 1, 2), (0, 2), (2,), (0, 1, 2)):
        shown = replace(snap, gpus=tuple(g for g in snap.gpus if g.index in listed))
        history.append(shown)
        view.update_snapshot(shown, "iec", Thresholds(), {})
        assert sorted(view.cards) == sorted(history.gpus) == list(listed)


def test_the_window_lets_go_of_gpus_no_longer_listed(make_window, open_sim) -> None:
    backend = open_sim(make_scenario(gpus=[{"name": "A", "memory_total": "80GiB"}] * 3))
    window = make_window()
    snap = backend.sample()
    for step, listed in enumerate(((0, 1, 2), (0, 2), (2,), (1, 2))):
        shown = replace(snap, timestamp_s=snap.timestamp_s + step,
                        gpus=tuple(g for g in snap.gpus if g.index in listed))
        window.on_snapshot(shown)
        window.plots.refresh(force=True)
        assert sorted(window.cards.cards) == sorted(window.history.gpus) == list(listed)
        assert sorted(window.plots._mem_curves) == list(listed)    # no line holds old rows
