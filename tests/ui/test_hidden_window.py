"""A live window out of sight (in the tray, minimised) keeps its history and advisor but
draws nothing until it is seen again, and then shows the newest sample."""

from __future__ import annotations

from tests.ui.conftest import drawn_samples, sample_at


def test_an_unseen_window_samples_but_does_not_draw(make_window, scenario, qtbot, monkeypatch):
    window = make_window()
    window.rest_when_hidden = True
    backend = scenario("oom-ramp")
    with qtbot.waitExposed(window):
        window.show()
    drawn = drawn_samples(window, monkeypatch)
    window.on_snapshots([sample_at(backend, 10)])
    assert drawn == [1]
    window.hide()
    for t in (11, 12, 13):
        window.on_snapshots([sample_at(backend, t)])
    assert drawn == [1]                                  # nothing drawn while hidden
    assert window.samples == 4 and len(window.history.gpu(0).column("used_bytes")) == 4
    with qtbot.waitExposed(window):
        window.show()
    assert drawn == [1, 4]                               # caught up once, on the newest
    window.showMinimized()
    qtbot.waitUntil(window.isMinimized)
    window.on_snapshots([sample_at(backend, 14)])
    assert drawn == [1, 4]
    window.showNormal()
    qtbot.waitUntil(lambda: not window.isMinimized())
    assert drawn == [1, 4, 5]


def test_a_window_that_is_only_grabbed_still_draws(make_window, scenario, monkeypatch):
    window = make_window()                 # screenshots and tests: never shown
    drawn = drawn_samples(window, monkeypatch)
    window.on_snapshots([sample_at(scenario("workstation"), 10)])
    assert drawn == [1]


def test_hints_shown_while_unseen_catch_up_when_seen(make_window, scenario, qtbot, monkeypatch):
    window = make_window()
    window.rest_when_hidden = True
    backend = scenario("oom-ramp")
    shown: list[int] = []
    original = window.set_hints
    monkeypatch.setattr(window, "set_hints",
                        lambda views: (shown.append(len(views)), original(views)))
    announced: list[int] = []
    window.hint_source.hints_changed.connect(lambda hints: announced.append(len(hints)))
    with qtbot.waitExposed(window):
        window.show()
    window.on_snapshots([sample_at(backend, 10)])
    assert len(shown) == 1
    window.hide()
    for t in range(11, 600, 5):                      # the ramp fills the card: a hint opens
        window.on_snapshots([sample_at(backend, t)])
    assert len(shown) == 1                           # the panel was left alone…
    assert announced and announced[-1] >= 1          # …but the tray heard of the hint
    with qtbot.waitExposed(window):
        window.show()
    assert len(shown) == 2 and shown[-1] == len(window.hint_source.active) >= 1


def test_the_sampler_is_told_when_the_window_rests_and_when_it_is_seen_again(
        make_window, scenario, qtbot):
    """Out of sight, the host's resident sets need not be read every tick: the window
    says when it rests and, at once, when it is seen again."""
    window = make_window()
    window.rest_when_hidden = True
    told: list[bool] = []
    window.sight_changed.connect(told.append)
    backend = scenario("oom-ramp")
    with qtbot.waitExposed(window):
        window.show()
    window.on_snapshots([sample_at(backend, 10)])
    window.on_snapshots([sample_at(backend, 11)])
    assert told == [True]
    window.hide()
    window.on_snapshots([sample_at(backend, 12)])
    window.on_snapshots([sample_at(backend, 13)])
    assert told == [True, False]
    with qtbot.waitExposed(window):        # before the next sample comes
        window.show()
    assert told == [True, False, True]


def test_the_running_app_hands_the_window_s_sight_to_the_sampled_host(
        make_window, scenario):
    from gpuwatch.ui.app import SamplingSession

    backend = scenario("oom-ramp")
    told: list[bool] = []
    backend._host.set_detail = told.append         # the host the backend samples through
    window = make_window()
    SamplingSession(backend, window, 1.0)
    window.sight_changed.emit(False)
    window.sight_changed.emit(True)
    assert told == [False, True]
